"""The anchor learner: rsl_rl 5.5.1's ``OnPolicyRunner``, unchanged in its maths.

redline only changes what it writes: metrics go to :class:`~redline.outputs.metrics.MetricsLog`
(``metrics.jsonl``, TensorBoard with rsl_rl's tags, a live display) and checkpoints are written atomically, with the
env steps and training seconds so far, which a resume continues. rsl_rl's runner saves no env state: a resume
continues from the checkpoint's weights with fresh env resets (and says so).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from rsl_rl.runners import OnPolicyRunner
from rsl_rl.utils.logger import Logger

from redline.errors import ExpectedExit
from redline.outputs.checkpoints import save_atomic
from redline.outputs.metrics import MetricsLog
from redline.runners.episodes import episode_key
from redline.runners.stop import SHUTDOWN, TRAINING, Stopped, StopRequest
from redline.runners.writers import Clip, log_video, purge_from, start_error
from redline.seeding.state import SEEDING_KEY, gather_seeding_state, restore_seeding_state

FRESH_RESETS_WARNING = (
    "[redline] warning: --learner rsl_rl continues from the checkpoint's weights with fresh env resets (its runner "
    "saves no env state)"
)
"""Said once when an ``rsl_rl`` run resumes from a checkpoint (the redline learner continues the envs exactly)."""

LOSS_KEYS = {"value": "value_loss", "surrogate": "surrogate_loss", "entropy": "entropy"}
"""rsl_rl's ``loss_dict`` names -> the record keys the redline learner writes for the same quantities."""


def episode_extras(ep_extras: list[dict[str, Any]]) -> dict[str, float]:
    """Mean of each ``extras["log"]`` / ``extras["episode"]`` entry over an iteration, as ``episode/<key>``."""
    sums: dict[str, list[torch.Tensor]] = {}
    for info in ep_extras:
        for key, value in info.items():
            sums.setdefault(key, []).append(torch.as_tensor(value, dtype=torch.float).reshape(-1).cpu())
    return {episode_key(key): torch.cat(vals).mean().item() for key, vals in sums.items()}


class MetricsLogger(Logger):
    """rsl_rl's logger with its console report replaced by one :class:`MetricsLog` record per iteration."""

    def __init__(self, metrics_total_iterations: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.total_iterations = metrics_total_iterations  # this attempt's (progress and ETA)
        self._t0 = time.perf_counter()
        self.wall_offset_s = 0.0  # training seconds before this attempt (a resumed run's) [s]
        self.first_iteration = 0  # the first iteration this attempt runs
        self.metrics: MetricsLog | None = None
        self.after_log: Callable[[int], None] | None = None  # called with each iteration (its update done)
        self.videos: Callable[[], Sequence[Clip]] | None = None  # the training clips finished since the last call
        self._window: list[float] = []  # returns of the episodes that finished in this iteration (up to 100 per step)
        self._counts = [0, 0]  # [episodes, of them time-outs] finished in this iteration (this rank's)

    def process_env_step(self, rewards: torch.Tensor, dones: torch.Tensor, extras: dict, *args: Any) -> None:
        super().process_env_step(rewards, dones, extras, *args)
        if self.writer is not None:
            ended = dones.reshape(-1) > 0
            time_outs = extras.get("time_outs")
            timed_out = ended & (time_outs.reshape(-1) > 0) if time_outs is not None else torch.zeros_like(ended)
            count, timed = torch.stack((ended.sum(), timed_out.sum())).tolist()  # one host read per step
            self._counts[0] += count
            self._counts[1] += timed
            finished = min(count, self.rewbuffer.maxlen or 0)
            self._window.extend(list(self.rewbuffer)[len(self.rewbuffer) - finished :])

    def init_logging_writer(self) -> None:
        logger = self.cfg.get("logger", "tensorboard")
        try:
            super().init_logging_writer()  # rsl_rl's own choice of writer from cfg["logger"]
        except Exception as exc:
            if logger == "tensorboard":
                raise
            raise start_error(logger, exc) from exc  # W&B / Neptune refused: one line, as for the redline learner
        if self.writer is not None and self.log_dir is not None:
            purge_from(self.writer, self.first_iteration)  # events an interrupted attempt logged after its checkpoint
            self.metrics = MetricsLog(Path(self.log_dir), self.total_iterations, writer=self.writer)
        self._t0 = time.perf_counter()

    def log(  # type: ignore[override]
        self,
        it: int,
        start_it: int,
        total_it: int,
        collect_time: float,
        learn_time: float,
        loss_dict: dict,
        learning_rate: float,
        action_std: torch.Tensor,
        rnd_weight: float | None,
        **_: Any,
    ) -> None:
        if self.after_log is not None:
            self.after_log(it)
        if self.metrics is None:
            return
        collection_size = self.cfg["num_steps_per_env"] * self.num_envs * self.gpu_world_size
        self.tot_timesteps += collection_size
        self.tot_time += collect_time + learn_time
        record: dict[str, Any] = {
            "iteration": it,
            "env_steps": self.tot_timesteps,
            "wall_time_s": round(self.wall_time_s, 4),
            "sps": collection_size / (collect_time + learn_time),
            "mean_reward": statistics.mean(self.rewbuffer) if self.rewbuffer else None,
            # the redline learner's statistic: episodes that finished in this iteration
            "mean_reward_window": statistics.mean(self._window) if self._window else None,
            "mean_episode_length": statistics.mean(self.lenbuffer) if self.lenbuffer else None,
            "episodes": self._counts[0],
            "time_outs": self._counts[1],
            "collect_s": collect_time,
            "learn_s": learn_time,
            "lr": learning_rate,
            "action_std": action_std.mean().item(),
        }
        record.update({LOSS_KEYS.get(k, f"loss/{k}"): float(v) for k, v in loss_dict.items()})
        record.update(episode_extras(self.ep_extras))
        self.ep_extras.clear()
        self._window.clear()
        self._counts = [0, 0]
        self.metrics.write(record)
        for clip in self.videos() if self.videos is not None else []:
            log_video(self.writer, clip, it)

    @property
    def wall_time_s(self) -> float:
        """Training seconds so far, including those before a resume [s]."""
        return self.wall_offset_s + time.perf_counter() - self._t0

    def stop_logging_writer(self) -> None:
        super().stop_logging_writer()
        if self.metrics is not None:
            self.metrics.close()


class RslRlRunner(OnPolicyRunner):
    """``OnPolicyRunner`` that logs through :class:`MetricsLogger` and saves checkpoints atomically.

    The log writer is rsl_rl's own choice from ``train_cfg["logger"]`` (TensorBoard, W&B, Neptune); ``videos``
    returns the training clips finished since its last call, logged after each iteration.
    """

    def __init__(
        self,
        env: Any,
        train_cfg: dict,
        log_dir: str | None,
        device: str,
        videos: Callable[[], Sequence[Clip]] | None = None,
    ) -> None:
        super().__init__(env, train_cfg, log_dir=log_dir, device=device)
        self.logger = MetricsLogger(
            metrics_total_iterations=int(train_cfg["max_iterations"]),
            log_dir=log_dir,
            cfg=self.cfg,
            env_cfg=self.env.cfg,
            num_envs=self.env.num_envs,
            is_distributed=self.is_distributed,
            gpu_world_size=self.gpu_world_size,
            gpu_global_rank=self.gpu_global_rank,
            device=self.device,
        )
        self.logger.videos = videos
        self._stop: StopRequest | None = None

    def stop_on(self, stop: StopRequest | None) -> None:
        """Poll ``stop`` after every iteration: once a signal set it, save that iteration and raise
        :class:`~redline.runners.stop.Stopped` (each rank on its own: rsl_rl's NCCL-only multi-GPU path is not
        coordinated here; torchrun forwards SIGTERM to every worker)."""

        self._stop = stop

        def after(it: int) -> None:
            if stop is None or stop.signum is None:
                return
            log_dir = self.logger.log_dir if self.logger.writer is not None else None
            path = None if log_dir is None else Path(log_dir) / f"model_{it}.pt"
            if path is not None:
                self.current_learning_iteration = it
                self.save(str(path))
            raise Stopped(stop.signum, it, path)

        self.logger.after_log = after

    def learn(self, num_learning_iterations: int, init_at_random_ep_len: bool = False) -> None:
        """rsl_rl's ``learn``; a :class:`~redline.runners.stop.Stopped` or an unwritable output still closes the
        logs."""
        stop = self._stop
        self.logger.first_iteration = self.current_learning_iteration
        self.logger.total_iterations = num_learning_iterations
        if stop is not None:
            stop.enter(TRAINING)
        try:
            super().learn(num_learning_iterations, init_at_random_ep_len=init_at_random_ep_len)
        except ExpectedExit:
            self.logger.stop_logging_writer()
            raise
        finally:
            if stop is not None:
                stop.enter(SHUTDOWN)

    def resume(self, checkpoint: dict[str, Any]) -> None:
        """Load a checkpoint's models, optimizer and seeding counters; training continues at its iteration + 1
        (rsl_rl's own ``load`` restarts at the saved iteration and overwrites its checkpoint), its env steps and
        training seconds where the checkpoint left them, and its envs from fresh resets (:data:`FRESH_RESETS_WARNING`).
        A checkpoint without ``env_steps`` (from before they were saved) counts every earlier iteration's steps."""
        self.alg.load(checkpoint, None, strict=True)
        iteration = int(checkpoint["iter"])
        self.current_learning_iteration = iteration + 1
        restore_seeding_state(checkpoint, self.env)
        collection_size = self.cfg["num_steps_per_env"] * self.env.num_envs * self.gpu_world_size
        self.logger.tot_timesteps = int(checkpoint.get("env_steps", (iteration + 1) * collection_size))
        self.logger.wall_offset_s = float(checkpoint.get("wall_time_s", 0.0))
        if not self.logger.disable_logs:
            print(FRESH_RESETS_WARNING, file=sys.stderr, flush=True)

    def save(self, path: str, infos: dict | None = None) -> None:
        saved = self.alg.save()
        saved["iter"] = self.current_learning_iteration
        saved["infos"] = infos
        saved["env_steps"], saved["wall_time_s"] = self.logger.tot_timesteps, self.logger.wall_time_s
        seeding = gather_seeding_state(self.env)
        if seeding is not None:
            saved[SEEDING_KEY] = seeding
        save_atomic(saved, path)
        self.logger.save_model(path, self.current_learning_iteration)

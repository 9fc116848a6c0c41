"""The redline runner's per-iteration record: time split, learner FLOPs and verdict, GPU use, episodes, losses.

:class:`IterationLogger` owns everything a run writes besides checkpoints (``metrics.jsonl`` through
:class:`~redline.outputs.metrics.MetricsLog`, the log writer that the ``logger`` setting chooses, training clips, the
NVML sampler), so the runner's ``learn`` stays a readable loop, as rsl_rl hands its logging to
``rsl_rl.utils.logger.Logger``. Keys are listed in :mod:`redline.outputs.metrics`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from redline.learning import PPO
from redline.learning.precision import cpu_bf16_pays
from redline.learning.rollout import PhaseTimes
from redline.learning.sac import SAC
from redline.outputs.metrics import MetricsLog, warn_once
from redline.runners.writers import Clip, log_video, open_writer, purge_from
from redline.telemetry.flops import iteration_flops, layer_sizes, peak_tflops, sac_iteration_flops
from redline.telemetry.gpu_monitor import GpuMonitor
from redline.telemetry.stragglers import RANK_KEYS, straggler
from redline.telemetry.verdict import verdict


@dataclasses.dataclass(frozen=True)
class CommStats:
    """An iteration's data-parallel collectives (all zero in a single process)."""

    calls: int = 0
    """Collectives issued during the rollout's returns and the update."""
    gae_s: float = 0.0
    """Seconds inside collectives during the returns (global normaliser statistics) [s]."""
    update_s: float = 0.0
    """Seconds inside collectives during the update (gradient all-reduce) [s]."""


LEARNER_KEYS = (
    "surrogate_loss",
    "value_loss",
    "entropy",
    "kl",
    "lr",
    "skipped_steps",
    "clip_fraction",
    "explained_variance",
    "first_ratio_dev",
)
"""Learner metrics (0-dim device tensors from :meth:`PPO.update`) copied into each record under the same names; the
SAC learner's record holds its own (:meth:`SAC.update`'s, ``action_std`` among them)."""


class IterationLogger:
    """Builds one record per iteration and writes it; a no-op writer on ranks that write no files.

    Args:
        run_dir: the run folder (None: nothing is written, e.g. ranks other than 0, or the benches).
        alg: the learner (its networks size the FLOP model, its precision names the peak).
        num_envs: this rank's envs.
        num_iterations: iterations this ``learn`` call runs (progress and ETA).
        env_steps: env steps (all ranks) done before this call, e.g. by the run a resume continues.
        wall_time_s: training seconds before this call [s].
        train_cfg: rsl_rl's runner config, whose ``logger`` chooses the log writer
            (:func:`~redline.runners.writers.open_writer`); None: TensorBoard.
        env_cfg: the env config (uploaded to W&B / Neptune with ``train_cfg``).
        first_iteration: the first iteration this call runs: the log writer's events of it and after, left in the
            run folder by an interrupted attempt, are dropped (:func:`~redline.runners.writers.purge_from`).
    """

    def __init__(
        self,
        run_dir: Path | None,
        alg: PPO | SAC,
        num_envs: int,
        num_iterations: int,
        env_steps: int = 0,
        wall_time_s: float = 0.0,
        train_cfg: dict | None = None,
        env_cfg: Any = None,
        first_iteration: int = 0,
    ) -> None:
        self.alg = alg
        self.env_steps = env_steps
        """Env steps (all envs, all ranks) so far."""
        self._steps_per_iteration = alg.cfg.num_steps_per_env * alg.global_num_envs
        self._wall_offset = wall_time_s
        self._t_start = time.perf_counter()
        self._logging_s = 0.0
        self._t_logged: float | None = None
        self._t_iteration = (time.perf_counter(), time.process_time())  # wall and CPU clocks at the iteration's start
        self._flops: int | None = None  # PPO: the same every iteration; SAC: per iteration (_sac_flops)
        self._gradient_steps = 0  # SAC: the learner's gradient steps at the last record
        self._sac_sizes: tuple[list[int], list[int]] = ([], [])  # SAC: the actor's and one Q network's widths
        if isinstance(alg, PPO):
            sizes = (layer_sizes(alg.actor.mlp), layer_sizes(alg.critic.mlp))
            self._flops = iteration_flops(
                *sizes,
                alg.cfg.num_steps_per_env * num_envs,  # this rank's learner work
                alg.cfg.num_learning_epochs,
            )
        else:
            self._gradient_steps = alg.gradient_steps
            self._sac_sizes = sizes = (layer_sizes(alg.actor.mlp), layer_sizes(alg.critic.qs[0]))
        device = torch.device(alg.device)
        self._device_type = device.type
        widest = max((w for net in sizes for w in net[1:-1]), default=0)  # the hidden layers' [units]
        self._cpu_bf16 = cpu_bf16_pays(widest) if device.type == "cpu" else None  # for the verdict's bf16 advice
        self._peak = (
            peak_tflops(
                torch.cuda.get_device_name(device), alg.precision.is_bf16, torch.backends.cuda.matmul.allow_tf32
            )
            if device.type == "cuda"
            else None
        )
        self._writer: Any = None
        self._metrics: MetricsLog | None = None
        self._monitor: GpuMonitor | None = None
        if run_dir is not None:
            self._writer = open_writer(run_dir, train_cfg, env_cfg)
            purge_from(self._writer, first_iteration)
            self._metrics = MetricsLog(run_dir, num_iterations, writer=self._writer)
            self._monitor = GpuMonitor(str(device))  # NVML thread; a no-op without a GPU

    def start_iteration(self) -> None:
        """Mark the end of the previous iteration's logging and saving (its time is charged to the next record)."""
        if self._t_logged is not None:
            self._logging_s = time.perf_counter() - self._t_logged
        self._t_iteration = (time.perf_counter(), time.process_time())

    def record(
        self,
        iteration: int,
        times: PhaseTimes,
        comm: CommStats,
        learner: dict[str, torch.Tensor],
        episodes: dict[str, Any],
    ) -> None:
        """Write iteration ``iteration``'s record.

        Args:
            iteration: the iteration just finished.
            times: its phases (``collect`` around the rollout, ``env``, ``gae``, ``update``).
            comm: the collectives inside the rollout's returns and inside the update.
            learner: :meth:`PPO.update`'s metrics.
            episodes: :meth:`~redline.runners.episodes.EpisodeTracker.read`'s means.
        """
        self.env_steps += self._steps_per_iteration
        self._t_logged = time.perf_counter()
        comm_gae_s, comm_update_s = comm.gae_s, comm.update_s
        split = {
            "env_s": times["env"],
            "inference_s": times["collect"] - times["env"] - times["gae"],
            "gae_s": times["gae"] - comm_gae_s,
            "update_s": times["update"] - comm_update_s,
            "allreduce_s": comm_gae_s + comm_update_s,
            "logging_s": self._logging_s,
        }
        ranks = self._gather_ranks(split)  # a collective: every rank takes part, rank 0 keeps the figures
        if self._metrics is None:
            return
        learner_s = max(split["inference_s"] + split["gae_s"] + split["update_s"], 1e-12)
        flops = self._flops if isinstance(self.alg, PPO) else self._sac_flops()
        gflops = None if flops is None else flops / 1e9 / learner_s
        gpu = self._monitor.read() if self._monitor is not None else {"gpu_util": None, "gpu_mem_gb": None}
        bottleneck, action = verdict(
            split,
            device_type=self._device_type,
            precision=self.alg.precision.mode,
            gflops=gflops,
            peak=self._peak,
            gpu_util=gpu["gpu_util"],
            cpu_bf16=self._cpu_bf16,
            algorithm="ppo" if isinstance(self.alg, PPO) else "sac",
        )
        alg = self.alg
        keys = LEARNER_KEYS if isinstance(alg, PPO) else tuple(k for k in learner if k != "action_std")
        std = alg.action_std().mean() if isinstance(alg, PPO) else learner["action_std"]
        values = torch.stack([learner[k].float().reshape(()) for k in keys] + [std.float().reshape(())])
        if ranks is not None:  # the ranks' figures come back in the same host transfer as the learner's metrics
            values = torch.cat([values, ranks.to(values.device, torch.float32).reshape(-1)])
        read = values.tolist()
        learner_values, action_std = read[: len(keys)], read[len(keys)]
        flat = read[len(keys) + 1 :]  # (world_size x RANK_KEYS) in a multi-process run, else empty
        per_rank = [
            dict(zip(RANK_KEYS, flat[i : i + len(RANK_KEYS)], strict=True)) for i in range(0, len(flat), len(RANK_KEYS))
        ]
        iteration_s = times["collect"] + times["update"] + self._logging_s
        record: dict[str, Any] = {
            "iteration": iteration,
            "env_steps": self.env_steps,
            "wall_time_s": round(self.wall_time_s, 4),
            "sps": self._steps_per_iteration / iteration_s,
            **episodes,
            "collect_s": times["collect"],
            "learn_s": times["update"],
            **split,
            "learner_gflops": gflops,
            "mfu": None if self._peak is None or gflops is None else gflops / (self._peak * 1e3),
            **gpu,
            "bottleneck": bottleneck,
            "next_action": action,
            "precision": self.alg.precision.mode,
            "capture": alg.capture_plan.kind,
            "world_size": self.alg.comm.world_size,
            "collectives": comm.calls,  # per iteration; 0 in a single process
            "action_std": action_std,
        }
        if per_rank:
            record["ranks"] = [{k: round(v, 4) for k, v in r.items()} for r in per_rank]
            cpu_threads = torch.get_num_threads() if self._device_type == "cpu" else None  # the process's core share
            record["straggler"] = straggler(per_rank, cpu_threads)
        for key, value in zip(keys, learner_values, strict=True):  # SAC's mean_reward is per step: not the episodes'
            record[key if key not in record else f"learner/{key}"] = value
        self._metrics.write(record)

    def _sac_flops(self) -> int:
        """This rank's SAC FLOPs since the last record (:func:`~redline.telemetry.flops.sac_iteration_flops`), from
        the learner's host counter of gradient steps (none before ``learning_starts``)."""
        alg = self.alg
        assert isinstance(alg, SAC)
        first, end = self._gradient_steps, alg.gradient_steps
        self._gradient_steps = end
        every = alg.cfg.policy_frequency
        policy_steps = -(-end // every) - -(-first // every)  # the steps k in [first, end) with k % every == 0
        batch = int(alg.replay.local_plan(alg.cfg.batch_size)[0].shape[0])  # this rank's share of the minibatch
        acted = alg.cfg.num_steps_per_env * alg.num_envs
        return sac_iteration_flops(*self._sac_sizes, acted, batch, end - first, policy_steps)

    def _gather_ranks(self, split: dict[str, float]) -> torch.Tensor | None:
        """Every rank's :data:`~redline.telemetry.stragglers.RANK_KEYS` of this iteration, ``(world_size, 6)`` on
        the communicator's device (one all-gather; None in a single process). The update's figure includes the
        returns (GAE)."""
        comm = self.alg.comm
        if not comm.distributed:
            return None
        wall, cpu = self._t_iteration
        mine = [
            split["env_s"],
            split["inference_s"],
            split["gae_s"] + split["update_s"],
            split["allreduce_s"],
            time.process_time() - cpu,
            time.perf_counter() - wall,
        ]
        return comm.all_gather(torch.tensor(mine, dtype=torch.float64, device=comm.device))

    def videos(self, clips: Sequence[Clip], iteration: int) -> None:
        """Log training clips that finished during ``iteration`` (:func:`~redline.runners.writers.log_video`); a
        writer that cannot take them is said once and skipped (videos are not essential)."""
        if self._writer is None:
            return
        for clip in clips:
            try:
                log_video(self._writer, clip, iteration)
            except OSError as exc:
                warn_once("video logging", clip.path, exc)
                return

    def saved(self, path: Path, iteration: int) -> None:
        """A checkpoint was written: upload it when the writer is a service's (rsl_rl's ``Logger.save_model``)."""
        # heavy: rsl_rl's utils load its log writers (seconds)
        from rsl_rl.utils import LogWriter

        if isinstance(self._writer, LogWriter):
            self._writer.save_model(str(path), iteration)

    @property
    def wall_time_s(self) -> float:
        """Training seconds so far, including those before a resume [s]."""
        return self._wall_offset + time.perf_counter() - self._t_start

    def close(self) -> None:
        """Stop the sampler, close ``metrics.jsonl`` and the log writer (a writer failing to flush is said once)."""
        if self._monitor is not None:
            self._monitor.close()
        if self._metrics is not None:
            self._metrics.close()
        if self._writer is not None:
            # heavy: rsl_rl's utils load its log writers (seconds)
            from rsl_rl.utils import LogWriter

            try:
                if isinstance(self._writer, LogWriter):
                    self._writer.stop()  # finish the W&B / Neptune run
                self._writer.close()
            except OSError as exc:
                warn_once("TensorBoard events", self._metrics.path.parent if self._metrics else "", exc)

"""The redline learner driven over an Isaac Lab env: timing, per-iteration metrics, atomic checkpoints.

The hot loop reads nothing from the device: episode statistics and the learner's metrics stay on the device
and are read once at the end of each iteration (one ``tolist``), together with the NaN guard's counters.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch

from redline.errors import UserError
from redline.learning import PPO, PPOConfig
from redline.learning.distributed import Communicator
from redline.runners.episodes import EpisodeTracker, randomize_episode_lengths
from redline.runs.checkpoints import (
    SEEDING_KEY,
    env_streams,
    gather_seeding_state,
    restore_seeding_state,
    save_atomic,
)
from redline.runs.metrics import MetricsLog
from redline.seeding import Domain, Strategy
from redline.telemetry.gpu_monitor import GpuMonitor
from redline.telemetry.profiler import IterationProfiler
from redline.telemetry.verdict import iteration_flops, layer_sizes, peak_tflops, verdict

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
"""Learner metrics copied into each ``metrics.jsonl`` record under the same names."""


class RedlineRunner:
    """Trains :class:`redline.learning.PPO` on an rsl_rl-style vec env (Isaac Lab's ``RslRlVecEnvWrapper``).

    Args:
        env: the wrapped env (``get_observations``, ``step``, ``num_envs``, ``num_actions``, ``device``).
        cfg: the learner's hyper-parameters.
        run_dir: where checkpoints and ``metrics.jsonl`` go (None: no files, e.g. for play).
        device: where the learner lives.
        seed: seed of the learner's own generator (action noise, minibatch order).
        save_interval: save ``model_<it>.pt`` every this many iterations (and after the last).
        comm: data-parallel communicator (None: one process). Every rank runs a runner; only the one given a
            ``run_dir`` (rank 0) writes files, but all take part in the checkpoints' collectives.
    """

    def __init__(
        self,
        env: Any,
        cfg: PPOConfig,
        run_dir: Path | None,
        device: str,
        seed: int,
        save_interval: int = 50,
        comm: Communicator | None = None,
    ) -> None:
        self.env = env
        self.cfg = cfg
        self.run_dir = run_dir
        self.device = device
        self.save_interval = save_interval
        self.comm = comm if comm is not None else Communicator(device=device)
        cuda = torch.device(device).type == "cuda"
        with torch.random.fork_rng(devices=[torch.device(device)] if cuda else [], device_type="cuda"):
            torch.manual_seed(seed)  # initial weights depend on the seed only, not on what the env drew before
            self.alg = PPO.from_env(env, cfg, device=device, seed=seed, comm=self.comm)
        self.iteration = -1  # the last finished iteration
        streams = env_streams(env)
        if streams is not None and int(streams.global_ids[0]) != self.alg.env_offset:
            raise UserError(
                f"seeding.env_id_offset: {int(streams.global_ids[0])} but this rank's first global env is "
                f"{self.alg.env_offset} (ranks must run the same --num_envs)"
            )
        if streams is not None and streams.strategy is not Strategy.SHARED:
            # action noise from each env's own stream: a pure function of (seed, global env id, episode, step)
            shape = (env.num_actions,)
            self.alg.action_noise = lambda: streams.normal(None, shape, domain=Domain.POLICY)

    def learn(self, num_iterations: int, profile: bool = False, init_at_random_ep_len: bool = False) -> None:
        """Run ``num_iterations`` iterations after :attr:`iteration`; with ``profile`` (and a run folder), write a
        torch.profiler Chrome trace of one of them to ``<run_dir>/profile/trace.json``; with
        ``init_at_random_ep_len`` first start every env at a random step of its episode, as rsl_rl's ``learn``
        (:func:`~redline.runners.episodes.randomize_episode_lengths`)."""
        env, alg = self.env, self.alg
        if init_at_random_ep_len:
            randomize_episode_lengths(env)
        writer = None
        if self.run_dir is not None:
            from torch.utils.tensorboard import SummaryWriter

            writer = SummaryWriter(log_dir=str(self.run_dir), flush_secs=10)
        metrics = MetricsLog(self.run_dir, num_iterations, writer=writer) if self.run_dir is not None else None
        monitor = GpuMonitor(self.device) if metrics is not None else None  # NVML thread; no-op without a GPU
        tracker = EpisodeTracker(env.num_envs, env.device)
        steps_per_iteration = self.cfg.num_steps_per_env * alg.global_num_envs  # over all ranks
        obs = env.get_observations()
        t_start = time.perf_counter()
        env_steps = 0
        first = self.iteration + 1
        flops = iteration_flops(
            layer_sizes(alg.actor.mlp),
            layer_sizes(alg.critic.mlp),
            self.cfg.num_steps_per_env * env.num_envs,  # this rank's learner work
            self.cfg.num_learning_epochs,
        )
        device = torch.device(self.device)
        peak = peak_tflops(torch.cuda.get_device_name(device), alg.precision.is_bf16) if device.type == "cuda" else None
        logging_s = 0.0
        profiler = None
        if profile and self.run_dir is not None:
            profiler = IterationProfiler.for_run(self.run_dir, first, num_iterations, self.device)
        try:
            for it in range(first, first + num_iterations):
                if profiler is not None:
                    profiler.start(it)
                # host timers around each phase; on CUDA they see launch time, and the update's read syncs
                self.comm.take_stats()  # the last iteration's episode-stats and checkpoint collectives: logging
                t0 = time.perf_counter()
                env_s = 0.0
                with torch.inference_mode():
                    for _ in range(self.cfg.num_steps_per_env):
                        actions = alg.act(obs)
                        s0 = time.perf_counter()
                        obs, rewards, dones, extras = env.step(actions.to(env.device))
                        env_s += time.perf_counter() - s0
                        alg.process_env_step(rewards, dones, extras)
                        tracker.step(rewards, dones, extras.get("log"))
                    tg = time.perf_counter()
                    alg.compute_returns(obs)
                t1 = time.perf_counter()
                gae_calls, comm_gae_s = self.comm.take_stats()
                learner = alg.update()  # reads the NaN guard's counters: the iteration's sync point
                t2 = time.perf_counter()
                update_calls, comm_update_s = self.comm.take_stats()
                if profiler is not None:
                    profiler.stop(it)  # exporting the trace counts as logging time (next record)
                self.iteration = it
                env_steps += steps_per_iteration
                split = {
                    "env_s": env_s,
                    "inference_s": tg - t0 - env_s,
                    "gae_s": t1 - tg - comm_gae_s,
                    "update_s": t2 - t1 - comm_update_s,
                    "allreduce_s": comm_gae_s + comm_update_s,
                    "logging_s": logging_s,
                }
                gflops = flops / 1e9 / (split["inference_s"] + split["gae_s"] + split["update_s"])
                gpu = monitor.read() if monitor is not None else {"gpu_util": None, "gpu_mem_gb": None}
                bottleneck, action = verdict(
                    split,
                    device_type=device.type,
                    precision=alg.precision.mode,
                    gflops=gflops,
                    peak=peak,
                    gpu_util=gpu["gpu_util"],
                )
                episodes = tracker.read(self.comm)  # over all ranks' envs (a collective: every rank reads)
                if metrics is not None:
                    values = torch.stack([learner[k].float().reshape(()) for k in LEARNER_KEYS]).tolist()
                    record: dict[str, Any] = {
                        "iteration": it,
                        "env_steps": env_steps,
                        "wall_time_s": round(time.perf_counter() - t_start, 4),
                        "sps": steps_per_iteration / (t2 - t0 + logging_s),
                        **episodes,
                        "collect_s": t1 - t0,
                        "learn_s": t2 - t1,
                        **split,
                        "learner_gflops": gflops,
                        "mfu": None if peak is None else gflops / (peak * 1e3),
                        **gpu,
                        "bottleneck": bottleneck,
                        "next_action": action,
                        "precision": alg.precision.mode,
                        "world_size": self.comm.world_size,
                        "collectives": gae_calls + update_calls,  # per iteration; 0 in a single process
                    }
                    record.update(zip(LEARNER_KEYS, values, strict=True))
                    metrics.write(record)
                last = it == first + num_iterations - 1
                if it % self.save_interval == 0 or last:
                    self.save(None if self.run_dir is None else self.run_dir / f"model_{it}.pt")
                logging_s = time.perf_counter() - t2  # metrics and checkpoint writing, charged to the next record
        finally:
            if monitor is not None:
                monitor.close()
            if metrics is not None:
                metrics.close()
            if writer is not None:
                writer.close()

    def save(self, path: Path | None) -> None:
        """Atomically write a checkpoint with rsl_rl's keys (Isaac Lab's stock play loads it) plus redline's.

        In a multi-process run every rank calls this (with ``path=None`` on ranks that write nothing): the ranks'
        parameters are checked to be identical and the per-env seeding counters of all ranks are gathered, so the
        checkpoint resumes on any number of ranks with the same global env count.
        """
        self.alg.check_replicas()
        seeding = gather_seeding_state(self.env, self.comm)
        if path is None:
            return
        state = self.alg.state_dict()
        state["iter"] = self.iteration
        state["infos"] = None
        state["world_size"] = self.comm.world_size
        if seeding is not None:
            state[SEEDING_KEY] = seeding
        os.makedirs(path.parent, exist_ok=True)
        save_atomic(state, path)

    def load(self, checkpoint: dict[str, Any]) -> None:
        """Restore a checkpoint (from :func:`~redline.runs.checkpoints.load_checkpoint`); training continues
        at the iteration after the saved one."""
        self.alg.load_state_dict(checkpoint)
        self.iteration = int(checkpoint["iter"])
        restore_seeding_state(checkpoint, self.env)

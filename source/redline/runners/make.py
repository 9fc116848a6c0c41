"""Choosing the learner: either runner behind the same two calls, so ``redline train`` has one path for both."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from redline.learning.distributed import Communicator
from redline.runners.redline_runner import RedlineRunner
from redline.runners.rsl_rl_runner import RslRlRunner
from redline.runners.stop import StopRequest
from redline.runners.writers import Clip

LEARNERS = ("redline", "rsl_rl")
"""Selectable learners: ``redline`` (:mod:`redline.learning`) and ``rsl_rl`` (rsl_rl 5.5.1's OnPolicyRunner, the
anchor redline is measured against)."""


class Runner(Protocol):
    """What ``redline train`` calls on a learner's runner."""

    def restore(self, checkpoint: dict[str, Any]) -> None:
        """Load a checkpoint (:func:`redline.outputs.checkpoints.load_checkpoint`); training continues at its
        iteration + 1."""

    def learn(self, num_iterations: int, init_at_random_ep_len: bool, stop: StopRequest) -> None:
        """Train ``num_iterations`` iterations, polling ``stop`` after each."""


@dataclasses.dataclass(frozen=True)
class RunnerRequest:
    """What either runner is built from."""

    train_cfg: dict
    """rsl_rl's runner config (``runner_cfg_dict(agent_cfg)``)."""
    run_dir: Path | None
    """Where checkpoints and logs go (None: a rank that writes no files)."""
    device: str
    """Where the learner lives."""
    seed: int
    """The run's seed (:func:`redline.seeding.plan.seed_plan`)."""
    save_interval: int
    """Save ``model_<it>.pt`` every this many iterations (and after the last)."""
    learner_cfg: Any = None
    """The redline learner's :class:`~redline.learning.PPOConfig` (None for rsl_rl)."""
    dist_timeout_s: float | None = None
    """Process-group timeout [s] of a multi-process run (None: one process)."""
    profile: bool = False
    """redline learner: a Chrome trace of one iteration (:class:`~redline.telemetry.profiler.IterationProfiler`)."""
    videos: Callable[[], Sequence[Clip]] | None = None
    """The training clips finished since the last call, logged after each iteration (None: no videos)."""


def make_runner(learner: str, env: Any, request: RunnerRequest) -> Runner:
    """The runner of ``learner`` (one of :data:`LEARNERS`) over the wrapped env ``env``."""
    if learner == "rsl_rl":
        return _RslRl(env, request)
    return _Redline(env, request)


class _Redline:
    """:class:`~redline.runners.redline_runner.RedlineRunner` behind :class:`Runner`."""

    def __init__(self, env: Any, request: RunnerRequest) -> None:
        timeout = request.dist_timeout_s
        comm = None if timeout is None else Communicator.from_process_group(request.device, timeout)
        self.runner = RedlineRunner(
            env,
            request.learner_cfg,
            request.run_dir,
            request.device,
            request.seed,
            request.save_interval,
            comm=comm,
            train_cfg=request.train_cfg,
        )
        self.request = request

    def restore(self, checkpoint: dict[str, Any]) -> None:
        self.runner.load(checkpoint)

    def learn(self, num_iterations: int, init_at_random_ep_len: bool, stop: StopRequest) -> None:
        self.runner.learn(
            num_iterations,
            profile=self.request.profile,
            init_at_random_ep_len=init_at_random_ep_len,
            stop=stop,
            videos=self.request.videos,
        )


class _RslRl:
    """:class:`~redline.runners.rsl_rl_runner.RslRlRunner` behind :class:`Runner` (its own multi-GPU setup)."""

    def __init__(self, env: Any, request: RunnerRequest) -> None:
        log_dir = str(request.run_dir) if request.run_dir is not None else None
        self.runner = RslRlRunner(env, request.train_cfg, log_dir=log_dir, device=request.device, videos=request.videos)

    def restore(self, checkpoint: dict[str, Any]) -> None:
        self.runner.resume(checkpoint)

    def learn(self, num_iterations: int, init_at_random_ep_len: bool, stop: StopRequest) -> None:
        self.runner.stop_on(stop)
        self.runner.learn(num_iterations, init_at_random_ep_len=init_at_random_ep_len)

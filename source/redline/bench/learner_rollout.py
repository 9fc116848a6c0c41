"""``redline bench learner --rollout``: the learners' own time per env step while collecting, side by side.

A rollout's time is the env's steps plus the learner's loop body around them: sampling the actions (policy and value
inference, the observation normaliser, the noise draw), writing the storage, and the episode bookkeeping (rsl_rl's
NaN check and device moves too). Only the second part differs between learners, so it is what is measured here: each
learner collects from its own synthetic env (:class:`~redline.bench.shapes.DummyVecEnv`, per-env streams as a
redline task has, Isaac Lab's ``extras["log"]`` terms on reset steps where the task has them) at a task's shape, the
env's ``step`` is timed and taken out, and the rest is divided by the env steps. The bootstrap and returns after the
rollout are shown apart (per iteration); the update is not run (each rollout starts from a cleared storage, the same
weights).

rsl_rl's side is ``OnPolicyRunner.learn``'s rollout body (act, step, ``check_nan``, ``.to(device)``,
``process_env_step``, its logger's ``process_env_step`` with a writer, so that its episode buffers fill as in a run)
and, once per iteration, the episode means its logger reports. redline's is :class:`~redline.runners.redline_runner.
RedlineRunner`'s (the learner's ``act`` with the per-env Philox noise, ``process_env_step``, the episode tracker)
and the tracker's one ``read`` per iteration. The two alternate, an iteration each, after a warm-up iteration each;
a second, instrumented pass splits each learner's time into its parts.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from redline.bench.shapes import TASK_SHAPES, DummyVecEnv, rsl_rl_cfg
from redline.learning import PPO, PPOConfig
from redline.learning.rollout import collect_rollout
from redline.runners.episodes import EpisodeTracker
from redline.runners.rsl_rl_runner import episode_extras
from redline.seeding.plan import bind_action_noise

PARTS = ("inference", "normaliser", "noise", "storage", "bookkeeping")
"""The parts of a learner's time per env step (``normaliser`` and ``noise`` are not counted in ``inference``;
``bookkeeping`` is the episode statistics, per step and per iteration, and rsl_rl's NaN check and device moves)."""


class Clock:
    """Adds up seconds under names; :meth:`wrap` times every call of a function."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self(name):
                return fn(*args, **kwargs)

        return timed

    def take(self) -> dict[str, float]:
        out, self.seconds = self.seconds, {}
        return out


class Side:
    """One learner's rollout at a shape: :meth:`iteration` collects ``steps`` env steps and the returns, and answers
    the seconds outside ``env.step`` per env step and the returns' seconds."""

    def __init__(self, shape: dict[str, Any], seed: int) -> None:
        self.shape = shape
        self.clock = Clock()
        self.env = DummyVecEnv(
            shape["num_envs"],
            shape["num_obs"],
            shape["num_actions"],
            max_episode_length=shape["episode"],
            seed=seed,
            per_env_seed=seed,
            log_terms=shape["log_terms"],
        )
        self.env.unwrapped = self.env  # type: ignore[attr-defined]  # where a redline task's streams are found
        lengths = torch.Generator().manual_seed(seed)  # random initial episode lengths, as both runners start
        self.env.episode_length_buf = torch.randint(shape["episode"], (shape["num_envs"],), generator=lengths)
        self.env.step = self.clock.wrap("env", self.env.step)  # type: ignore[method-assign]
        self.obs = self.env.get_observations()
        self.parts: dict[str, Callable[..., Any]] = {}  # instrumented callables, swapped in for the split pass

    def loop(self) -> None:
        """One rollout and its returns (then the storage is cleared for the next)."""
        raise NotImplementedError

    def instrument(self) -> None:
        """Swap in timed versions of the parts (:data:`PARTS`)."""
        raise NotImplementedError

    def iteration(self) -> tuple[float, float, dict[str, float]]:
        """One :meth:`loop`: seconds per env step outside the env and the returns, the returns' seconds, and the
        seconds under each name of the clock."""
        self.clock.take()
        start = time.perf_counter()
        self.loop()
        total = time.perf_counter() - start
        seconds = self.clock.take()
        returns = seconds.get("returns", 0.0)
        return (total - seconds.get("env", 0.0) - returns) / self.shape["steps"], returns, seconds


class RedlineSide(Side):
    """:class:`~redline.runners.redline_runner.RedlineRunner`'s loop body: the learner's ``act`` (per-env Philox noise,
    bound as for a redline task), ``process_env_step``, the episode tracker, its ``read`` once per iteration."""

    def __init__(self, shape: dict[str, Any], seed: int) -> None:
        super().__init__(shape, seed)

        torch.manual_seed(seed)
        self.alg = PPO.from_env(self.env, PPOConfig.from_rsl_rl(_cfg(shape), precision="fp32"), "cpu", seed)
        bind_action_noise(self.alg, self.env)
        if self.alg.action_noise is None:
            raise RuntimeError("the bench env has per-env streams: the learner should draw its noise from them")
        self.tracker = EpisodeTracker(shape["num_envs"], "cpu")

    def loop(self) -> None:
        alg = self.alg
        self.obs = collect_rollout(alg, self.env, self.obs, self._phase, self.tracker.step)
        with self.clock("bookkeeping"):
            self.tracker.read()
        alg.storage.clear()

    def _phase(self, phase: str) -> contextlib.AbstractContextManager[Any]:
        return self.clock("returns") if phase == "gae" else contextlib.nullcontext()

    def instrument(self) -> None:
        """Time the parts: the noise draw, the storage writes, the normalisers, the tracker. (The eager policy pass
        writes its outputs into the storage as it computes them: only the env's response counts as ``storage``.)"""
        alg, clock = self.alg, self.clock
        assert alg.action_noise is not None
        alg.action_noise = clock.wrap("noise", alg.action_noise)
        alg.process_env_step = clock.wrap("storage", alg.process_env_step)  # type: ignore[method-assign]
        st = alg.storage
        st.record_policy = clock.wrap("storage", st.record_policy)  # type: ignore[method-assign]
        self.tracker.step = clock.wrap("bookkeeping", self.tracker.step)  # type: ignore[method-assign]
        _time_normalisers(clock, alg.actor, alg.critic)
        if alg._eager_pass is not None:
            alg._eager_pass.normalise = clock.wrap("normaliser", alg._eager_pass.normalise)  # type: ignore[method-assign]


class RslRlSide(Side):
    """rsl_rl 5.5.1's ``OnPolicyRunner.learn`` rollout body and its logger's per-iteration episode means."""

    def __init__(self, shape: dict[str, Any], seed: int) -> None:
        super().__init__(shape, seed)
        # heavy: rsl_rl's utils load its log writers (seconds)
        from rsl_rl.runners import OnPolicyRunner

        torch.manual_seed(seed)
        with contextlib.redirect_stdout(io.StringIO()):  # rsl_rl prints its models
            runner = OnPolicyRunner(self.env, _cfg(shape), log_dir=None, device="cpu")
        self.alg = runner.alg
        self.alg.train_mode()
        self.logger = runner.logger
        self.logger.writer = _NullWriter()  # type: ignore[assignment]  # its per-step bookkeeping runs with a writer

    def loop(self) -> None:
        # heavy: rsl_rl's utils load its log writers (seconds)
        from rsl_rl.utils import check_nan

        alg, env, logger, clock = self.alg, self.env, self.logger, self.clock
        obs = self.obs
        with torch.inference_mode():
            for _ in range(self.shape["steps"]):  # on_policy_runner.py, learn(): the rollout body
                actions = alg.act(obs)
                obs, rewards, dones, extras = env.step(actions.to(env.device))
                with clock("bookkeeping"):
                    check_nan(obs, rewards, dones)
                    obs, rewards, dones = (obs.to("cpu"), rewards.to("cpu"), dones.to("cpu"))
                alg.process_env_step(obs, rewards, dones, extras)
                logger.process_env_step(rewards, dones, extras, None)
            with clock("returns"):
                alg.compute_returns(obs)
        with clock("bookkeeping"):  # what its logger reads of the episodes once per iteration
            episode_extras(logger.ep_extras)
            if logger.rewbuffer:
                statistics.mean(logger.rewbuffer), statistics.mean(logger.lenbuffer)
            logger.ep_extras.clear()
        self.obs = obs
        alg.storage.clear()

    def instrument(self) -> None:
        """Time the parts: the noise draw, the storage writes (``process_env_step``), the normalisers, the logger."""
        alg, clock = self.alg, self.clock
        dist = alg.actor.distribution
        dist.sample = clock.wrap("noise", dist.sample)  # type: ignore[method-assign]
        alg.process_env_step = clock.wrap("storage", alg.process_env_step)  # type: ignore[method-assign]
        self.logger.process_env_step = clock.wrap(  # type: ignore[method-assign]
            "bookkeeping", self.logger.process_env_step
        )
        _time_normalisers(clock, alg.actor, alg.critic)


class _NullWriter:
    """A log writer that writes nothing."""

    def add_scalar(self, *args: Any, **kwargs: Any) -> None:
        pass


def _cfg(shape: dict[str, Any]) -> dict[str, Any]:
    cfg = rsl_rl_cfg(shape, bf16=False)
    for model in ("actor", "critic"):
        cfg[model]["obs_normalization"] = shape["obs_norm"]
    return cfg


def _time_normalisers(clock: Clock, *models: Any) -> None:
    for model in models:
        if model.obs_normalization:
            model.obs_normalizer.forward = clock.wrap("normaliser", model.obs_normalizer.forward)


def bench_rollout(shape_name: str, iterations: int, seed: int = 0) -> dict[str, Any]:
    """Both learners' loop bodies at ``shape_name``, alternating: medians of the seconds per env step outside the
    env, and the split of each learner's time into :data:`PARTS` from an instrumented pass."""
    shape = TASK_SHAPES[shape_name]
    sides: dict[str, Side] = {"rsl_rl": RslRlSide(shape, seed), "redline": RedlineSide(shape, seed)}
    for side in sides.values():
        side.iteration()  # warm-up
    per_step: dict[str, list[float]] = {name: [] for name in sides}
    returns: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(iterations):
        for name, side in sides.items():
            s, r, _ = side.iteration()
            per_step[name].append(s)
            returns[name].append(r)
    for side in sides.values():
        side.instrument()
        side.iteration()
    split: dict[str, dict[str, list[float]]] = {name: {p: [] for p in PARTS} for name in sides}
    for _ in range(iterations):  # the instrumented pass, alternating too
        for name, side in sides.items():
            total, _, seconds = side.iteration()
            parts = {p: seconds.get(p, 0.0) / shape["steps"] for p in PARTS if p != "inference"}
            parts["inference"] = total - sum(parts.values())
            for p in PARTS:
                split[name][p].append(parts[p])
    result: dict[str, Any] = {"shape": shape_name, **{k: shape[k] for k in ("num_envs", "steps", "num_actions")}}
    for name in sides:
        result[name] = {
            "per_step_s": statistics.median(per_step[name]),
            "returns_s": statistics.median(returns[name]),
            "parts_s": {p: statistics.median(v) for p, v in split[name].items()},
        }
    result["ratio"] = result["redline"]["per_step_s"] / result["rsl_rl"]["per_step_s"]
    return result


def show(result: dict[str, Any]) -> None:
    """The table of ``redline bench learner --rollout``: per shape, each learner's microseconds per env step outside
    the env, split into :data:`PARTS`, the returns per iteration, and redline's ratio to rsl_rl."""
    print("rollout loop bodies (outside env.step), CPU fp32, 1 thread, medians; us per env step")
    head = "".join(f"{p:>12}" for p in PARTS)
    print(f"  {'shape':<9} {'learner':<8} {'total':>8}{head} {'returns ms/it':>14}")
    for r in result["rollout"]:
        for name in ("rsl_rl", "redline"):
            t = r[name]
            parts = "".join(f"{t['parts_s'][p] * 1e6:>12.0f}" for p in PARTS)
            print(f"  {r['shape']:<9} {name:<8} {t['per_step_s'] * 1e6:>8.0f}{parts} {t['returns_s'] * 1e3:>14.2f}")
        print(f"  {r['shape']:<9} redline / rsl_rl per env step: {r['ratio']:.2f}x")

"""``redline bench env``: the three throughputs Isaac Lab publishes for a task, on one env in one process.

1. **env only**: ``env.step`` with uniform random actions in [-1, 1];
2. **env + inference**: the redline policy's deterministic action (``PPO.act_inference``, what ``play`` and a
   deployed policy run) computed from each observation, then ``env.step``;
3. **env + inference + training**: whole iterations of :class:`~redline.runners.redline_runner.RedlineRunner`
   (sampled actions, rollout storage, GAE, the PPO update), no files written.

Each mode runs a warm-up first (the env's first step compiles Warp kernels; the runner's first iteration allocates).
The modes are then timed in interleaved rounds — one training iteration's worth of env steps per mode and round —
so a machine whose load drifts (other jobs, thermal limits) slows all three alike; each mode's throughput is the
median over the rounds. Throughput is env steps per second summed over envs; the headline is the share of env-only
throughput that training keeps.

``--physics mujoco_cpu,newton_mjwarp`` measures the task once per physics preset, one after the other in the same
process, and reports each preset's throughputs against the first one's (on the CPU: MuJoCo-C, the default, against
MuJoCo-Warp).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
from typing import Any

from redline.bench.timing import device_sync, timed
from redline.envs.prepare import prepare_env, runner_cfg_dict
from redline.envs.simulator import isaaclab_env
from redline.errors import UserError
from redline.learning import PPOConfig
from redline.options import RunOptions, positive_int
from redline.runners.redline_runner import RedlineRunner
from redline.validation import PRECISIONS


@dataclasses.dataclass(frozen=True)
class EnvBenchOptions:
    """What ``redline bench env`` was asked to do."""

    env: RunOptions
    """The task and its env count, device and seed, as ``redline train`` would build it."""
    steps: int | None = None
    """Timed env steps per env and mode, rounded up to whole training iterations; None: 4 iterations' worth."""
    precision: str = "auto"
    """The learner's precision: ``auto``, ``bf16`` or ``fp32``."""
    physics: tuple[str, ...] = ()
    """Physics presets to measure one after the other (``mujoco_cpu``, ``newton_mjwarp``); empty: the default."""


@dataclasses.dataclass(frozen=True)
class EnvBenchResult:
    """Env steps per second (all envs) of each mode."""

    task: str
    """The task benchmarked."""
    num_envs: int
    """Parallel envs."""
    device: str
    """Where the env and the learner ran."""
    steps: int
    """Timed env steps per env and mode (whole training iterations: ``rounds x num_steps_per_env``)."""
    rounds: int
    """Interleaved rounds (one training iteration each)."""
    env_sps: float
    """Env only [env steps / s]."""
    inference_sps: float
    """Env + policy inference [env steps / s]."""
    train_sps: float
    """Env + inference + training [env steps / s]."""
    physics: str = "default"
    """The physics preset measured (``default``: the one ``redline train`` picks for the device)."""

    @property
    def train_keeps(self) -> float:
        """Fraction of env-only throughput that training keeps."""
        return self.train_sps / self.env_sps

    @property
    def inference_keeps(self) -> float:
        """Fraction of env-only throughput that inference keeps."""
        return self.inference_sps / self.env_sps


def bench_envs(opts: EnvBenchOptions) -> list[EnvBenchResult]:
    """:func:`bench_env` once per physics preset of ``opts.physics`` (once with the default when empty); every
    preset's configs are checked before the first env starts."""
    if not opts.physics:
        return [bench_env(opts)]
    requests = [
        dataclasses.replace(opts.env, overrides=(*opts.env.overrides, f"physics={preset}")) for preset in opts.physics
    ]
    for request in requests:
        prepare_env(request)  # a bad preset or combination fails here, before any simulator starts
    return [
        dataclasses.replace(bench_env(dataclasses.replace(opts, env=request)), physics=preset)
        for preset, request in zip(opts.physics, requests, strict=True)
    ]


def bench_env(opts: EnvBenchOptions) -> EnvBenchResult:
    """Build ``opts.env`` as ``redline train`` does and measure the three throughputs."""
    if opts.steps is not None and opts.steps <= 0:
        raise UserError(f"--steps: must be a positive integer, got {opts.steps}")
    prepared = prepare_env(opts.env)
    task, device, env_cfg, agent_cfg = prepared.task, prepared.device, prepared.env_cfg, prepared.agent_cfg

    # heavy: Isaac Lab, imported only once the simulator is needed
    import torch
    from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper

    cfg = PPOConfig.from_rsl_rl(runner_cfg_dict(agent_cfg), precision=opts.precision)
    per_iteration = cfg.num_steps_per_env
    rounds = math.ceil((opts.steps or 4 * per_iteration) / per_iteration)

    sync = device_sync(device)
    with isaaclab_env(task, env_cfg) as env:
        vec_env: Any = RslRlVecEnvWrapper(env, clip_actions=agent_cfg.clip_actions)
        n, num_actions = vec_env.num_envs, vec_env.num_actions
        runner = RedlineRunner(vec_env, cfg, None, device, opts.env.seed)

        def random_step() -> None:
            vec_env.step(2 * torch.rand(n, num_actions, device=device) - 1)

        state = {"obs": vec_env.get_observations()}

        def inference_step() -> None:
            with torch.inference_mode():
                state["obs"] = vec_env.step(runner.alg.act_inference(state["obs"]))[0]

        for _ in range(per_iteration):  # warm-up: kernel compilation, first resets
            random_step()
        inference_step()
        runner.learn(1)
        times: dict[str, list[float]] = {"env": [], "inference": [], "train": []}
        for _ in range(rounds):
            times["env"].append(timed(random_step, sync, per_iteration))
            times["inference"].append(timed(inference_step, sync, per_iteration))
            times["train"].append(timed(lambda: runner.learn(1), sync))
    sps = {mode: n * per_iteration / statistics.median(seconds) for mode, seconds in times.items()}
    return EnvBenchResult(
        task=task,
        num_envs=n,
        device=device,
        steps=rounds * per_iteration,
        rounds=rounds,
        env_sps=sps["env"],
        inference_sps=sps["inference"],
        train_sps=sps["train"],
    )


def show(results: list[dict[str, Any]]) -> None:
    """Each preset's three throughputs and shares; with several presets, each one's speed-up over the first."""
    rows = [EnvBenchResult(**result) for result in results]
    for r in rows:
        show_one(r)
    for r in rows[1:]:
        base = rows[0]
        print(
            f"{base.physics} vs {r.physics}: env only {base.env_sps / r.env_sps:.2f}x, "
            f"+ inference {base.inference_sps / r.inference_sps:.2f}x, + training {base.train_sps / r.train_sps:.2f}x"
        )


def show_one(r: EnvBenchResult) -> None:
    """The three throughputs and the share of env-only throughput each keeps."""
    physics = "" if r.physics == "default" else f", physics={r.physics}"
    print(
        f"env throughput: {r.task}, {r.num_envs} envs on {r.device}{physics}, {r.steps} timed steps per env and mode "
        f"(median of {r.rounds} interleaved rounds)"
    )
    print(f"  {'mode':<28} {'env steps/s':>12} {'of env-only':>12}")
    print(f"  {'env step only':<28} {r.env_sps:>12,.0f} {1.0:>12.1%}")
    print(f"  {'+ policy inference':<28} {r.inference_sps:>12,.0f} {r.inference_keeps:>12.1%}")
    print(f"  {'+ inference + training':<28} {r.train_sps:>12,.0f} {r.train_keeps:>12.1%}")
    print(f"  training keeps {r.train_keeps:.1%} of env-only FPS")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``redline bench env``'s own options."""
    parser.add_argument("--task", required=True, help="the task (see `redline list`)")
    parser.add_argument("--num_envs", type=positive_int, help="envs (default: the task's default for the device)")
    parser.add_argument("--steps", type=positive_int, help="timed env steps per env and mode (4 iterations' worth)")
    parser.add_argument("--precision", choices=PRECISIONS, default="auto", help="the learner's precision (auto)")
    parser.add_argument(
        "--physics",
        type=physics_list,
        default=(),
        help="comma-separated physics presets measured one after the other, e.g. mujoco_cpu,newton_mjwarp "
        "(default: the device's)",
    )


def physics_list(text: str) -> tuple[str, ...]:
    """``--physics``: distinct, non-empty preset names."""
    presets = tuple(name.strip() for name in text.split(","))
    if not all(presets) or len(set(presets)) != len(presets):
        raise argparse.ArgumentTypeError(f"expected distinct comma-separated preset names, got '{text}'")
    return presets


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """``redline bench env``: one result per physics preset."""
    run_options = RunOptions(task=args.task, num_envs=args.num_envs, device=args.device)
    results = bench_envs(
        EnvBenchOptions(env=run_options, steps=args.steps, precision=args.precision, physics=args.physics)
    )
    return [dataclasses.asdict(result) for result in results]

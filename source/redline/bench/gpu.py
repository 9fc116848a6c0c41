"""``redline bench gpu``: the acceptance run for a bare GPU machine (torch 2.11 only), and the bundle it needs.

``--pack DIR`` writes the wheels such a machine lacks (redline, tensordict, rsl-rl-lib and their pure-Python
dependencies; no Warp, no Isaac Lab: :func:`redline.bench.gpu_pack.pack`) into ``DIR``; ``scripts/gpu_check.sh`` puts
them on PYTHONPATH over the machine's torch and runs this bench. The run prints one JSON with:

- ``sync_debug``: host syncs per env step and per gradient step, counted by ``torch.cuda.set_sync_debug_mode``;
- ``update``: ms per iteration of the legged shape's PPO update for redline (bf16 captured, bf16 eager, fp32) and
  rsl_rl 5.5.1 (fp32 and ``use_mixed_precision``), timed in alternation in one process, with MFU;
- ``gpu_monitor``: the NVML sampler's mean utilisation during the timed iterations;
- ``philox``: the per-env draw at 4096 envs, fused kernel vs op by op [ms];
- ``first_ratio_dev``: max |ratio − 1| on the first minibatch under bf16 (0 up to rounding when the fp32 islands hold);
- ``learning``: the device default vs plain learners on the small dummy task, final reward per seed;
- ``race``: redline's device default against rsl_rl 5.5.1 (fp32, mixed precision) training the dummy task at the
  legged shape from the same seeds: final reward and wall time per seed;
- ``sac_update``: ms per update of the SAC learner at FastSAC's shape (4096 envs, batch 8192, 8 gradient steps per
  env step), eager fp32 against eager and captured bf16 (:mod:`redline.bench.sac_update`).

``--quick`` runs the tiny shape for one iteration (CI runs ``--quick --device cpu --json``); ``--learning-seeds 10``
makes the learning check and the race a claim rather than an anecdote; ``--sac-only`` runs ``sac_update`` alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import torch

from redline.bench import gpu_pack, sac_update
from redline.bench.learner import Loop, Timing, redline_loop, rsl_rl_loop, time_interleaved
from redline.bench.shapes import SHAPES, DummyVecEnv, rsl_rl_cfg, synthetic_env
from redline.bench.timing import device_sync, timed
from redline.learning import PPO, ModelConfig, PPOConfig
from redline.learning.rollout import train_iteration
from redline.options import positive_int
from redline.seeding import EnvStreams
from redline.telemetry.flops import iteration_flops, peak_tflops
from redline.telemetry.gpu_monitor import GpuMonitor

PHILOX_ENVS = 4096
"""Envs of the Philox comparison."""
RACE_ITERATIONS = 30
"""Iterations of each learner in :func:`learning_race` (the dummy task at the legged shape is learnt by then)."""
LEARNING_SEEDS = (0, 1, 2)
"""Seeds of :func:`learning_check` (three: an anecdote that catches a default that does not learn at all;
``--learning-seeds`` asks for more)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``redline bench gpu``."""
    parser.add_argument("--pack", metavar="DIR", help="write the bundle of wheels for a bare GPU machine and stop")
    parser.add_argument("--quick", action="store_true", help="tiny shape, one timed iteration (CI)")
    parser.add_argument("--iterations", type=positive_int, default=10, help="timed iterations (not --quick)")
    parser.add_argument(
        "--learning-seeds",
        type=positive_int,
        default=len(LEARNING_SEEDS),
        help=f"seeds of the learning check and race (default {len(LEARNING_SEEDS)}: an anecdote; >= 10 for a claim)",
    )
    parser.add_argument("--sac-only", action="store_true", help="time the SAC update alone (section sac_update)")
    parser.add_argument(
        "--race-iterations", type=positive_int, default=RACE_ITERATIONS, help="iterations per learner in the race"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build the bundle (``--pack``) or run the benchmark; returns a JSON-ready dict."""
    if args.pack:
        return gpu_pack.pack(Path(args.pack))
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.sac_only:
        return {"device": device, "torch": torch.__version__, "sac_update": sac_update.bench(device, args.quick)}
    iterations = 1 if args.quick else args.iterations
    seeds = tuple(range(args.learning_seeds))
    return bench(device, args.quick, iterations, learning_seeds=seeds, race_iterations=args.race_iterations)


def show(result: dict[str, Any]) -> None:
    """Print a result of :func:`run` for people."""
    if "wheels" in result:
        print(f"bundle in {result['dir']}: {result['total_mb']:.1f} MiB (limit {gpu_pack.BUNDLE_LIMIT_MB:.0f} MiB)")
        for name, mb in result["wheels"].items():
            print(f"  {mb:7.2f} MiB  {name}")
        return
    if "update" not in result:  # --sac-only
        show_sac(result["sac_update"])
        return
    print(f"bench gpu: {result['device_name']} ({result['device']}), torch {result['torch']}, shape {result['shape']}")
    sync = result["sync_debug"]
    if sync.get("env_step") is None:
        print(f"  host syncs: {sync['reason']}")
    else:
        print(f"  host syncs: {sync['env_step']} per env step, {sync['gradient_step']} per gradient step")
    print(f"  {'learner':<22} {'update ms/it':>13} {'rollout ms/it':>14} {'MFU':>7}")
    for name, row in result["update"].items():
        mfu = "-" if row["mfu"] is None else f"{row['mfu']:.1%}"
        print(f"  {name:<22} {row['update_ms']:>13.2f} {row['rollout_ms']:>14.2f} {mfu:>7}")
    ph = result["philox"]
    fused = "-" if ph["fused_ms"] is None else f"{ph['fused_ms']:.3f} ms"
    print(f"  philox at {ph['envs']} envs: op by op {ph['unfused_ms']:.3f} ms, fused {fused}")
    print(f"  first-minibatch |ratio - 1| under bf16: {result['first_ratio_dev']:.2e}")
    print(f"  GPU utilisation (NVML): {result['gpu_monitor']['gpu_util']}")
    for name, row in result["learning"].items():
        print(f"  learning, dummy task, {name} ({row['capture']}): final reward {row['mean']:.3f}", row["final_reward"])
    race = result["race"]
    print(f"  race, dummy task at the {race['shape']} shape, {race['iterations']} iterations:")
    for name in RACE_LEARNERS:
        row = race[name]
        print(f"    {name:<24} final reward {row['mean_final_reward']:.3f}, {row['mean_wall_s']:.2f} s")
    show_sac(result["sac_update"])


def show_sac(sac: dict[str, Any]) -> None:
    """Print the ``sac_update`` section for people."""
    size = f"{sac['num_envs']} envs, batch {sac['batch_size']}, {sac['updates_per_step']} gradient steps per update"
    print(f"  SAC update at the {sac['shape']} shape ({size}); capture {sac['capture']}")
    for name, row in sac["rows"].items():
        print(
            f"    {name:<13} ({row['capture']:<10}) {row['update_ms']:9.2f} ms per update, "
            f"{row['gradient_step_ms']:8.3f} ms per gradient step"
        )
    print(f"    bf16 / fp32: {sac['bf16_to_fp32']:.2f}, bf16 captured / fp32: {sac['captured_to_fp32']:.2f}")


# -------------------------------------------------------------------------------------------------------------------
# Benchmark


def bench(
    device: str,
    quick: bool,
    iterations: int,
    learning_seeds: tuple[int, ...] = LEARNING_SEEDS,
    race_iterations: int = RACE_ITERATIONS,
) -> dict[str, Any]:
    """Every measurement of the module docstring on ``device``; JSON-ready."""
    cuda = device.startswith("cuda")
    shape_name = "tiny" if quick else "legged"
    shape: dict[str, Any] = SHAPES[shape_name]
    # on the CPU "captured" compiles with a backend that generates no code (inductor's C++ build takes minutes)
    backend = "inductor" if cuda else "aot_eager"
    redline: dict[str, tuple[Loop, dict[str, Any]]] = {
        name: redline_loop(shape, precision, device, capture=capture, capture_backend=backend)
        for name, precision, capture in (
            ("redline_bf16_captured", "bf16", "on"),
            ("redline_bf16_eager", "bf16", "off"),
            ("redline_fp32", "fp32", "auto"),
        )
    }
    loops = {name: loop for name, (loop, _) in redline.items()}
    loops["rsl_rl_fp32"] = rsl_rl_loop(shape, False, device)
    loops["rsl_rl_mixed_precision"] = rsl_rl_loop(shape, True, device)
    monitor = GpuMonitor(device)
    try:
        times = time_interleaved(loops, iterations, device, count_ops=False)
        utilisation = monitor.read()
    finally:
        monitor.close()
    captured_state = redline["redline_bf16_captured"][1]
    return {
        "device": device,
        "device_name": torch.cuda.get_device_name(device) if cuda else "cpu",
        "torch": torch.__version__,
        "shape": shape_name,
        "iterations_timed": iterations,
        "tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "capture": {name: state["alg"].capture_plan.kind for name, (_, state) in redline.items()},
        "sync_debug": sync_counts(shape, device) if cuda else {"reason": "no CUDA device: nothing to count"},
        "update": {name: update_row(name, t, shape, device) for name, t in times.items()},
        "gpu_monitor": utilisation,
        "philox": philox_cost(device, reps=3 if quick else 50),
        "first_ratio_dev": float(captured_state["metrics"]["first_ratio_dev"]),
        "learning": learning_check(device, (0,), iterations=2) if quick else learning_check(device, learning_seeds),
        "race": learning_race(shape_name, device, (0,) if quick else learning_seeds, 2 if quick else race_iterations),
        "sac_update": sac_update.bench(device, quick),
    }


LEARNING_VARIANTS: dict[str, tuple[str, Literal["auto", "off"]]] = {
    "default": ("auto", "auto"),
    "fp32_eager": ("fp32", "off"),
    "bf16_eager": ("bf16", "off"),
}
"""(precision, capture): the device's default learner (bf16 + value normalisation + capture on CUDA) vs plain."""


def learning_check(device: str, seeds: tuple[int, ...], iterations: int = 12) -> dict[str, Any]:
    """Train the simulator-free dummy task (random actions earn ~0.3 per step, the ideal controller ~1.0) with each
    of :data:`LEARNING_VARIANTS`; per variant the mean reward of the last three iterations, per seed.

    A default that learns as the plain path does lands near it (> 0.75 is the unit test's bar on the CPU).
    """
    net = ModelConfig(hidden_dims=(32, 32))
    result: dict[str, Any] = {}
    for name, (precision, capture) in LEARNING_VARIANTS.items():
        finals = []
        for seed in seeds:
            env = DummyVecEnv(num_envs=64, seed=seed, device=device)
            torch.manual_seed(seed)
            cfg = PPOConfig(num_steps_per_env=16, actor=net, critic=net, precision=precision, capture=capture)
            alg = PPO.from_env(env, cfg, device=device, seed=seed)
            obs, rewards = env.get_observations(), []
            for _ in range(iterations):
                obs, metrics = train_iteration(alg, env, obs)
                rewards.append(metrics["mean_reward"])
            finals.append(float(torch.stack(rewards[-3:]).mean()))
        result[name] = {"final_reward": finals, "mean": sum(finals) / len(finals), "capture": alg.capture_plan.kind}
    return result


RACE_LEARNERS: dict[str, Callable[[dict[str, Any], str, int, Any], Loop]] = {
    "redline_default": lambda shape, device, seed, env: redline_loop(shape, "auto", device, seed, env=env)[0],
    "rsl_rl_fp32": lambda shape, device, seed, env: rsl_rl_loop(shape, False, device, seed, env=env),
    "rsl_rl_mixed_precision": lambda shape, device, seed, env: rsl_rl_loop(shape, True, device, seed, env=env),
}
"""The race's learners: redline's device default (bf16 + value normalisation + capture on CUDA) against what users
have (rsl_rl 5.5.1, fp32 and its own mixed precision), the same rsl_rl hyper-parameters."""


def learning_race(shape_name: str, device: str, seeds: tuple[int, ...], iterations: int) -> dict[str, Any]:
    """Each of :data:`RACE_LEARNERS` trains the dummy task at ``shape_name`` (the legged shape: 4096 envs x 24
    steps, [512, 256, 128] networks) for ``iterations`` from the same env seed and initial weights, one learner after
    the other per seed.

    Returns, per learner and per seed, the mean reward per env step of each iteration (``curves``) and of the last
    three (``final_reward``; random actions earn ~0.3, the ideal controller ~1.0) and the wall time of the
    ``iterations`` [s] (the first, with any capture or compilation, included); and per seed the ratio of redline's
    wall time to rsl_rl fp32's.
    """
    shape: dict[str, Any] = SHAPES[shape_name]
    result: dict[str, Any] = {name: {"final_reward": [], "wall_s": [], "curves": []} for name in RACE_LEARNERS}
    sync = device_sync(device)
    for seed in seeds:
        for name, make in RACE_LEARNERS.items():
            env = synthetic_env(shape, device, seed)
            reward_sum = _reward_meter(env)
            rollout, update = make(shape, device, seed, env)
            sums = []
            sync()  # nothing of the set-up left in the queue when the clock starts
            start = time.perf_counter()
            for _ in range(iterations):
                rollout()
                update()
                sums.append(reward_sum.clone())
                reward_sum.zero_()
            sync()
            result[name]["wall_s"].append(time.perf_counter() - start)
            rewards = torch.stack(sums) / shape["steps"]
            result[name]["final_reward"].append(float(rewards[-3:].mean()))
            result[name]["curves"].append([round(float(r), 5) for r in rewards])
    for row in result.values():
        row["mean_final_reward"] = statistics.fmean(row["final_reward"])
        row["mean_wall_s"] = statistics.fmean(row["wall_s"])
    redline, rsl_rl = result["redline_default"], result["rsl_rl_fp32"]
    result["wall_ratio_redline_to_rsl_rl_fp32"] = [
        a / b for a, b in zip(redline["wall_s"], rsl_rl["wall_s"], strict=True)
    ]
    result["iterations"], result["shape"] = iterations, shape_name
    return result


def _reward_meter(env: Any) -> torch.Tensor:
    """Make ``env.step`` add its mean reward to the returned 0-dim tensor, on the device (no host sync)."""
    total = torch.zeros((), device=env.device)
    step = env.step

    def counted(actions: torch.Tensor) -> Any:
        obs, rewards, dones, extras = step(actions)
        total.add_(rewards.mean())
        return obs, rewards, dones, extras

    env.step = counted
    return total


def update_row(name: str, timing: Timing, shape: dict[str, Any], device: str) -> dict[str, Any]:
    """One learner's row: ms per iteration and the update's model FLOP utilisation."""
    rollout_s, update_s = timing.rollout_s, timing.update_s
    sizes = [shape["num_obs"], *shape["hidden"]]
    samples = shape["num_envs"] * shape["steps"]
    epochs = rsl_rl_cfg(shape, False)["algorithm"]["num_learning_epochs"]
    # update FLOPs = iteration FLOPs − the rollout's forward passes (forward + backward, 3 forwards, per epoch)
    flops = iteration_flops([*sizes, shape["num_actions"]], [*sizes, 1], samples, epochs)
    flops -= iteration_flops([*sizes, shape["num_actions"]], [*sizes, 1], samples, 0)
    bf16 = "bf16" in name or "mixed" in name
    tf32 = torch.backends.cuda.matmul.allow_tf32
    peak = peak_tflops(torch.cuda.get_device_name(device), bf16, tf32) if device.startswith("cuda") else None
    return {
        "update_ms": update_s * 1e3,
        "rollout_ms": rollout_s * 1e3,
        "update_gflop": flops / 1e9,
        "mfu": None if peak is None else flops / update_s / (peak * 1e12),
    }


def sync_counts(shape: dict[str, Any], device: str) -> dict[str, Any]:
    """Host syncs of one env step (act, env step, record) and of one gradient step of the captured bf16 learner,
    counted as ``torch.cuda.set_sync_debug_mode("warn")`` warnings."""
    env = synthetic_env(shape, device, 0)
    alg = PPO.from_env(env, PPOConfig.from_rsl_rl(rsl_rl_cfg(shape, False), precision="bf16"), device, 0)
    obs = env.get_observations()

    def env_step() -> None:
        nonlocal obs
        with torch.inference_mode():
            obs, rewards, dones, extras = env.step(alg.act(obs))
            alg.process_env_step(rewards, dones, extras)

    for _ in range(alg.cfg.num_steps_per_env - 1):  # warm-up (and capture) first
        env_step()
    per_env_step = count_syncs(env_step)
    with torch.inference_mode():
        alg.compute_returns(obs)
    minibatches = alg.storage.minibatch_indices(alg.cfg.num_mini_batches, alg.generator)
    for indices, share in minibatches[:3]:
        alg._train_step(indices, share, None)
    indices, share = minibatches[-1]
    per_gradient_step = count_syncs(lambda: alg._train_step(indices, share, None))
    alg.storage.clear()
    return {"env_step": per_env_step, "gradient_step": per_gradient_step, "capture": alg.capture_plan.kind}


def count_syncs(fn: Callable[[], Any]) -> int:
    """Synchronising CUDA calls made by ``fn``."""
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(w.message) for w in caught)


def philox_cost(device: str, reps: int) -> dict[str, Any]:
    """Milliseconds of one per-env normal draw (``(4096, 12)``, an action-noise draw) op by op and fused."""

    def cost(fused: bool) -> float:
        streams = EnvStreams("per_env", 0, PHILOX_ENVS, device, fused=fused)
        streams.begin_episode()
        streams.normal(None, (12,))  # warm-up (and the fused kernel's compile)
        sync = device_sync(device)
        return statistics.median(timed(lambda: streams.normal(None, (12,)), sync) for _ in range(reps)) * 1e3

    unfused = cost(False)
    fused = cost(True) if device.startswith("cuda") else None  # inductor's CPU build takes minutes
    return {
        "envs": PHILOX_ENVS,
        "unfused_ms": unfused,
        "fused_ms": fused,
        "speedup": None if fused is None else unfused / fused,
    }


def main(argv: list[str] | None = None) -> None:
    """``python -m redline.bench.gpu``: the subcommand without the CLI."""
    parser = argparse.ArgumentParser(prog="redline bench gpu", description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object only")
    args = parser.parse_args(argv)
    result = run(args)
    if args.json:
        print(json.dumps(result))
    else:
        show(result)


if __name__ == "__main__":
    main()

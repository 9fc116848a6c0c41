"""Where do redline and rsl_rl part? Both learners trained on the real env from identical randomness, compared.

Issue 28 item 5: a learning gap between the learners must come from something that differs between their runs. This
script removes every *random* difference and keeps every *code* difference: it runs ``redline train`` twice (once
per learner, each in its own process, as users run them) with the same task, seed and env count, and makes both
learners draw the same numbers —

- initial weights: rsl_rl's run saves its freshly built actor and critic; redline's run loads them (``--init``);
- action noise: before the ``k``-th ``act`` of the run both seed torch's global generator with ``NOISE + k``, and
  redline takes its noise from ``torch.randn`` of that generator (rsl_rl's ``Normal.sample`` draws the same
  standard normals and scales them, as the one-update equivalence test asserts);
- minibatch permutations: before the ``i``-th ``update`` both seed torch's global generator (rsl_rl's storage draws
  ``randperm`` from it) and redline's own generator with ``PERMUTATION + i``;
- random initial episode lengths: both runs call redline's per-env ``randomize_episode_lengths`` (rsl_rl's
  ``learn`` gets ``init_at_random_ep_len=False`` instead of drawing them from torch's generator).

The env is the same by construction (same task, seed and ``per_env`` seeding). What is left are the learners' own
code paths: rollout bookkeeping, time-out bootstrapping on the real env's extras, GAE, the update, the learning-rate
schedule, the optimiser. After every update each run stores its flattened parameters; ``compare`` prints, per
iteration, the largest parameter difference and the logged statistics side by side. Iteration 0's update sees the
same rollout in both runs, so a difference there above float rounding (~1e-6) is a code difference; later the
physics amplifies rounding (contacts are chaotic), and the runs part gradually.

Usage (each run is an ordinary ``redline train``; the output folder holds both runs' parameters and logs)::

    python scripts/part_ways.py run --out /tmp/part --task Redline-Ant --seed 52 --iterations 30
    python scripts/part_ways.py compare --out /tmp/part
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch

NOISE, PERMUTATION = 1_000_000, 2_000_000
"""Seed offsets of the k-th action draw and the i-th update's permutation (the same in both runs)."""


def _flat(alg: Any) -> torch.Tensor:
    """Every parameter of the actor then the critic, flattened (state-dict order, which both learners share)."""
    tensors = [*alg.actor.state_dict().values(), *alg.critic.state_dict().values()]
    return torch.cat([t.detach().reshape(-1).float().cpu() for t in tensors])


def _perturbed(state: dict[str, torch.Tensor], eps: float) -> dict[str, torch.Tensor]:
    """``state`` with every floating-point entry moved by ``eps`` times a standard normal (a fixed draw)."""
    g = torch.Generator().manual_seed(0)
    return {k: v + eps * torch.randn(v.shape, generator=g) if v.is_floating_point() else v for k, v in state.items()}


def _instrument(role: str, eps: float, env: Any, runner: Any, out: Path) -> None:
    """Make ``runner``'s learner draw the shared randomness and record its parameters after every update.

    ``role``: ``rsl_rl`` (saves its initial weights), ``redline`` (loads them), ``control`` (rsl_rl again, loading
    them moved by ``eps``: how fast two runs of the same code part from a small difference) or ``fused`` (rsl_rl
    again from the same weights with torch's fused Adam kernel: the same maths, rounded differently)."""
    from redline.runners.episodes import randomize_episode_lengths

    alg = runner.runner.alg
    if role == "rsl_rl":
        torch.save({"actor": alg.actor.state_dict(), "critic": alg.critic.state_dict()}, out / "init.pt")
    else:
        init = torch.load(out / "init.pt")
        if role == "control":
            init = {k: _perturbed(v, eps) for k, v in init.items()}
        if role == "fused":  # rounding alone: rsl_rl with torch's fused Adam kernel (redline's) instead of its loop
            alg.optimizer.param_groups[0]["fused"] = True
        alg.actor.load_state_dict(init["actor"])  # into redline's flat-buffer views, in place
        alg.critic.load_state_dict(init["critic"])
    learner = "rsl_rl" if role in ("control", "fused") else role
    if learner == "redline":
        num_envs, num_actions = env.num_envs, env.num_actions
        alg.action_noise = lambda: torch.randn(num_envs, num_actions)  # torch's global generator, seeded below
    draws = {"act": 0, "update": 0}
    params: list[torch.Tensor] = []
    act, update = alg.act, alg.update

    def seeded_act(*args: Any, **kwargs: Any) -> torch.Tensor:
        torch.manual_seed(NOISE + draws["act"])
        draws["act"] += 1
        return act(*args, **kwargs)

    def seeded_update(*args: Any, **kwargs: Any) -> Any:
        seed = PERMUTATION + draws["update"]
        draws["update"] += 1
        torch.manual_seed(seed)
        if learner == "redline":
            alg.generator.manual_seed(seed)
        result = update(*args, **kwargs)
        params.append(_flat(alg))
        torch.save(torch.stack(params), out / f"{role}_params.pt")
        return result

    alg.act, alg.update = seeded_act, seeded_update
    learn = runner.learn

    def learn_from_shared_lengths(num_iterations: int, init_at_random_ep_len: bool, stop: Any) -> None:
        if init_at_random_ep_len:
            randomize_episode_lengths(env)  # per-env streams in both runs
        learn(num_iterations, False, stop)

    runner.learn = learn_from_shared_lengths


def run(args: argparse.Namespace) -> int:
    """Train with each learner in its own process, rsl_rl first (it writes the initial weights), then the control
    when asked."""
    import subprocess

    args.out.mkdir(parents=True, exist_ok=True)
    roles = ("rsl_rl", "redline", *(["control"] if args.control else []), *(["fused"] if args.fused else []))
    for role in roles:
        learner = "rsl_rl" if role in ("control", "fused") else role
        cmd = [sys.executable, __file__, "_train", "--out", str(args.out), "--role", role, "--eps", str(args.control)]
        cmd += ["--learner", learner, "--"]
        cmd += ["train", "--task", args.task, "--seed", str(args.seed), "--max_iterations", str(args.iterations)]
        cmd += ["--device", "cpu", "--precision", "fp32", "--seeding", "per_env", "--run_name", role]
        cmd += ["--log_root", str(args.out / "logs"), *(["--num_envs", str(args.num_envs)] if args.num_envs else [])]
        print("+", " ".join(cmd), flush=True)
        status = subprocess.call(cmd)
        if status:
            return status
    return 0


def _train(args: argparse.Namespace, argv: list[str]) -> int:
    """One instrumented ``redline train`` in this process."""
    import redline.runners.make as make
    from redline.cli import main

    original = make.make_runner

    def instrumented(learner: str, env: Any, request: Any) -> Any:
        runner = original(learner, env, request)
        _instrument(args.role, args.eps, env, runner, args.out)
        return runner

    make.make_runner = instrumented
    return main([*argv, "--learner", args.learner])


def _records(out: Path, learner: str) -> list[dict[str, Any]]:
    (path,) = (out / "logs").glob(f"*/*_{learner}/metrics.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def compare(args: argparse.Namespace) -> int:
    """Per iteration: the largest parameter difference and a few logged statistics of both runs."""
    ours, theirs = (torch.load(args.out / f"{n}_params.pt") for n in ("redline", "rsl_rl"))
    path = next(
        (args.out / f"{n}_params.pt" for n in ("control", "fused") if (args.out / f"{n}_params.pt").is_file()), None
    )
    control = torch.load(path) if path is not None else None
    rec_ours, rec_theirs = _records(args.out, "redline"), _records(args.out, "rsl_rl")
    keys = ("mean_reward", "mean_episode_length", "lr", "value_loss")
    head = "| it | max abs param diff redline - rsl_rl | " + (
        f"{path.stem[:-7]} - rsl_rl | " if path is not None else ""
    )
    print(head + " | ".join(f"{k} (redline / rsl_rl)" for k in keys) + " |")
    print("|---" * (len(keys) + 2 + (control is not None)) + "|")
    for it in range(min(len(ours), len(theirs))):
        diff = float((ours[it] - theirs[it]).abs().max())
        cells = (
            [] if control is None or it >= len(control) else [f"{float((control[it] - theirs[it]).abs().max()):.2e}"]
        )
        for k in keys:
            a, b = rec_ours[it].get(k), rec_theirs[it].get(k)
            cells.append("-" if a is None or b is None else f"{a:.6g} / {b:.6g}")
        print(f"| {it} | {diff:.2e} | " + " | ".join(cells) + " |")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["_train"]:
        split = argv.index("--")
        p = argparse.ArgumentParser()
        p.add_argument("--out", type=Path, required=True)
        p.add_argument("--learner", required=True)
        p.add_argument("--role", required=True)
        p.add_argument("--eps", type=float, default=0.0)
        return _train(p.parse_args(argv[1:split]), argv[split + 1 :])
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("run", "compare"))
    p.add_argument("--out", type=Path, required=True, help="folder for both runs")
    p.add_argument("--task", default="Redline-Ant")
    p.add_argument("--seed", type=int, default=52)
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--num_envs", type=int, default=None, help="envs (the task's default)")
    p.add_argument("--fused", action="store_true", help="also run rsl_rl with torch's fused Adam (rounding only)")
    p.add_argument("--control", type=float, default=0.0, help="also run rsl_rl from the initial weights moved by this")
    args = p.parse_args(argv)
    return run(args) if args.mode == "run" else compare(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Does collecting the next env steps while SAC updates pay on this CPU? (issue 46 item 4; docs/offpolicy.md)

    python scripts/sac_overlap_cpu.py [--task Redline-Velocity-Flat-Go1] [--num_envs 256] [--rounds 6] [--iterations 4]
                                      [--torch_threads N]

Builds the task and its SAC agent as ``redline train --algorithm sac`` does (one process, the agent config's CPU
env count unless ``--num_envs``), fills the replay past ``learning_starts``, then times whole iterations in alternating
rounds of two modes:

- **serial** (what the runner does): ``num_steps_per_env`` env steps with the current actor, then ``update()``;
- **overlapped**: ``update()`` in a second thread while the main thread runs the next ``num_steps_per_env`` env steps
  with a copy of the actor taken before the update (one update stale, harmless off-policy); the transitions are
  stored once the update has joined, so the update samples the same replay as in the serial mode.

Also times each half alone (collection only, update only), whose sum is the serial bound and whose maximum the
overlapped ideal. Prints each mode's median iteration [s], env steps/s and serial / overlapped. The two modes are
not the same experiment (the overlapped one acts with staler weights), so only their times are compared here.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import threading
import time
from typing import Any

import torch
from tensordict import TensorDict

from redline.envs.prepare import prepare_env, runner_cfg_dict
from redline.envs.simulator import isaaclab_env
from redline.learning.rollout import collect_rollout
from redline.learning.sac import SAC, SACConfig
from redline.learning.sac.networks import squashed_sample
from redline.options import ALGORITHMS, RunOptions
from redline.runners.redline_runner import RedlineRunner


def stale_collect(alg: SAC, env: Any, obs: TensorDict, steps: int) -> tuple[TensorDict, list[tuple]]:
    """``steps`` env steps acting with a copy of the actor (taken by the caller); the transitions, for later."""
    actor, cfg = copy.deepcopy(alg._actor_net), alg.cfg
    pending = []
    with torch.inference_mode():
        for _ in range(steps):
            noise = alg.action_noise() if alg.action_noise is not None else torch.randn(alg.num_envs, alg.num_actions)
            mean, log_std = alg._dist.split(actor(obs))
            actions, _ = squashed_sample(mean, log_std, noise, cfg.actor.action_scale)
            groups = {g: obs[g].clone() for g in alg._groups}
            obs, rewards, dones, extras = env.step(actions)
            kept = {k: extras[k].clone() for k in ("time_outs", "final_observation") if k in extras}
            pending.append((groups, actions, obs.clone(), rewards.clone(), dones.clone(), kept))
    return obs, pending


def store(alg: SAC, pending: list[tuple]) -> None:
    """Hand the collected transitions to the learner, in order, as its own ``act`` / ``process_env_step`` would."""
    for groups, actions, next_obs, rewards, dones, extras in pending:
        alg._pending = (groups, actions)
        alg.process_env_step(next_obs, rewards, dones, extras)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="Redline-Velocity-Flat-Go1")
    parser.add_argument("--num_envs", type=int, default=None, help="envs (default: the SAC agent's CPU count)")
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds (6)")
    parser.add_argument("--iterations", type=int, default=4, help="iterations per mode and round (4)")
    parser.add_argument("--torch_threads", type=int, default=None, help="torch's intra-op threads (torch's default)")
    args = parser.parse_args()
    if args.torch_threads is not None:
        torch.set_num_threads(args.torch_threads)
    run = RunOptions(task=args.task, num_envs=args.num_envs, device="cpu", seed=1)
    prepared = prepare_env(run, agent_entry_point=ALGORITHMS["sac"])
    train_cfg = runner_cfg_dict(prepared.agent_cfg)
    cfg = SACConfig.from_rsl_rl(train_cfg)

    from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper  # heavy: only once the simulator is needed

    with isaaclab_env(prepared.task, prepared.env_cfg) as env:
        vec_env: Any = RslRlVecEnvWrapper(env, clip_actions=prepared.agent_cfg.clip_actions)
        runner = RedlineRunner(vec_env, cfg, None, "cpu", run.seed, train_cfg=train_cfg)
        alg: SAC = runner.alg  # type: ignore[assignment]
        steps = cfg.num_steps_per_env
        state = {"obs": vec_env.get_observations()}
        while alg.replay.steps < cfg.learning_starts + steps:  # fill the replay, warm the update up
            state["obs"] = collect_rollout(alg, vec_env, state["obs"])
        alg.update()

        def serial() -> None:
            state["obs"] = collect_rollout(alg, vec_env, state["obs"])
            alg.update()

        def overlapped() -> None:
            worker = threading.Thread(target=alg.update)
            worker.start()
            state["obs"], pending = stale_collect(alg, vec_env, state["obs"], steps)
            worker.join()
            store(alg, pending)

        def collect_only() -> None:
            state["obs"] = collect_rollout(alg, vec_env, state["obs"])
            alg._new_steps = 0  # the update's normaliser batch: not merged (no update in this mode)

        modes = {"serial": serial, "overlapped": overlapped, "collect only": collect_only, "update only": alg.update}
        overlapped()  # warm the thread path up
        times: dict[str, list[float]] = {name: [] for name in modes}
        for _ in range(args.rounds):
            for name, fn in modes.items():
                start = time.perf_counter()
                for _ in range(args.iterations):
                    fn()
                times[name].append((time.perf_counter() - start) / args.iterations)
    median = {name: statistics.median(t) for name, t in times.items()}
    collect, update = median["collect only"], median["update only"]
    per_iteration = alg.num_envs * steps
    print(f"{args.task}, {alg.num_envs} envs, {steps} env steps + {steps * cfg.updates_per_step} gradient steps per "
          f"iteration, torch threads {torch.get_num_threads()}, precision {alg.precision.mode}")  # fmt: skip
    for name, seconds in median.items():
        rounds = ", ".join(f"{s:.3f}" for s in times[name])
        print(f"  {name:<13} {seconds:.3f} s per iteration ({per_iteration / seconds:,.0f} env steps/s; rounds {rounds})")  # fmt: skip  # noqa: E501
    ideal = (collect + update) / max(collect, update)
    print(f"  serial / overlapped: {median['serial'] / median['overlapped']:.3f}x (ideal, sum / max of the halves: {ideal:.3f}x)")  # fmt: skip  # noqa: E501


if __name__ == "__main__":
    main()

"""The opt-in final observation on the real tasks (Newton, CPU): the observation an env's step ended in before its
auto-reset, through Isaac Lab's ``RslRlVecEnvWrapper`` as the learners see it, without changing the run."""

from __future__ import annotations

import pytest
import torch
from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper

from redline.envs import registry
from redline.envs.simulator import isaaclab_env
from redline_tasks.common import FINAL_OBSERVATION

pytestmark = pytest.mark.sim


def _wave(t: int, num_envs: int, num_actions: int) -> torch.Tensor:
    """A deterministic action per env and step (envs differ, so they do not move alike)."""
    phase = torch.arange(num_envs)[:, None].float() + torch.arange(num_actions)[None, :].float()
    return 0.5 * torch.sin(0.3 * t + phase)


def _run(task: str, steps: int, episode_length_s: float, final: bool) -> dict[str, list]:
    """Each step's returned policy observation, resets, time-outs and (with ``final``) final policy observation."""
    env_cfg, agent_cfg = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", [])
    env_cfg.scene.num_envs = 4
    env_cfg.seed = 3
    env_cfg.episode_length_s = episode_length_s
    env_cfg.final_observation = final
    out: dict[str, list] = {"obs": [], "dones": [], "time_outs": [], "final": [], "keys": []}
    with isaaclab_env(task, env_cfg, "cpu") as gym_env:
        env = RslRlVecEnvWrapper(gym_env, clip_actions=agent_cfg.clip_actions)
        env.get_observations()
        for t in range(steps):
            obs, _, dones, extras = env.step(_wave(t, env.num_envs, env.num_actions))
            out["obs"].append(obs["policy"].clone())
            out["dones"].append(dones.bool().clone())
            out["time_outs"].append(extras["time_outs"].bool().clone())
            out["keys"].append(FINAL_OBSERVATION in extras)
            if FINAL_OBSERVATION in extras:
                assert extras[FINAL_OBSERVATION].batch_size == obs.batch_size
                assert set(extras[FINAL_OBSERVATION].keys()) == set(obs.keys())
                out["final"].append(extras[FINAL_OBSERVATION]["policy"].clone())
    return out


def test_cartpole_final_observation_is_the_one_before_the_time_out_reset() -> None:
    steps = 14
    short = _run("Redline-Cartpole", steps, 0.1, final=True)  # 6 steps of 1/60 s: time-outs at steps 5 and 11
    plain = _run("Redline-Cartpole", steps, 0.1, final=False)
    long = _run("Redline-Cartpole", 6, 5.0, final=True)  # the same first episode, not cut short
    assert all(short["keys"]) and not any(plain["keys"])  # present at every step when on, absent when off
    for name in ("obs", "dones"):  # the option changes nothing of the run
        assert all(torch.equal(a, b) for a, b in zip(short[name], plain[name], strict=True))
    timed_out = short["time_outs"][5]
    assert bool(timed_out.all()) and not bool(long["dones"][5].any())
    # at the time-out, the final observation is the one the uncut episode observes at that step
    assert torch.equal(short["final"][5], long["obs"][5])
    assert not torch.equal(short["final"][5], short["obs"][5])  # the returned one is the next episode's start
    for t in range(steps):  # where no env was reset it is the returned observation
        kept = ~short["dones"][t]
        assert torch.equal(short["final"][t][kept], short["obs"][t][kept])
    assert torch.equal(short["final"][4], long["obs"][4])


@pytest.mark.extended  # ~35 s (two Go1 envs built); the rewind itself is Cartpole's path too
def test_velocity_final_observation_leaves_the_noise_streams_as_they_were() -> None:
    # Go1's observations are noisy (drawn from the env streams): capturing the final one must not move them on
    steps = 8
    on = _run("Redline-Velocity-Flat-Go1", steps, 0.1, final=True)  # 5 steps of 0.02 s: time-outs at steps 4
    off = _run("Redline-Velocity-Flat-Go1", steps, 0.1, final=False)
    assert any(bool(d.any()) for d in on["dones"])
    assert all(torch.equal(a, b) for a, b in zip(on["obs"], off["obs"], strict=True))
    t = next(t for t, d in enumerate(on["dones"]) if bool(d.any()))
    reset = on["dones"][t]
    assert not torch.equal(on["final"][t][reset], on["obs"][t][reset])
    assert torch.equal(on["final"][t][~reset], on["obs"][t][~reset])

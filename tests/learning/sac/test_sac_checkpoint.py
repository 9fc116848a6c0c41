"""A SAC checkpoint's per-rank parts regrouped for another partition of the same global envs."""

from __future__ import annotations

import pytest
import torch

from redline.learning.sac import SAC, sac_checkpoint
from redline.learning.sac.sac_checkpoint import regroup_parts, whole_part
from tests.learning.sac.sac_support import ReachEnv, run_iteration, tiny_cfg


def _trained(reward_normalization: bool = False) -> SAC:
    env = ReachEnv(8)
    alg = SAC.from_env(env, tiny_cfg(reward_normalization=reward_normalization), seed=1)
    obs = env.get_observations()
    for _ in range(3):
        obs, _ = run_iteration(alg, env, obs)
    return alg


def test_the_parts_of_any_partition_are_cut_by_global_env_id() -> None:
    alg = _trained(reward_normalization=True)
    whole = whole_part(alg.state_dict())
    assert whole["replay"]["data"].keys() == alg.rank_state_dict()["replay"]["data"].keys()  # the ranks' form
    halves = [regroup_parts([whole], offset, 4, 8) for offset in (0, 4)]  # 1 process -> 2 ranks
    for offset, half in zip((0, 4), halves, strict=True):
        for key, value in half["replay"]["data"].items():
            assert torch.equal(value, whole["replay"]["data"][key][:, offset : offset + 4]), key
        assert torch.equal(half["reward_returns"], whole["reward_returns"][offset : offset + 4])
        assert half["noise_generator"] is None  # the rank keeps its own: no saved rank held these envs
        assert (half["replay"]["pos"], half["replay"]["size"]) == (whole["replay"]["pos"], whole["replay"]["size"])
    quarters = [regroup_parts(halves, offset, 2, 8) for offset in (0, 2, 4, 6)]  # 2 ranks -> 4 ranks
    back = regroup_parts(quarters, 0, 8, 8)  # 4 ranks -> 1 process: the whole replay, bit for bit
    for key, value in whole["replay"]["data"].items():
        assert torch.equal(back["replay"]["data"][key], value), key
    assert torch.equal(back["reward_returns"], whole["reward_returns"])
    same = regroup_parts([whole], 0, 8, 8)  # the saved partition keeps the saved generator
    assert torch.equal(same["noise_generator"], whole["noise_generator"])


def test_a_regrouped_part_restores_the_learners_replay() -> None:
    alg = _trained()
    whole = whole_part(alg.state_dict())
    env = ReachEnv(4, env_id_offset=4)
    fresh = SAC.from_env(env, tiny_cfg(), seed=1)
    part = regroup_parts([whole], 4, 4, 8)
    part["noise_generator"] = fresh.noise_generator.get_state()
    sac_checkpoint.load_rank_state_dict(fresh, part)
    assert torch.equal(fresh.replay.data["obs", "policy"], alg.replay.data["obs", "policy"][:, 4:])
    assert (fresh.replay.pos, fresh.replay.size, fresh.replay.steps) == (alg.replay.pos, alg.replay.size, 6)


def test_parts_that_disagree_or_hold_too_few_envs_are_refused() -> None:
    whole = whole_part(_trained().state_dict())
    with pytest.raises(ValueError, match="it holds the replay of 8 envs, this run has 16"):
        regroup_parts([whole], 8, 8, 16)
    other = {**whole, "replay": {**whole["replay"], "pos": whole["replay"]["pos"] + 1}}
    with pytest.raises(ValueError, match="different positions"):
        regroup_parts([whole, other], 0, 16, 16)

"""Episode statistics accumulated on the device and read once."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from redline.runners.episodes import EpisodeTracker, randomize_episode_lengths
from redline.seeding.streams import EnvStreams


def test_means_over_finished_episodes_in_the_window() -> None:
    t = EpisodeTracker(2, "cpu")
    # env 0 finishes after 2 steps with return 1+2=3; env 1 after 3 steps with return 1+1+1=3
    t.step(torch.tensor([1.0, 1.0]), torch.tensor([0, 0]))
    t.step(torch.tensor([2.0, 1.0]), torch.tensor([1, 0]), log={"Metrics/success_rate": torch.tensor(1.0)})
    t.step(torch.tensor([5.0, 1.0]), torch.tensor([0, 1]), log={"Metrics/success_rate": torch.tensor(0.0)})
    out = t.read()
    assert out["mean_reward"] == pytest.approx(3.0) and out["mean_episode_length"] == pytest.approx(2.5)
    assert out["episode/success_rate"] == pytest.approx(0.5)
    # env 0's new episode (return 5 so far) carries on; a window with no finished episode keeps the last means
    out = t.read()
    assert out["mean_reward"] == pytest.approx(3.0) and "episode/success_rate" not in out
    t.step(torch.tensor([1.0, 0.0]), torch.tensor([1, 0]))
    assert t.read()["mean_reward"] == pytest.approx(6.0)


def test_before_any_episode_the_means_are_none() -> None:
    t = EpisodeTracker(3, "cpu")
    t.step(torch.ones(3), torch.zeros(3))
    assert t.read() == {"mean_reward": None, "mean_episode_length": None}


class _Env:
    """An rsl_rl vec env's episode fields, with redline task streams on ``unwrapped``."""

    def __init__(self, num_envs: int, strategy: str, offset: int = 0) -> None:
        self.episode_length_buf = torch.zeros(num_envs, dtype=torch.long)
        self.max_episode_length = 300
        self.unwrapped = SimpleNamespace(streams=EnvStreams(strategy, 7, num_envs, "cpu", env_id_offset=offset))


def test_random_episode_lengths_are_per_env_and_partition_invariant() -> None:
    whole, halves = _Env(64, "per_env"), [_Env(32, "per_env", offset=o) for o in (0, 32)]
    for env in (whole, *halves):
        randomize_episode_lengths(env)
    buf = whole.episode_length_buf
    assert buf.dtype == torch.long and int(buf.min()) >= 0 and int(buf.max()) < 300
    assert len(set(buf.tolist())) > 32  # spread over the episode, not one wave
    # env g draws its offset from its own stream: 2 processes x 32 envs give exactly 1 x 64's offsets
    assert torch.equal(buf, torch.cat([h.episode_length_buf for h in halves]))


def test_random_episode_lengths_under_shared_use_torch_generator() -> None:
    env = _Env(64, "shared")
    torch.manual_seed(0)
    randomize_episode_lengths(env)
    torch.manual_seed(0)
    assert torch.equal(env.episode_length_buf, torch.randint_like(env.episode_length_buf, high=300))

"""Episode statistics accumulated on the device and read once."""

from __future__ import annotations

import pytest
import torch

from redline.training.episodes import EpisodeTracker


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

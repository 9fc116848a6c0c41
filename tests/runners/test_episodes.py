"""Episode statistics accumulated on the device and read once."""

from __future__ import annotations

import statistics
from types import SimpleNamespace

import pytest
import torch
from rsl_rl.utils.logger import Logger as RslLogger

from redline.runners.episodes import EpisodeTracker, randomize_episode_lengths
from redline.runners.rsl_rl_runner import MetricsLogger
from redline.seeding.streams import EnvStreams


def test_window_and_history_means() -> None:
    t = EpisodeTracker(2, "cpu")
    # env 0 finishes after 2 steps with return 1+2=3; env 1 after 3 steps with return 1+1+1=3
    t.step(torch.tensor([1.0, 1.0]), torch.tensor([0, 0]))
    t.step(torch.tensor([2.0, 1.0]), torch.tensor([1, 0]), extras={"log": {"Metrics/success_rate": torch.tensor(1.0)}})
    t.step(torch.tensor([5.0, 1.0]), torch.tensor([0, 1]), extras={"log": {"Metrics/success_rate": torch.tensor(0.0)}})
    out = t.read()
    assert out["mean_reward"] == pytest.approx(3.0) and out["mean_episode_length"] == pytest.approx(2.5)
    assert out["mean_reward_window"] == pytest.approx(3.0)
    assert out["episode/Metrics/success_rate"] == pytest.approx(0.5)
    # a window with no finished episode: no window mean, the history keeps its means
    out = t.read()
    assert out["mean_reward_window"] is None and out["mean_reward"] == pytest.approx(3.0)
    assert "episode/Metrics/success_rate" not in out
    t.step(torch.tensor([1.0, 0.0]), torch.tensor([1, 0]))  # env 0's second episode: 5 + 1 = 6 in 2 steps
    out = t.read()
    assert out["mean_reward_window"] == pytest.approx(6.0) and out["mean_reward"] == pytest.approx(4.0)
    assert out["mean_episode_length"] == pytest.approx(7 / 3)


def test_history_is_rsl_rl_last_100_episodes() -> None:
    """The same statistic as rsl_rl's ``Train/mean_reward`` and ``Train/mean_episode_length``: rsl_rl 5.5.1's own
    ``Logger`` (its ``rewbuffer``/``lenbuffer`` deques of the last 100 episodes, extended in env order, fp32 running
    sums) fed the same steps, including one where more than 100 envs finish at once."""
    gen = torch.Generator().manual_seed(0)
    num_envs = 150  # more than 100 may finish in one step
    t = EpisodeTracker(num_envs, "cpu")
    rsl = RslLogger(None, {"algorithm": {}}, {}, num_envs, False, 1, 0, "cpu")
    rsl.writer = SimpleNamespace()  # rsl_rl fills its buffers only when it has a writer; nothing is written here
    for step in range(40):
        rewards = torch.rand(num_envs, generator=gen) - 0.3
        dones = (torch.rand(num_envs, generator=gen) < (0.9 if step == 20 else 0.1)).long()
        t.step(rewards, dones)
        rsl.process_env_step(rewards, dones, {})
        if step % 7 == 0 or step == 20:
            out = t.read()
            assert out["mean_reward"] == pytest.approx(statistics.mean(rsl.rewbuffer), rel=1e-6, abs=1e-6), step
            assert out["mean_episode_length"] == pytest.approx(statistics.mean(rsl.lenbuffer), rel=1e-6), step


def test_log_keys_stay_apart() -> None:
    t = EpisodeTracker(1, "cpu")
    log = {"Episode_Reward/x": torch.tensor(1.0), "Episode_Termination/x": torch.tensor(0.0)}
    t.step(torch.ones(1), torch.ones(1), extras={"log": log})
    out = t.read()
    assert out["episode/Episode_Reward/x"] == 1.0 and out["episode/Episode_Termination/x"] == 0.0


def test_a_nan_reward_does_not_poison_the_statistics() -> None:
    t = EpisodeTracker(2, "cpu")
    t.step(torch.tensor([float("nan"), 1.0]), torch.tensor([1, 1]))
    t.step(torch.tensor([2.0, 2.0]), torch.tensor([1, 1]))
    assert t.read()["mean_reward_window"] == pytest.approx(5 / 4)


def test_before_any_episode_the_means_are_none() -> None:
    t = EpisodeTracker(3, "cpu")
    t.step(torch.ones(3), torch.zeros(3))
    assert t.read() == {
        "mean_reward": None,
        "mean_episode_length": None,
        "mean_reward_window": None,
        "episodes": 0,
        "time_outs": 0,
    }


def test_episode_and_time_out_counts_are_exact_per_window() -> None:
    """``episodes`` / ``time_outs`` count the episodes that ended in the window and those the time limit ended,
    where ``extras["log"]`` repeats the last resets' figures until the next reset; the rsl_rl learner's logger
    (:class:`MetricsLogger`) counts the same steps alike."""
    gen = torch.Generator().manual_seed(2)
    t = EpisodeTracker(64, "cpu")
    rsl = MetricsLogger(
        1,
        log_dir=None,
        cfg={"algorithm": {}},
        env_cfg={},
        num_envs=64,
        is_distributed=False,
        gpu_world_size=1,
        gpu_global_rank=0,
        device="cpu",
    )
    rsl.writer = SimpleNamespace()  # rsl_rl files episodes only when it has a writer; nothing is written here
    for window in range(3):
        expected = [0, 0]
        for _ in range(7):
            dones = torch.rand(64, generator=gen) < 0.2
            time_outs = dones & (torch.rand(64, generator=gen) < 0.5)
            extras = {"time_outs": time_outs, "log": {"Episode_Termination/time_out": torch.tensor(99.0)}}
            t.step(torch.rand(64, generator=gen), dones.long(), extras)
            rsl.process_env_step(torch.rand(64, generator=gen), dones.long(), extras)
            expected[0] += int(dones.sum())
            expected[1] += int(time_outs.sum())
        out = t.read()
        assert 0 < expected[1] < expected[0], window
        assert (out["episodes"], out["time_outs"]) == tuple(expected) == tuple(rsl._counts), window
        rsl._counts = [0, 0]  # what its per-iteration log does
    t.step(torch.ones(64), torch.ones(64))  # no extras["time_outs"]: ended, none counted as a time-out
    out = t.read()
    assert (out["episodes"], out["time_outs"]) == (64, 0)


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


def test_filing_in_chunks_equals_filing_at_the_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps are filed into the statistics at ``read`` (or every ``PENDING_STEPS`` steps, so a caller that never
    reads keeps bounded memory): filing every 3 steps gives the same statistics as filing 40 steps at once, with
    steps where more than HISTORY envs finish."""
    gen = torch.Generator().manual_seed(1)
    steps = [
        (torch.rand(150, generator=gen), (torch.rand(150, generator=gen) < p).long())
        for p in [0.1] * 20 + [0.9] * 3 + [0.2] * 17
    ]
    once, chunked = EpisodeTracker(150, "cpu"), EpisodeTracker(150, "cpu")
    monkeypatch.setattr(chunked, "PENDING_STEPS", 3)
    for rewards, dones in steps:
        once.step(rewards, dones)
        chunked.step(rewards, dones)
        assert len(chunked._pending) < 3
    assert len(once._pending) == 40
    a, b = once.read(), chunked.read()
    assert a["mean_reward"] == b["mean_reward"] and a["mean_episode_length"] == b["mean_episode_length"]
    assert a["mean_reward_window"] == pytest.approx(b["mean_reward_window"], rel=1e-6)


def test_a_restored_tracker_reads_as_the_one_it_was_taken_from() -> None:
    """The runner's checkpoint holds the tracker's state (issue 37 item 2): running episodes and the last 100."""
    steps = [(torch.rand(4), torch.rand(4) < 0.3) for _ in range(40)]
    a = EpisodeTracker(4, "cpu")
    for rewards, dones in steps[:30]:
        a.step(rewards, dones)
    a.read()
    b = EpisodeTracker(4, "cpu")
    b.step(torch.ones(4), torch.ones(4, dtype=torch.bool))  # state of its own, overwritten
    b.load_state_dict(a.state_dict())
    for rewards, dones in steps[30:]:
        a.step(rewards, dones)
        b.step(rewards, dones)
    assert a.read() == b.read()
    with pytest.raises(ValueError, match="return has shape"):
        EpisodeTracker(3, "cpu").load_state_dict(a.state_dict())

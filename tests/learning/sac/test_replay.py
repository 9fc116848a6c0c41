"""The replay ring buffer: n-step returns by hand, wraparound, partition-invariant sampling, exact state round trip."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from redline.learning.sac.replay import ReplayBuffer

KEY = (7, 11)


def obs_of(values: torch.Tensor) -> TensorDict:
    """Observation ``(N, 2)`` whose both entries are ``values`` (one per env)."""
    return TensorDict({"policy": values.float().unsqueeze(-1).expand(-1, 2).clone()}, batch_size=[values.shape[0]])


def fill(buf: ReplayBuffer, steps: int, env_ids: torch.Tensor, done_at: dict[int, str] | None = None) -> None:
    """Write ``steps`` steps: obs = 100 g + t, reward = t + 1 (env g global), next obs = obs + 0.5; ``done_at`` maps
    a step to ``"terminated"`` or ``"time_out"`` (every env)."""
    done_at = done_at or {}
    n = env_ids.shape[0]
    for t in range(steps):
        kind = done_at.get(t)
        dones = torch.full((n,), kind is not None)
        time_outs = torch.full((n,), kind == "time_out")
        base = 100.0 * env_ids + t
        buf.add(obs_of(base), base.unsqueeze(-1), torch.full((n,), t + 1.0), dones, time_outs, obs_of(base + 0.5))


def test_n_step_returns_stop_at_episode_ends_and_bootstrap_only_through_time_outs() -> None:
    env_ids = torch.arange(4)
    buf = ReplayBuffer(16, obs_of(env_ids), ["policy"], 1)
    fill(buf, 10, env_ids, {3: "terminated", 6: "time_out"})
    gamma = 0.5
    seen = set()
    for update in range(40):
        s = buf.sample(KEY, torch.tensor(update), 64, 3, gamma)
        for i in range(64):
            t = int(s["obs", "policy"][i, 0]) % 100
            seen.add(t)
            # by hand: windows of up to 3 steps, cut after step 3 (terminated) and step 6 (timed out) and at step 9
            steps = {0: 3, 1: 3, 2: 2, 3: 1, 4: 3, 5: 2, 6: 1, 7: 3, 8: 2, 9: 1}[t]
            ret = sum(gamma**k * (t + k + 1) for k in range(steps))
            last = t + steps - 1
            disc = 0.0 if last == 3 else gamma**steps
            assert float(s["rewards"][i]) == pytest.approx(ret), t
            assert float(s["discounts"][i]) == pytest.approx(disc), t
            assert int(s["next_obs", "policy"][i, 0] * 2) % 200 == 2 * last + 1, t  # next obs of the window's last
            assert float(s["actions"][i, 0]) == float(s["obs", "policy"][i, 0])
    assert seen == set(range(10))


def test_the_ring_overwrites_the_oldest_and_samples_only_what_it_holds() -> None:
    env_ids = torch.arange(3)
    buf = ReplayBuffer(5, obs_of(env_ids), ["policy"], 1)
    fill(buf, 12, env_ids)  # steps 7..11 remain
    assert (buf.size, buf.pos, buf.steps) == (5, 2, 12)
    times = set()
    for update in range(30):
        s = buf.sample(KEY, torch.tensor(update), 30, 2, 1.0)
        t = (s["obs", "policy"][:, 0] % 100).long()
        times |= set(t.tolist())
        # the window never crosses from the newest slot into the oldest one
        expected = torch.where(t == 11, 12.0, (t + 1.0) + (t + 2.0))
        torch.testing.assert_close(s["rewards"], expected)
    assert times == set(range(7, 12))
    newest = buf.newest(2)["policy"][:, 0]
    torch.testing.assert_close(newest % 100, torch.tensor([10.0] * 3 + [11.0] * 3))


@pytest.mark.parametrize("batch_size", [48, 50])
def test_two_partitions_sample_the_same_global_minibatch(batch_size: int) -> None:
    """One buffer of 8 envs and two of 4 (ranks 0 and 1) draw the same transitions and the same noise."""
    whole = ReplayBuffer(6, obs_of(torch.arange(8)), ["policy"], 1)
    halves = [
        ReplayBuffer(6, obs_of(torch.arange(4)), ["policy"], 1, env_offset=4 * r, global_num_envs=8) for r in range(2)
    ]
    fill(whole, 9, torch.arange(8), {4: "time_out"})
    for r, half in enumerate(halves):
        fill(half, 9, torch.arange(4 * r, 4 * r + 4), {4: "time_out"})

    def key_rows(s: TensorDict, noise: torch.Tensor) -> list[tuple[float, ...]]:
        cols = (s["obs", "policy"][:, 0], s["rewards"], s["discounts"], s["next_obs", "policy"][:, 0], *noise.T)
        return sorted(zip(*(c.tolist() for c in cols), strict=True))

    for update in (0, 1, 5):
        u = torch.tensor(update)
        one = whole.sample(KEY, u, batch_size, 3, 0.9, noise=(2, 3))
        two = torch.cat([h.sample(KEY, u, batch_size, 3, 0.9, noise=(2, 3)) for h in halves])  # type: ignore[arg-type]
        assert one.batch_size[0] == batch_size == two.batch_size[0]
        assert key_rows(one, one["noise"].reshape(batch_size, 6)) == key_rows(two, two["noise"].reshape(batch_size, 6))
    # a different update draws a different minibatch
    assert not torch.equal(whole.draw(KEY, torch.tensor(0), 48)[0], whole.draw(KEY, torch.tensor(1), 48)[0])


def test_the_draws_are_uniform_times_and_standard_normals() -> None:
    buf = ReplayBuffer(64, obs_of(torch.arange(16)), ["policy"], 1)
    fill(buf, 50, torch.arange(16))
    times, normals = buf.draw(KEY, torch.tensor(4), 16 * 500, streams=2, width=5)
    assert normals.shape == (8000, 2, 5) and times.shape == (8000,)
    assert int(times.min()) == 0 and int(times.max()) == 49
    counts = torch.bincount(times, minlength=50).float()
    assert float(counts.std() / counts.mean()) < 0.15  # ~0.079 expected for 160 draws per slot
    z = normals.reshape(-1, 10)
    assert float(z.mean().abs()) < 0.02 and abs(float(z.std()) - 1.0) < 0.02
    assert float(torch.corrcoef(z.T).fill_diagonal_(0).abs().max()) < 0.06


def test_state_round_trip_restores_the_same_samples() -> None:
    env_ids = torch.arange(4)
    buf = ReplayBuffer(8, obs_of(env_ids), ["policy"], 1)
    fill(buf, 11, env_ids, {5: "terminated"})
    state = buf.state_dict()
    other = ReplayBuffer(8, obs_of(env_ids), ["policy"], 1)
    other.load_state_dict(state)
    a, b = buf.sample(KEY, torch.tensor(3), 32, 3, 0.9), other.sample(KEY, torch.tensor(3), 32, 3, 0.9)
    assert (a == b).all()
    empty = buf.state_dict(with_data=False)
    other.load_state_dict(empty)
    assert other.size == 0 and other.pos == 0 and float(other.data["rewards"].abs().sum()) == 0.0

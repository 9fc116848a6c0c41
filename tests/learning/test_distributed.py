"""Data-parallel PPO on CPU (gloo): 2 ranks equal 1 process, NaN on one rank skips on all, a dead rank is named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from redline.learning.distributed import Communicator
from tests.learning.distributed_support import CFG, TIMEOUT_S, run, spawn_ranks


def _launch(tmp_path: Path, world: int, iterations: int, mode: str = "plain", timeout: float = 180.0) -> list[Any]:
    """Run :func:`run` on ``world`` spawned processes; returns each rank's result (None if it wrote none).

    ``timeout`` bounds the whole launch [s]: process start-up (imports) takes most of it on a loaded 2-core machine.
    """
    return spawn_ranks(run, world, (iterations, mode), tmp_path, timeout)


def test_two_ranks_compute_the_single_process_update(tmp_path: Path) -> None:
    """3 iterations of 2 ranks x 6 envs and of 1 process x 12 envs (per-env streams, uneven minibatch shares,
    micro-batches, obs and value normalisation): the ranks hold identical parameters, equal to the single
    process's up to summation order; one collective per minibatch plus three per iteration."""
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (single,) = _launch(one, 1, 3)
    ranks = _launch(two, 2, 3)
    for r in ranks:
        assert "error" not in r, r.get("error")
    assert torch.equal(ranks[0]["params"], ranks[1]["params"])
    ref = single["params"]
    assert (ranks[0]["params"] - ref).abs().max() <= 1e-5 * ref.abs().max()
    assert torch.allclose(ranks[0]["obs_norm_mean"], single["obs_norm_mean"], rtol=1e-5, atol=1e-6)
    assert torch.allclose(ranks[0]["value_norm"], single["value_norm"], rtol=1e-5)
    steps = CFG.num_learning_epochs * CFG.num_mini_batches
    # per iteration: the rollout statistics, `steps` gradient all-reduces, the observation normalisers
    assert ranks[0]["calls"] == [steps + 2] * 3 and single["calls"] == [0] * 3


def test_nan_on_one_rank_skips_that_step_on_every_rank(tmp_path: Path) -> None:
    ranks = _launch(tmp_path, 2, 3, mode="nan")  # a hang would fail at the launch timeout
    for r in ranks:
        assert "error" not in r, r.get("error")
        assert r["train_s"] < 60.0  # the training itself, after the processes' start-up
    assert ranks[0]["skipped"] == ranks[1]["skipped"] == [1, 0, 0]
    assert torch.equal(ranks[0]["params"], ranks[1]["params"])
    assert torch.isfinite(ranks[0]["params"]).all()


def test_a_dead_rank_is_named_by_the_survivor_within_the_timeout(tmp_path: Path) -> None:
    survivor, dead = _launch(tmp_path, 2, 3, mode="kill")
    assert dead is None  # rank 1 was killed before writing anything
    assert survivor is not None and "error" in survivor
    assert "rank 1 of 2 stopped answering" in survivor["error"], survivor["error"]
    assert "\n" not in survivor["error"]  # one line for the user
    assert survivor["error_at"] - float((tmp_path / "killed_at").read_text()) < TIMEOUT_S


def test_single_process_communicator_makes_no_calls() -> None:
    comm = Communicator()
    x = torch.arange(3.0)
    assert torch.equal(comm.all_reduce_(x.clone()), x)
    assert torch.equal(comm.all_gather(x), x.unsqueeze(0))
    comm.broadcast_([x])
    comm.check_replicas(x)
    assert comm.take_stats() == (0, 0.0)


def test_ppo_without_communicator_is_a_world_of_one() -> None:
    from redline.bench.shapes import DummyVecEnv
    from redline.learning import PPO

    env = DummyVecEnv(num_envs=6, num_obs=4, critic_obs=True)
    alg = PPO.from_env(env, CFG)
    assert (alg.comm.world_size, alg.env_offset, alg.global_num_envs) == (1, 0, 6)

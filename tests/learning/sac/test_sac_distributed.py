"""Data-parallel SAC on CPU (gloo): 2 ranks x 4 envs make the updates of 1 process x 8 envs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tests.learning.distributed_support import spawn_ranks
from tests.learning.sac.sac_distributed_support import CFG, run


def _launch(out: Path, world: int, iterations: int, timeout: float = 180.0, variant: str = "sac") -> list[Any]:
    out.mkdir()
    return spawn_ranks(run, world, (iterations, variant), out, timeout)


@pytest.mark.parametrize("variant", ["sac", "td3"])
def test_two_ranks_make_the_single_process_updates(tmp_path: Path, variant: str) -> None:
    """4 iterations (1 before learning starts, then 3 x 4 gradient steps): the ranks stay bitwise identical and
    equal to one process up to summation order; one all-reduce per gradient step plus one all-gather of the
    normalisers' moments per iteration. TD3 too (its per-env noise stds by global env id)."""
    (tmp_path / "one").mkdir()
    threads = torch.get_num_threads()
    try:  # the single process runs here: one spawn fewer
        run(0, 1, 0, tmp_path / "one", 4, variant)
    finally:
        torch.set_num_threads(threads)
    single = torch.load(tmp_path / "one" / "rank0.pt")
    ranks = _launch(tmp_path / "two", 2, 4, variant=variant)
    for r in (single, *ranks):
        assert "error" not in r, r.get("error")
    assert torch.equal(ranks[0]["params"], ranks[1]["params"])
    ref = single["params"]
    assert (ranks[0]["params"] - ref).abs().max() <= 1e-5 * ref.abs().max()
    assert torch.allclose(ranks[0]["obs_norm_mean"], single["obs_norm_mean"], rtol=1e-5, atol=1e-6)
    for key in ("critic_loss", "actor_loss", "q_mean"):
        assert abs(ranks[0]["metrics"][key] - single["metrics"][key]) <= 1e-4 * (1 + abs(single["metrics"][key]))
    steps = CFG.num_steps_per_env * CFG.updates_per_step
    assert ranks[0]["calls"] == [1] + [steps + 1] * 3
    assert single["calls"] == [0] * 4

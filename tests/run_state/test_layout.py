"""Env layouts of saved run-state values: each kind regroups per env by global id onto another process count, and
what no owner declared and no shape tells is refused, never guessed."""

from __future__ import annotations

import pytest
import torch

from redline.run_state import layout as lay


def _parts(per_env: int, dim: int, counts: list[int]) -> list[torch.Tensor]:
    """Each part's array, env ``g``'s entries equal to ``g`` (ids continue across parts), env axis ``dim``."""
    out, first = [], 0
    for n in counts:
        ids = torch.arange(first, first + n, dtype=torch.float32).repeat_interleave(per_env)  # env-major rows
        value = ids[:, None].expand(-1, 3).clone()  # (n * per_env, 3)
        out.append(value.unsqueeze(0).expand(2, -1, -1).clone().movedim(1, dim) if dim else value)
        first += n
    return out


@pytest.mark.parametrize(
    ("layout", "per_env", "dim"),
    [
        (lay.ENV, 1, 0),  # (num_envs, 3): env buffers, MuJoCo data, episode lengths
        (lay.flat(4), 4, 0),  # (num_envs * 4, 3): a contact sensor's flat views
        (lay.axis(1), 1, 1),  # (2, num_envs, 3): a time-major history, a recurrent hidden state
    ],
)
def test_a_per_env_layout_takes_each_envs_rows_from_the_part_that_held_it(layout: str, per_env: int, dim: int) -> None:
    saved = _parts(per_env, dim, [3, 3])  # two ranks x 3 envs
    rows = torch.tensor([4, 0, 5, 1, 2])  # five envs of the six, in another order
    value = lay.regroup_value(layout, saved, [3, 3], rows, live=None)
    assert lay.check_layout(layout, value, 5)
    env_axis = value.movedim(dim, 0)
    expected = rows.float().repeat_interleave(per_env)
    assert torch.equal(env_axis[..., 0] if dim == 0 else env_axis[:, 0, 0], expected)
    whole = lay.regroup_value(layout, saved, [3, 3], torch.arange(6), live=None)  # one process: the parts joined
    assert torch.equal(whole, torch.cat(saved, dim=dim))


def test_shared_values_come_from_rank_0_and_local_ones_stay_live() -> None:
    origins = [torch.ones(10, 10, 3), torch.full((10, 10, 3), 2.0)]  # a terrain's: 10 rows, as many as the envs
    assert torch.equal(lay.regroup_value(lay.SHARED, origins, [10, 10], torch.arange(20), None), origins[0])
    indices = torch.arange(7)
    assert lay.regroup_value(lay.LOCAL, [torch.zeros(3), torch.ones(3)], [3, 3], torch.arange(6), indices) is indices


def test_shapes_tell_only_leading_env_rows_the_rest_is_unknown_until_declared() -> None:
    tree = {"a": torch.zeros(5, 2), "b": torch.zeros(10, 3), "c": 3, "d": torch.tensor(1.0), "e": {"f": torch.ones(5)}}
    assert lay.describe(tree, 5) == {"a": "env", "b": "unknown", "c": "shared", "d": "shared", "e/f": "env"}
    assert lay.describe(tree, 5, {"b": lay.flat(2)})["b"] == "env:2"
    with pytest.raises(ValueError, match="unknown"):
        lay.regroup_value(lay.UNKNOWN, [torch.zeros(10, 3)] * 2, [5, 5], torch.arange(10), None)
    with pytest.raises(ValueError, match="does not describe"):  # a declared layout the saved shape contradicts
        lay.regroup_value(lay.flat(3), [torch.zeros(10, 3)] * 2, [5, 5], torch.arange(10), None)

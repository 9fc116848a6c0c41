"""Checkpoints: atomic writes, validated loads, ``latest`` resolution."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from redline.errors import UserError
from redline.outputs import checkpoints
from redline.outputs.checkpoints import load_checkpoint, save_atomic


def _ckpt(it: int) -> dict:
    return {"actor_state_dict": {"w": torch.full((2,), float(it))}, "critic_state_dict": {}, "iter": it, "infos": None}


def test_round_trip_with_weights_only(tmp_path: Path) -> None:
    save_atomic(_ckpt(7), tmp_path / "model_7.pt")
    data = load_checkpoint(tmp_path / "model_7.pt")
    assert data["iter"] == 7 and torch.equal(data["actor_state_dict"]["w"], torch.full((2,), 7.0))
    assert [p.name for p in tmp_path.iterdir()] == ["model_7.pt"]


def test_a_save_killed_midway_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "model_1.pt"
    save_atomic(_ckpt(1), path)

    def dies_halfway(obj, f, *args, **kwargs):
        f.write(b"PK\x03\x04 half a zip")
        raise KeyboardInterrupt  # the process is killed while writing

    monkeypatch.setattr(torch, "save", dies_halfway)
    with pytest.raises(KeyboardInterrupt):
        save_atomic(_ckpt(2), path)
    monkeypatch.undo()
    assert load_checkpoint(path)["iter"] == 1  # still the complete old checkpoint
    assert [p.name for p in tmp_path.iterdir()] == ["model_1.pt"]  # no temp file left behind


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "not a readable checkpoint"), (b"garbage" * 10, "not a readable checkpoint"), (None, "missing")],
)
def test_corrupt_or_foreign_files_are_user_errors(tmp_path: Path, content: bytes | None, message: str) -> None:
    path = tmp_path / "model_0.pt"
    if content is None:
        torch.save({"something": 1}, path)
    else:
        path.write_bytes(content)
    with pytest.raises(UserError, match=message):
        load_checkpoint(path)


def test_pickled_code_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "model_0.pt"
    torch.save({**_ckpt(0), "infos": Path("/etc")}, path)  # an arbitrary object needs unpickling code
    with pytest.raises(UserError, match="not a readable checkpoint"):
        load_checkpoint(path)


def test_a_checkpoint_holding_nan_is_refused_naming_the_tensor(tmp_path: Path) -> None:
    """Play, its export and a resume would take NaN weights without a word (issue 37, item 7)."""
    state = _ckpt(3)
    state["actor_state_dict"] = {"mlp.0.weight": torch.tensor([[1.0, float("nan")], [float("inf"), 2.0]])}
    path = tmp_path / "model_3.pt"
    torch.save(state, path)
    with pytest.raises(UserError) as caught:
        load_checkpoint(path, option="--resume")
    assert str(caught.value) == (
        f"--resume: '{path}' holds non-finite values in actor_state_dict.mlp.0.weight (1 NaN, 1 Inf of 4); it "
        "cannot be played, exported or resumed (use an earlier checkpoint)"
    )


def test_first_nonfinite_looks_into_nested_state_and_skips_integers() -> None:
    nested = {"a": [torch.zeros(2), {"b": torch.tensor([float("-inf")])}], "n": torch.tensor([2**62]), "x": None}
    assert checkpoints.first_nonfinite(nested) == "a.1.b (1 Inf of 1)"  # list items by index
    assert checkpoints.first_nonfinite({"w": torch.ones(3, dtype=torch.bfloat16), "s": "text", "i": 7}) is None


def test_a_non_finite_checkpoint_is_never_written(tmp_path: Path) -> None:
    save_atomic(_ckpt(1), tmp_path / "model_1.pt")
    bad = {**_ckpt(2), "critic_state_dict": {"v": torch.tensor([float("nan")])}}
    with pytest.raises(checkpoints.NonFiniteCheckpoint, match=r"not writing .*model_2\.pt.*critic_state_dict\.v"):
        save_atomic(bad, tmp_path / "model_2.pt")
    assert [p.name for p in tmp_path.iterdir()] == ["model_1.pt"]

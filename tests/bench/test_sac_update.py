"""The ``sac_update`` section of ``redline bench gpu`` at its tiny size on the CPU (seconds, no simulator)."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from redline.bench import gpu, sac_update


@pytest.fixture(scope="module")
def result() -> dict:
    return sac_update.bench("cpu", tiny=True)


def test_every_row_is_timed_over_a_full_update(result: dict) -> None:
    assert set(result["rows"]) == set(sac_update.ROWS) == {"fp32", "bf16", "bf16_captured"}
    for name, row in result["rows"].items():
        assert row["precision"] == sac_update.ROWS[name][0]
        # one update per env step: updates_per_step gradient steps, as the learner itself counted them
        assert row["gradient_steps"] == result["updates_per_step"] == 8
        assert row["update_ms"] > 0 and row["gradient_step_ms"] == pytest.approx(row["update_ms"] / 8)
        assert row["finite"]
    fp32 = result["rows"]["fp32"]["update_ms"]
    assert result["bf16_to_fp32"] == pytest.approx(result["rows"]["bf16"]["update_ms"] / fp32)
    assert result["captured_to_fp32"] == pytest.approx(result["rows"]["bf16_captured"]["update_ms"] / fp32)
    assert result["shape"] == "tiny" and result["timed_updates"] == 2


def test_the_captured_row_says_what_ran(result: dict) -> None:
    """On the CPU ``auto`` is eager (CUDA graphs need CUDA); the eager rows are eager everywhere."""
    assert result["capture"] == result["rows"]["bf16_captured"]["capture"] == "eager"
    assert result["rows"]["fp32"]["capture"] == result["rows"]["bf16"]["capture"] == "eager"


def test_tiny_rehearses_fastsacs_update_at_a_smaller_size() -> None:
    fast, tiny = sac_update.FASTSAC.cfg, sac_update.TINY.cfg
    assert (sac_update.FASTSAC.num_envs, fast.batch_size, fast.updates_per_step) == (4096, 8192, 8)
    sizes = {"buffer_size_per_env", "batch_size", "actor", "critic"}
    for field in dataclasses.fields(fast):
        if field.name not in sizes:
            assert getattr(tiny, field.name) == getattr(fast, field.name), field.name


def test_build_fills_the_replay_with_endings_of_both_kinds() -> None:
    alg = sac_update.build(sac_update.TINY, "fp32", "cpu")
    replay = alg.replay
    assert replay.size == replay.capacity == sac_update.TINY.cfg.buffer_size_per_env
    time_outs, dones = replay.data["time_outs"], replay.data["dones"]
    assert time_outs.any() and (dones & ~time_outs).any()


def test_sac_only_runs_the_section_alone(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    gpu.add_arguments(parser)
    args = parser.parse_args(["--sac-only", "--quick"])
    args.device = "cpu"
    out = gpu.run(args)
    assert set(out) == {"device", "torch", "sac_update"} and set(out["sac_update"]["rows"]) == set(sac_update.ROWS)
    gpu.show(out)
    assert "bf16 captured / fp32" in capsys.readouterr().out

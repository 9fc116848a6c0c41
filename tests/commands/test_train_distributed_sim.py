"""Multi-process training of a real task on CPU (gloo): 2 ranks x N/2 envs compute 1 process x N envs' update, and
the default CPU command arranges them by itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.sim

TRAIN = ["train", "--task", "Redline-Cartpole", "--device", "cpu"]


def _redline(*args: str | Path, environ: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    (proc,) = _redlines([args], environ)
    return proc


def _redlines(
    commands: list[tuple[str | Path, ...]], environ: dict[str, str] | None = None
) -> list[subprocess.CompletedProcess]:
    """Run ``redline <args>`` for each of ``commands`` at the same time (each one process: its start-up, mostly one
    core's imports, overlaps the others'); each must exit 0."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "redline.cli", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environ,
        )
        for args in commands
    ]
    try:
        outputs = [p.communicate(timeout=900) for p in procs]
    finally:
        for proc in procs:
            proc.kill()
    done = [subprocess.CompletedProcess(p.args, p.returncode, *out) for p, out in zip(procs, outputs, strict=True)]
    for proc in done:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return done


def _run_dir(log_root: Path) -> Path:
    (run,) = (log_root / "redline_cartpole").iterdir()
    return run


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def _params(path: Path) -> torch.Tensor:
    state = torch.load(path, weights_only=True)
    tensors = [*state["actor_state_dict"].values(), *state["critic_state_dict"].values()]
    return torch.cat([t.float().reshape(-1) for t in tensors])


def test_two_ranks_match_one_process_and_resume_on_one(tmp_path: Path) -> None:
    """3 iterations of Redline-Cartpole, per-env seeding, fp32, a fixed learning rate: the default command with 512
    envs on 2 cores (2 gloo ranks x 256 envs, arranged by itself) and 1 process x 512 envs (``--nproc 1``) end with
    the same weights (1e-5 relative); rank 0 logs global figures; the 2-rank checkpoint resumes on 1 process.

    Why fixed: on a 2-core Intel Xeon (AMX-BF16), 2026-12-08, the KL-adaptive default drifted 2.4e-4 (of 0.97) by
    iteration 2, where it had raised the rate to its 0.01 bound, after 3e-8 at iterations 0-1; with ``schedule=fixed``
    (1e-3 throughout) 6e-8, and a fixed 0.01 drifts 4.2e-4: the larger rate amplifies fp32 rounding of the summed
    gradients, not a different decision (docs/seeding.md). On the AMD EPYCs the adaptive default stayed within 1e-5."""
    common = [*TRAIN, "--max_iterations", "3", "--seeding", "per_env", "--precision", "fp32", "--num_envs", "512"]
    common += ["agent.algorithm.schedule=fixed"]
    automatic = {k: v for k, v in os.environ.items() if k != "REDLINE_NPROC"}  # the default: fill the cores
    two_ranks = [] if len(os.sched_getaffinity(0)) == 2 else ["--nproc", "2", "--num_envs", "256"]  # other hosts
    arranged = _redline(*common, *two_ranks, "--log_root", tmp_path / "two", environ=automatic)
    if not two_ranks:
        assert "2 processes x 256 envs" in arranged.stderr
    two = _run_dir(tmp_path / "two")
    # the single-process reference, and the 2-rank checkpoint resumed on one process (it holds every rank's seeding
    # counters: the same 512 global envs), side by side
    resume = (
        *TRAIN,
        "--num_envs",
        "512",
        "--max_iterations",
        "1",
        "--resume",
        two,
        "--log_root",
        tmp_path / "two",
        "agent.algorithm.schedule=fixed",
    )
    _redlines([(*common, "--nproc", "1", "--log_root", tmp_path / "one"), resume])
    one = _run_dir(tmp_path / "one")
    ref = _params(one / "model_2.pt")
    assert (_params(two / "model_2.pt") - ref).abs().max() <= 1e-5 * ref.abs().max()

    records, single = _records(two), _records(one)
    assert [r["env_steps"] for r in records] == [r["env_steps"] for r in single]  # global steps, 512 envs
    assert all(r["world_size"] == 2 and r["allreduce_s"] > 0 for r in records)
    gradient_steps = 5 * 4  # epochs x minibatches: one all-reduce each, plus the rollout and normaliser gathers
    assert all(gradient_steps + 1 <= r["collectives"] <= gradient_steps + 2 for r in records), records
    assert all(r["collectives"] == 0 for r in single)
    # each rank's own figures reach rank 0's record, with the straggler verdict (None when even)
    assert all(len(r["ranks"]) == 2 and r["ranks"][1]["env_s"] > 0 and "straggler" in r for r in records)
    assert all("ranks" not in r for r in single)

    resumed = [d for d in (tmp_path / "two" / "redline_cartpole").iterdir() if d != two]
    assert [r["iteration"] for r in _records(resumed[0])] == [3]


def test_sac_two_ranks_match_one_process(tmp_path: Path) -> None:
    """Issue 46 item 5: ``--algorithm sac``, 3 iterations of 16 global envs: 2 gloo ranks x 8 envs and 1 process x 16
    make the same updates (1e-5 relative): per-rank replay, minibatches drawn by global env id, one all-reduce of
    the gradients per step."""
    from tests.commands.test_kill_resume_sim import SAC_TINY

    common = [*TRAIN, "--max_iterations", "3", "--seeding", "per_env", "--precision", "fp32", *SAC_TINY]
    _redlines(
        [
            (*common, "--nproc", "2", "--num_envs", "8", "--log_root", tmp_path / "two"),
            (*common, "--nproc", "1", "--num_envs", "16", "--log_root", tmp_path / "one"),
        ]
    )
    (two,), (one,) = ((tmp_path / name / "redline_cartpole_sac").iterdir() for name in ("two", "one"))
    ref = _params(one / "model_2.pt")
    assert (_params(two / "model_2.pt") - ref).abs().max() <= 1e-5 * ref.abs().max()
    assert not torch.equal(ref, _params(one / "model_0.pt"))  # it did learn something in between
    assert all(r["world_size"] == 2 for r in _records(two))


@pytest.mark.slow
@pytest.mark.extended  # ~2 min; the partition's equivalence is the test above
def test_two_ranks_learn_to_balance(tmp_path: Path) -> None:
    """README command 1's experiment (256 global envs, seed 42) on 2 gloo ranks x 128 envs reaches the single
    process's threshold: a mean return >= 4.9 over the episodes finishing in an iteration (``mean_reward_window``;
    the last-100-episodes ``mean_reward`` lags it by several iterations, more than 80 iterations allow)."""
    _redline(*TRAIN, "--num_envs", "128", "--nproc", "2", "--max_iterations", "80", "--log_root", tmp_path)
    best = max(r["mean_reward_window"] or 0.0 for r in _records(_run_dir(tmp_path)))
    assert best >= 4.9


@pytest.mark.slow
@pytest.mark.extended  # ~90 s (three 2-rank runs); passed by hand 2026-12-06 (and fails without the per-rank parts)
def test_sac_two_ranks_resume_bitwise(tmp_path: Path) -> None:
    """A 2-rank SAC checkpoint holds each rank's replay and exploration generator (``sac_ranks``): 2 iterations then
    ``--resume`` for 2 more end bit for bit as 4 iterations in one go, on 2 ranks."""
    from tests.commands.test_kill_resume_sim import SAC_TINY

    common = [*TRAIN, "--seeding", "per_env", "--precision", "fp32", "--nproc", "2", "--num_envs", "8", *SAC_TINY]
    common += ["agent.save_interval=2"]
    _redlines(
        [
            (*common, "--max_iterations", "4", "--log_root", tmp_path / "straight"),
            (*common, "--max_iterations", "2", "--log_root", tmp_path / "cut"),
        ]
    )
    ((cut,),) = [list((tmp_path / "cut" / "redline_cartpole_sac").iterdir())]
    saved = torch.load(cut / "model_1.pt", weights_only=True)
    assert len(saved["sac_ranks"]) == 2 and all(part["replay"]["data"] for part in saved["sac_ranks"])
    assert saved["sac"]["replay"]["data"] is None  # each rank's replay once, in its part
    _redline(*common, "--max_iterations", "2", "--resume", cut / "model_1.pt", "--log_root", tmp_path / "resumed")
    ends = [
        torch.load(next((tmp_path / name).glob("*/*/model_3.pt")), weights_only=True)
        for name in ("straight", "resumed")
    ]
    for part in ("actor_state_dict", "critic_state_dict"):
        assert all(torch.equal(ends[0][part][k], ends[1][part][k]) for k in ends[0][part])


@pytest.mark.slow
@pytest.mark.extended  # ~2 min (four runs); the regrouping itself is tests/learning/sac/test_sac_checkpoint.py's
def test_sac_resumes_on_another_rank_count(tmp_path: Path) -> None:
    """A SAC checkpoint resumes on another process count with the same global envs (16): 2 ranks x 8 -> 1 x 16 and
    1 x 16 -> 2 x 8, each rank's replay cut from the saved ones by global env id; both end as 4 iterations on one
    process (1e-5 relative: the partitions' sums round differently)."""
    from tests.commands.test_kill_resume_sim import SAC_TINY

    common = [*TRAIN, "--seeding", "per_env", "--precision", "fp32", *SAC_TINY, "agent.save_interval=1"]
    one, two = ("--nproc", "1", "--num_envs", "16"), ("--nproc", "2", "--num_envs", "8")
    _redlines(
        [
            (*common, *one, "--max_iterations", "4", "--log_root", tmp_path / "straight"),
            (*common, *two, "--max_iterations", "2", "--log_root", tmp_path / "cut"),
        ]
    )
    (straight,), (cut,) = ((tmp_path / name / "redline_cartpole_sac").iterdir() for name in ("straight", "cut"))
    assert len(torch.load(cut / "model_1.pt", weights_only=True)["sac_ranks"]) == 2
    _redlines(
        [
            (*common, *one, "--max_iterations", "2", "--resume", cut / "model_1.pt", "--log_root", tmp_path / "on1"),
            (
                *common,
                *two,
                "--max_iterations",
                "2",
                "--resume",
                straight / "model_1.pt",
                "--log_root",
                tmp_path / "on2",
            ),
        ]
    )
    ref = _params(straight / "model_3.pt")
    for name in ("on1", "on2"):
        end = _params(next((tmp_path / name).glob("*/*/model_3.pt")))
        assert (end - ref).abs().max() <= 1e-5 * ref.abs().max(), name
    assert not torch.equal(ref, _params(straight / "model_1.pt"))  # it did learn something in between

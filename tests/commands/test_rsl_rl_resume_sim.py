"""``--learner rsl_rl`` continued after a kill, on the real simulator (Cartpole, 16 envs, 4 iterations): the run says
once that its envs start from fresh resets (rsl_rl's runner saves no env state), and its one ``metrics.jsonl``,
TensorBoard events, ``params/agent.yaml`` and closing line read as one run."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from redline.cli import main
from redline.runners.rsl_rl_runner import FRESH_RESETS_WARNING
from tests.commands.run_support import only_run, records
from tests.runners.test_writers import tensorboard_steps

pytestmark = pytest.mark.sim


def test_a_killed_rsl_rl_run_continues_as_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log_root = tmp_path / "logs"
    argv = ["train", "--task", "Redline-Cartpole", "--num_envs", "16", "--device", "cpu", "--log_root", str(log_root)]
    argv += ["--learner", "rsl_rl", "--max_iterations", "4", "agent.save_interval=2"]
    assert main(argv) == 0  # model_0, model_2, model_3
    run = only_run(log_root, "redline_cartpole")
    (run / "model_3.pt").unlink()  # what a kill -9 between iteration 3's record and its checkpoint leaves
    capsys.readouterr()
    assert main(argv) == 0  # the same command again: it continues the run from model_2
    out = capsys.readouterr()
    assert out.err.splitlines().count(FRESH_RESETS_WARNING) == 1, out.err[-3000:]
    assert only_run(log_root, "redline_cartpole") == run and (run / "model_3.pt").is_file()
    rows = records(run)
    assert [r["iteration"] for r in rows] == [0, 1, 2, 3]
    assert [r["env_steps"] for r in rows] == [16 * 16 * (i + 1) for i in range(4)]  # continued, not restarted at 0
    clock = [r["wall_time_s"] for r in rows]
    assert all(a < b for a, b in itertools.pairwise(clock)), clock
    assert "\nmax_iterations: 4\n" in (run / "params" / "agent.yaml").read_text()  # the run's, not the 1 left
    steps = tensorboard_steps(run)
    assert steps["Loss/value"] == [0, 1, 2, 3], steps  # iteration 3's events of the killed attempt are dropped
    assert all(s == sorted(set(s)) for s in steps.values()), steps
    done = next(line for line in out.out.splitlines() if line.startswith("[redline] done in "))
    assert ": 1 iterations (3 to 3); the run: 4 iterations, 1.02 k env steps, " in done, done

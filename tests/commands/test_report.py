"""``redline report``: plots and summary from a synthetic ``metrics.jsonl``, a comparison, and bad run folders."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from redline.commands.report import FIGURES, load_run, report, summarize
from redline.errors import UserError


def _write_run(run_dir: Path, iterations: int, sps: float, reward_scale: float, env_share: float) -> Path:
    """A metrics.jsonl like the redline learner's: rewards rise, no episode finishes in iteration 0."""
    run_dir.mkdir(parents=True)
    lines = []
    for it in range(iterations):
        steps_per_it = 4096
        total_s = steps_per_it / sps
        reward = None if it == 0 else reward_scale * (1 - math.exp(-it / 10)) + 0.1 * math.sin(it)
        record = {
            "iteration": it,
            "env_steps": steps_per_it * (it + 1),
            "wall_time_s": total_s * (it + 1),
            "sps": sps * (1 + 0.05 * math.cos(it)),
            "mean_reward": reward,
            "mean_episode_length": None if it == 0 else 30.0 + 9 * it,
            "collect_s": total_s * (env_share + 0.1),
            "learn_s": total_s * (0.9 - env_share),
            "env_s": total_s * env_share,
            "inference_s": total_s * 0.08,
            "gae_s": total_s * 0.02,
            "update_s": total_s * (0.9 - env_share),
            "logging_s": 0.0 if it == 0 else total_s * 0.0,
            "bottleneck": "env-bound" if env_share >= 0.5 else "learner-bound",
            "next_action": "more envs" if env_share >= 0.5 else "fewer learning epochs",
        }
        lines.append(json.dumps(record))
    (run_dir / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return run_dir


def _assert_nontrivial_png(path: Path) -> None:
    assert path.is_file() and path.stat().st_size > 10_000, path
    with Image.open(path) as image:
        assert image.format == "PNG"
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
        assert colours is None or len(colours) > 20, f"{path.name} is (nearly) one colour"


def test_one_run_plots_and_summary(tmp_path: Path) -> None:
    run = _write_run(tmp_path / "run_a", iterations=40, sps=5000.0, reward_scale=5.0, env_share=0.7)
    text, paths = report([run])
    assert [p.name for p in paths] == list(FIGURES)
    assert all(p.parent == run / "report" for p in paths)
    for path in paths:
        _assert_nontrivial_png(path)
    summary = summarize(load_run(run))
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    rewards = [r["mean_reward"] for r in records if r["mean_reward"] is not None]
    assert summary.iterations == 40 and summary.env_steps == 40 * 4096
    assert summary.final_reward == pytest.approx(rewards[-1])
    assert summary.best_reward == pytest.approx(max(rewards))
    assert summary.best_iteration == 1 + rewards.index(max(rewards))
    assert summary.bottleneck == "env-bound" and summary.bottleneck_share == 1.0
    assert summary.split_share["env_s"] == pytest.approx(0.7)
    assert 4750 < summary.sps_median < 5250
    assert f"final {rewards[-1]:.3f}" in text
    assert "iterations 40" in text and "env-bound in 100% of iterations" in text and "env 70%" in text


def test_two_runs_are_overlaid_and_compared(tmp_path: Path) -> None:
    a = _write_run(tmp_path / "slow", iterations=30, sps=2000.0, reward_scale=4.0, env_share=0.7)
    b = _write_run(tmp_path / "fast", iterations=30, sps=8000.0, reward_scale=5.0, env_share=0.2)
    out = tmp_path / "cmp"
    text, paths = report([a, b], out)
    assert all(p.parent == out for p in paths)
    for path in paths:
        _assert_nontrivial_png(path)
    assert "slow (" in text and "fast (" in text
    assert "comparison: fast relative to slow" in text
    assert "(4.00x)" in text.split("median SPS: ")[-1].splitlines()[0]
    assert "bottleneck: learner-bound vs env-bound" in text
    assert "to reward >= " in text  # both reach 95 % of the lower best
    with Image.open(out / "time_split.png") as image:
        assert image.width > 1000  # one panel per run


def test_rsl_rl_records_split_into_collect_and_learn(tmp_path: Path) -> None:
    run_dir = tmp_path / "rsl"
    run_dir.mkdir()
    records = [
        {"iteration": i, "env_steps": 100 * (i + 1), "wall_time_s": i + 1.0, "sps": 100.0, "mean_reward": float(i),
         "mean_episode_length": 10.0, "collect_s": 0.75, "learn_s": 0.25}
        for i in range(5)
    ]  # fmt: skip
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = summarize(load_run(run_dir))
    assert summary.split_share == pytest.approx({"collect_s": 0.75, "learn_s": 0.25})
    assert summary.bottleneck is None and summary.final_reward == 4.0


@pytest.mark.parametrize(
    ("content", "expected"),
    [(None, "no metrics.jsonl at"), ("", "is empty"), ("\n", "is empty"), ("{oops\n", "line 1 is not JSON")],
)
def test_bad_run_folder(tmp_path: Path, content: str | None, expected: str) -> None:
    if content is not None:
        (tmp_path / "metrics.jsonl").write_text(content)
    with pytest.raises(UserError, match=expected):
        load_run(tmp_path)


def test_cli_bad_run_folder_is_one_line_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    proc = subprocess.run(
        [sys.executable, "-m", "redline.cli", "report", str(missing)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    expected = f"redline report: error: RUN_DIR: no metrics.jsonl at '{missing / 'metrics.jsonl'}'"
    assert proc.stderr.strip().startswith(expected) and len(proc.stderr.strip().splitlines()) == 1


def test_cli_report_prints_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from redline.cli import main

    a = _write_run(tmp_path / "a", iterations=10, sps=1000.0, reward_scale=1.0, env_share=0.6)
    b = _write_run(tmp_path / "b", iterations=10, sps=1000.0, reward_scale=1.0, env_share=0.6)
    assert main(["report", str(a), str(b), str(tmp_path / "c")]) == 2
    assert "one or two run folders, got 3" in capsys.readouterr().err
    assert main(["report", str(a)]) == 0
    assert "iterations 10" in capsys.readouterr().out
    assert (a / "report" / "report.png").is_file()

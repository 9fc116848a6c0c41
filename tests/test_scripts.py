"""The study scripts whose output backs a claim in docs: the Go1 walking criterion (scripts/walk_time.py) and its
checkpoint evaluation (scripts/walk_eval.py), the mjbatch harness that logs for it (scripts/mjbatch_walk.py), and
the rsl_rl feature studies (speed, learning)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
import torch

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(it: int, err_xy: float, err_yaw: float, time_out: float, contact: float) -> dict[str, float]:
    return {
        "iteration": it,
        "wall_time_s": 6.0 * (it + 1),
        "env_steps": 1000 * (it + 1),
        "episode/Metrics/base_velocity/error_vel_xy": err_xy,
        "episode/Metrics/base_velocity/error_vel_yaw": err_yaw,
        "episode/Episode_Termination/time_out": time_out,
        "episode/Episode_Termination/base_contact": contact,
    }


def _run(tmp_path: Path, records: list[dict[str, float]]) -> Path:
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return tmp_path


def test_walks_at_the_end_of_the_first_full_window_that_meets_all_three(tmp_path: Path) -> None:
    walk = _script("walk_time")
    records = [_record(i, 0.7, 0.6, 0.5, 0.5) for i in range(10)]  # falls and tracks badly
    records += [_record(i, 0.3, 0.3, 0.85, 0.15) for i in range(10, 20)]  # tracks, but 85 % time-outs
    records += [_record(i, 0.3, 0.3, 0.95, 0.05) for i in range(20, 30)]  # walks
    result = walk.walk_time(_run(tmp_path, records))
    assert not result["censored"]
    assert result["iteration"] == 29 and result["minutes"] == 3.0 and result["env_steps"] == 30_000
    assert abs(result["timeouts"] - 0.95) < 1e-12
    assert result["launch_minutes"] is None  # a run from before since_launch_s


def test_the_time_from_launch_is_reported_beside_the_training_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    walk = _script("walk_time")
    records = [{**_record(i, 0.3, 0.3, 0.95, 0.05), "since_launch_s": 45.0 + 6.0 * (i + 1)} for i in range(10)]
    run = _run(tmp_path, records)
    assert walk.walk_time(run)["launch_minutes"] == 1.75  # 45 s of start-up + 60 s of training
    assert walk.main([str(run)]) == 0
    out = capsys.readouterr().out
    assert "1.00 min (1.75 min from launch)" in out and "IQM wall time from launch to walk: 1.75 min" in out


def test_a_partial_window_never_walks_and_the_run_is_censored_at_its_totals(tmp_path: Path) -> None:
    walk = _script("walk_time")
    records = [_record(i, 0.7, 0.6, 0.5, 0.5) for i in range(10)]
    records += [_record(i, 0.2, 0.2, 0.99, 0.01) for i in range(10, 15)]  # stopped mid-window (SIGTERM)
    result = walk.walk_time(_run(tmp_path, records))
    assert result["censored"] and result["iteration"] == 14 and result["minutes"] == 1.5
    assert result["err_xy"] == 0.2  # the last (partial) window's figures, reported


def test_the_time_out_share_is_counted_from_the_window_s_episodes_where_the_records_have_them(tmp_path: Path) -> None:
    """A record's ``episodes`` / ``time_outs`` count the episodes that ended in its iteration; Isaac Lab's
    termination figures repeat the last resets' until the next. With the counts the window's share is theirs:
    here 3 iterations end 40 episodes (38 time-outs: 95 %) and 7 end none, while the stale log says 99 %."""
    walk = _script("walk_time")
    counts = [(20, 19), (10, 9), (10, 10)] + [(0, 0)] * 7
    records = [{**_record(i, 0.3, 0.3, 0.99, 0.01), "episodes": n, "time_outs": t} for i, (n, t) in enumerate(counts)]
    result = walk.walk_time(_run(tmp_path, records))
    assert result["timeouts"] == 38 / 40 and result["episodes"] == 40 and not result["censored"]
    records[0]["time_outs"] = 15  # 34 of 40: 85 %, below the criterion's 90 %, though the log still says 99 %
    result = walk.walk_time(_run(tmp_path, records))
    assert result["timeouts"] == 34 / 40 and result["censored"]
    del records[0]["episodes"]  # a record without the counts (an older run): the window reads the log's figures
    assert walk.walk_time(_run(tmp_path, records))["timeouts"] == pytest.approx(0.99)


def test_paired_runs_give_per_pair_ratios_and_a_count_of_sooner_same_later(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``RUN... --vs OTHER...`` pairs by position: env steps and wall time from launch as RUN / OTHER per pair."""
    walk = _script("walk_time")

    def run(name: str, walks_from: int) -> str:
        records = [
            {
                **_record(i, 0.3, 0.3, *((0.95, 0.05) if i >= walks_from else (0.5, 0.5))),
                "since_launch_s": 30.0 + 6.0 * (i + 1),
            }
            for i in range(40)
        ]
        (tmp_path / name).mkdir()
        return str(_run(tmp_path / name, records))

    mine = [run("a1", 10), run("a2", 20)]  # walk at iterations 19 and 29
    theirs = [run("b1", 20), run("b2", 20)]  # both at 29
    result = walk.paired([walk.walk_time(Path(r)) for r in mine], [walk.walk_time(Path(r)) for r in theirs])
    assert result["env_steps"]["ratios"] == [20_000 / 30_000, 1.0]
    assert (result["env_steps"]["sooner"], result["env_steps"]["same"], result["env_steps"]["later"]) == (1, 1, 0)
    assert result["env_steps"]["censored_pairs"] == 0
    assert result["launch_minutes"]["ratios"][0] == pytest.approx((30 + 120) / (30 + 180))
    assert walk.main([*mine, "--vs", *theirs]) == 0
    assert "paired env_steps, RUN / OTHER: mean 0.833" in capsys.readouterr().out
    assert walk.main([*mine, "--vs", theirs[0]]) == 2  # unpaired counts: refused in one line
    assert capsys.readouterr().err.strip() == "walk_time.py: error: --vs: 1 runs after it, 2 before (pairs)"


def test_a_folder_without_metrics_is_a_one_line_error(tmp_path: Path) -> None:
    walk = _script("walk_time")
    with pytest.raises(SystemExit, match=r"^walk_time.py: error: RUN_DIR: .* holds no metrics.jsonl") as exit_:
        walk.walk_time(tmp_path)
    assert "\n" not in str(exit_.value)


def test_body_frame_turns_world_velocity_into_the_trunks_frame() -> None:
    import numpy as np

    harness = _script("mjbatch_walk")
    yaw = np.pi / 2  # trunk turned 90 degrees left: world +y is its forward (+x)
    quat = np.array([[np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)], [1.0, 0.0, 0.0, 0.0]])
    local = harness.body_frame(quat, np.array([[0.0, 1.0, 0.5], [0.3, -0.2, 0.1]]))
    np.testing.assert_allclose(local, [[1.0, 0.0, 0.5], [0.3, -0.2, 0.1]], atol=1e-12)


def test_mjbatch_records_are_read_by_the_walking_criterion(tmp_path: Path) -> None:
    """The harness's per-iteration records carry walk_time.py's keys: an iteration without ended episodes has no
    errors, time-outs and falls count episodes, and a walking window is found as in a `redline train` run."""
    harness, walk = _script("mjbatch_walk"), _script("walk_time")
    records = [harness.record(i, 24_576 * (i + 1), 6.0 * (i + 1), [(0.9, 0.8, False)] * 3) for i in range(10)]
    records += [harness.record(10, 24_576 * 11, 66.0, [])]  # no episode ended
    records += [
        harness.record(i, 24_576 * (i + 1), 6.0 * (i + 1), [(0.3, 0.2, True)] * 19 + [(0.6, 0.5, False)])
        for i in range(11, 20)
    ]
    assert records[10]["episode/Metrics/base_velocity/error_vel_xy"] is None
    assert records[11]["episode/Episode_Termination/time_out"] == 19
    assert records[11]["episode/Episode_Termination/fell"] == 1
    result = walk.walk_time(_run(tmp_path, records))
    assert not result["censored"] and result["iteration"] == 19 and result["minutes"] == 2.0
    assert abs(result["err_xy"] - 0.315) < 1e-12 and abs(result["timeouts"] - 0.95) < 1e-12


def test_gpu_scale_refuses_a_bad_env_count_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert _script("gpu_scale").main(["cpu", "16", "many"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpu_scale.py: error: NUM_ENVS: 16 many") and err.count("\n") == 1


@pytest.mark.parametrize("name", ["rsl_rl_features_speed", "rsl_rl_features_parity"])
def test_the_rsl_rl_feature_studies_refuse_bad_arguments_in_one_line(name: str, capsys: pytest.CaptureFixture) -> None:
    assert _script(name).main(["cpu", "many"] if name.endswith("speed") else ["many"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {name}.py") and err.count("\n") == 1


def test_the_rsl_rl_feature_studies_print_one_line_per_config(capsys: pytest.CaptureFixture) -> None:
    """Tiny runs of both studies (the figures in docs/learner.md came from their full sizes)."""
    assert _script("rsl_rl_features_speed").main(["cpu", "16", "1"]) == 0
    assert _script("rsl_rl_features_parity").main(["2", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    lines = [json.loads(line.split(" ", 1)[1]) for line in out if line.startswith(("SPEED ", "PARITY "))]
    speed = [r for r in lines if "ratio" in r]
    parity = [r for r in lines if "diff_ci95" in r]
    assert {r["config"] for r in speed} == {r["config"] for r in parity} == {"recurrent", "symmetry"}
    assert all(len(r["redline"]) == len(r["rsl_rl"]) == 2 for r in parity)


class _ScriptedEnv:
    """A vec env that replays scripted steps: ``(dones, time_outs, extras["log"])`` each, 4 envs."""

    def __init__(self, steps: list[tuple[list[int], list[int], dict[str, float]]]) -> None:
        self.steps = iter(steps)

    def get_observations(self) -> torch.Tensor:
        return torch.zeros(4, 1)

    def step(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict]:
        dones, time_outs, log = next(self.steps)
        extras = {"time_outs": torch.tensor(time_outs), "log": log}
        return torch.zeros(4, 1), torch.zeros(4), torch.tensor(dones), extras


def test_walk_eval_weights_each_step_by_the_episodes_it_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    """scripts/walk_eval.py scores every ended episode once: a step's log (the means over its resets) counts once per
    env it reset, and a step without resets, whose log is the last reset's left standing, not at all; the time-out
    share counts the ended episodes flagged ``time_outs``."""
    monkeypatch.syspath_prepend(str(SCRIPTS))  # walk_eval imports walk_time's criterion
    evaluate = _script("walk_eval")
    three = {evaluate.LOG_XY: 0.2, evaluate.LOG_YAW: 0.1}  # the mean errors of the 3 episodes ended at a step
    one = {evaluate.LOG_XY: 0.6, evaluate.LOG_YAW: 0.5}
    none = [0, 0, 0, 0]
    env = _ScriptedEnv([(none, none, {}), ([1, 1, 0, 1], [1, 1, 0, 1], three), ([0, 0, 1, 0], none, one),
                        (none, none, one)])  # fmt: skip
    figures = evaluate.score(env, lambda obs: torch.zeros(4, 1), 4)
    assert figures["episodes"] == 4
    assert figures["err_xy"] == pytest.approx((3 * 0.2 + 0.6) / 4) and figures["err_yaw"] == pytest.approx(0.2)
    assert figures["timeouts"] == 0.75  # 3 timed out, 1 fell

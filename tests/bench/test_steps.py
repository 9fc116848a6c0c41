"""``redline bench steps``: every phase of a training step on the real simulator, adding up to the step's time."""

from __future__ import annotations

import re

import pytest

from redline.bench.steps import PHASES
from redline.cli import main


def test_steps_measures_the_cpu_only(capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "steps", "--task", "Redline-Cartpole", "--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--device" in err[0] and "cpu" in err[0], err


@pytest.mark.sim
def test_cartpole_phases_add_up_to_the_step(capsys: pytest.CaptureFixture) -> None:
    argv = ["bench", "steps", "--task", "Redline-Cartpole", "--num_envs", "8", "--iterations", "1", "--device", "cpu"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    step_ms = float(re.search(r"([\d.]+) ms per training env step", out).group(1))  # type: ignore[union-attr]
    rows = dict(re.findall(r"^\| ([^|*]+?) \| ([\d.-]+) \|", out, re.M))
    # every phase has a row; a direct env (Cartpole) has no command, event or curriculum manager: shown as "-"
    assert set(rows) == {name for name, _ in PHASES} | {"unattributed"}, out
    absent = {name for name, ms in rows.items() if ms == "-"}
    assert absent == {"commands", "events", "curriculum"}, out
    timed = {name: float(ms) for name, ms in rows.items() if ms != "-"}
    for phase in ("C step", "Warp kernels", "observations", "rewards", "inference", "update"):
        assert timed[phase] > 0, (phase, out)
    # the exclusive phases and the remainder no wrapper saw add up to the measured step (printed to 0.001 ms)
    assert sum(timed.values()) == pytest.approx(step_ms, abs=0.001 * len(timed) + 0.01)
    # double counting would show as a negative remainder; nothing but the rollout loop's own lines is left out
    assert -0.001 <= timed["unattributed"] <= 0.1 * step_ms, out


@pytest.mark.sim
def test_fuse_decimation_steps_an_env_step_in_one_c_call(capsys: pytest.CaptureFixture) -> None:
    # Cartpole takes 2 physics steps per env step: 2 MuJoCo-C steps either way, each in its own call (a gather
    # from and a scatter to mjw_data apiece) by default, both in one call with fuse_decimation (a gather, the
    # scatter before the last step for its implicit drive's torque telemetry, and the scatter after it)
    argv = ["bench", "steps", "--task", "Redline-Cartpole", "--num_envs", "8", "--iterations", "1", "--device", "cpu"]
    for flag, copies in (([], 4.0), (["--fuse_decimation"], 3.0)):  # bare: on
        assert main([*argv, *flag]) == 0
        out = capsys.readouterr().out
        assert ("(fuse_decimation=on)" in out) == bool(flag), out
        calls = dict(re.findall(r"^\| ([^|*]+?) \| [\d.]+ \| [\d.]+% \| ([\d.]+) \|$", out, re.M))
        assert float(calls["C step"]) == 2.0 and float(calls["mjw <-> C copies"]) == copies, out

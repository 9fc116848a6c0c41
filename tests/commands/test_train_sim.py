"""End to end on the real simulator (Newton, CPU): redline train/play, and Isaac Lab's own CLI on our tasks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from redline.cli import main
from redline.commands.launch import auto_nproc
from redline.host import usable_cores
from redline.outputs.checkpoints import load_checkpoint
from tests.commands.run_support import only_run, records, same_state, untimed

pytestmark = pytest.mark.sim

METRIC_KEYS = {
    "iteration",
    "env_steps",
    "wall_time_s",
    "since_launch_s",
    "sps",
    "mean_reward",
    "mean_episode_length",
    "collect_s",
    "learn_s",
}


def test_train_then_play_and_export(tmp_path: Path, no_network: list) -> None:
    log_root = tmp_path / "logs"
    argv = ["--task", "Redline-Cartpole", "--num_envs", "64", "--device", "cpu", "--log_root", str(log_root)]
    assert main(["train", *argv, "--max_iterations", "3", "--profile", "agent.save_interval=2"]) == 0
    run = only_run(log_root, "redline_cartpole")
    trace = json.loads((run / "profile" / "trace.json").read_text())["traceEvents"]  # --profile: iteration 1
    names = {e.get("name", "") for e in trace}
    assert "aten::addmm" in names  # the MLPs' forward passes
    assert "autograd::engine::evaluate_function: AddmmBackward0" in names  # and the update's backward
    rows = records(run)
    assert [r["iteration"] for r in rows] == [0, 1, 2]
    assert all(set(r) >= METRIC_KEYS for r in rows)
    assert rows[-1]["env_steps"] == 3 * 16 * 64  # iterations x steps per env x envs
    assert all(r["sps"] > 0 and r["collect_s"] > 0 and r["learn_s"] > 0 for r in rows)
    assert all(r["since_launch_s"] > r["wall_time_s"] for r in rows)  # the scene's build before training, included
    assert sorted(p.name for p in run.glob("model_*.pt")) == ["model_0.pt", "model_2.pt"]
    assert (run / "params" / "env.yaml").is_file() and (run / "params" / "agent.yaml").is_file()
    assert list(run.glob("events.out.tfevents.*"))
    ckpt = torch.load(run / "model_2.pt", weights_only=True)
    assert {"actor_state_dict", "critic_state_dict", "optimizer_state_dict", "iter", "infos"} <= set(ckpt)
    assert ckpt["iter"] == 2

    assert main(["train", *argv, "--max_iterations", "2", "--resume", "latest", "agent.save_interval=100"]) == 0
    resumed = next(r for r in (log_root / "redline_cartpole").iterdir() if r != run)
    assert [r["iteration"] for r in records(resumed)] == [3, 4]  # continues at k + 1
    assert records(resumed)[0]["env_steps"] == 4 * records(run)[0]["env_steps"]  # the step count continues too
    assert f"resumed_from: {run / 'model_2.pt'}" in (resumed / "params" / "resume.yaml").read_text()
    assert sorted(p.name for p in resumed.glob("model_*.pt")) == ["model_4.pt"]  # the last; 3 % 100 != 0
    seeding = torch.load(resumed / "model_4.pt", weights_only=True)["seeding_state_dict"]
    assert seeding["episode"].min() >= 0  # the streams' counters travel with the checkpoint

    assert main(["play", *argv, "--checkpoint", str(run), "--steps", "60"]) == 0
    exported = run / "exported" / "model_2"  # one export folder per checkpoint
    assert sorted(p.name for p in exported.parent.iterdir()) == ["model_2"]  # no staging folder left behind
    assert (exported / "policy.pt").is_file() and (exported / "policy.onnx").is_file()
    import onnxruntime as ort

    obs = np.random.default_rng(0).standard_normal((32, 4)).astype(np.float32)
    session = ort.InferenceSession(str(exported / "policy.onnx"))
    onnx_actions = session.run(None, {session.get_inputs()[0].name: obs})[0]
    jit_actions = torch.jit.load(str(exported / "policy.pt"))(torch.from_numpy(obs)).detach().numpy()
    np.testing.assert_allclose(onnx_actions, jit_actions, atol=1e-5)
    assert no_network == []


@pytest.mark.parametrize("algorithm", ["sac", "td3"])
def test_off_policy_train_then_play_finds_the_algorithm_and_exports(tmp_path: Path, algorithm: str) -> None:
    """Issue 46 item 3: ``redline train --algorithm sac`` (or ``td3``), then ``redline play`` with nothing but the
    task: 'latest' finds the run, the checkpoint names its learner, the networks are the run's (``[32, 32]`` from
    its ``params/agent.yaml``, not the task's registered ``[256, 256]``; TD3's variant from it too), and the
    exported policy is the squashed mean."""
    from tests.commands.test_kill_resume_sim import SAC_TINY

    log_root = tmp_path / "logs"
    argv = ["--task", "Redline-Cartpole", "--num_envs", "16", "--device", "cpu", "--log_root", str(log_root)]
    tiny = [t if t != "sac" else algorithm for t in SAC_TINY]
    assert main(["train", *argv, "--max_iterations", "2", *tiny]) == 0
    run = only_run(log_root, "redline_cartpole_sac")
    assert torch.load(run / "model_1.pt", weights_only=True)["algorithm"] == "sac"  # the learner, either variant
    assert f"variant: {algorithm}" in (run / "params" / "agent.yaml").read_text()
    assert all(set(r) >= METRIC_KEYS for r in records(run))
    assert main(["play", *argv, "--steps", "30"]) == 0  # --checkpoint latest; no agent.* overrides
    exported = run / "exported" / "model_1"
    obs = 100 * torch.randn(64, 4)  # far outside the normaliser's range: the tanh keeps actions in [-1, 1]
    actions = torch.jit.load(str(exported / "policy.pt"))(obs).detach()
    assert actions.abs().max() <= 1.0 and actions.shape == (64, 1)
    weights = torch.jit.load(str(exported / "policy.pt")).state_dict()
    assert [tuple(w.shape) for k, w in weights.items() if k.endswith("weight")][:2] == [(32, 4), (32, 32)]
    import onnxruntime as ort

    session = ort.InferenceSession(str(exported / "policy.onnx"))
    onnx_actions = session.run(None, {session.get_inputs()[0].name: obs.numpy()})[0]
    np.testing.assert_allclose(onnx_actions, actions.numpy(), atol=1e-5)


def test_play_refuses_a_checkpoint_of_another_task(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    ckpt = tmp_path / "model_0.pt"
    torch.save({"actor_state_dict": {"mlp.0.weight": torch.zeros(3, 3)}, "critic_state_dict": {}, "iter": 0}, ckpt)
    assert main(["play", "--task", "Redline-Cartpole", "--checkpoint", str(ckpt), "--steps", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not fit task Redline-Cartpole-Play" in err[0]


def test_the_nan_guards_stop_is_one_line_and_leaves_finite_checkpoints(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A learning rate of 3e38 (finite, so accepted): every update would overflow the weights and is undone; after 3
    such iterations in a row the guard stops training in one line, exit 1, no traceback (was a NonFiniteError
    traceback, issue 37 item 7), and the checkpoint written before holds finite weights."""
    overflow = ["agent.algorithm.learning_rate=3e38", "agent.algorithm.schedule=fixed"]
    argv = ["train", "--task", "Redline-Cartpole", "--device", "cpu", "--num_envs", "4", "--max_iterations", "10"]
    assert main([*argv, "--log_root", str(tmp_path), *overflow]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert re.fullmatch(
        r"redline train: training stopped: 3 consecutive iterations skipped optimizer steps on non-finite values "
        r"\(\d+ steps in all\); the first non-finite quantity was the updated weights",
        err[0],
    ), err
    run = only_run(tmp_path, "redline_cartpole")
    assert [r["iteration"] for r in records(run)] == [0, 1]  # the third skipping iteration raised before its record
    assert [load_checkpoint(p)["iter"] for p in run.glob("model_*.pt")] == [0]  # loads: every tensor finite


def test_the_same_command_twice_writes_the_same_run(tmp_path: Path) -> None:
    """Issue 37 item 1 on one process: the same short `redline train` run twice (in one process: a run that read
    state a previous one left, an unseeded generator, would differ) writes bitwise identical checkpoints and the same
    metrics.jsonl records but for the clock's fields."""
    argv = ["train", "--task", "Redline-Cartpole", "--device", "cpu", "--num_envs", "16", "--max_iterations", "3"]
    runs = []
    for name in ("a", "b"):
        assert main([*argv, "--nproc", "1", "--log_root", str(tmp_path / name)]) == 0
        runs.append(only_run(tmp_path / name, "redline_cartpole"))
    a, b = runs
    saved = sorted(p.name for p in a.glob("model_*.pt"))
    assert saved == sorted(p.name for p in b.glob("model_*.pt")) == ["model_0.pt", "model_2.pt"]
    for name in saved:
        assert same_state(*(torch.load(run / name, weights_only=True) for run in runs)) == [], name

    assert untimed(a) == untimed(b)
    assert len(untimed(a)) == 3 and "mean_reward" in untimed(a)[0] and "kl" in untimed(a)[0]


def _straight_and_resumed(tmp_path: Path, argv: list[str], experiment: str) -> tuple[Path, Path, Path]:
    """Train 4 iterations straight (under ``tmp_path/straight``), and 2 then ``--resume`` for 2 more (under
    ``tmp_path/cut``), no checkpoint but the last of each; the cut run's first part, the straight run, the resumed
    run."""
    straight, cut = tmp_path / "straight", tmp_path / "cut"
    argv = [*argv, "agent.save_interval=100"]
    assert main([*argv, "--max_iterations", "4", "--log_root", str(straight)]) == 0
    assert main([*argv, "--max_iterations", "2", "--log_root", str(cut)]) == 0
    first = only_run(cut, experiment)
    assert main([*argv, "--max_iterations", "2", "--log_root", str(cut), "--resume", str(first)]) == 0
    resumed = next(r for r in (cut / experiment).iterdir() if r != first)
    return first, only_run(straight, experiment), resumed


def test_a_resumed_run_is_the_run_never_interrupted(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Issue 37 items 2-3 on Redline-Cartpole, one process: 4 iterations straight, and 2 iterations then `--resume`
    for 2 more (a run stopped after its checkpoint 1), end with bitwise the same checkpoint (weights, optimizer,
    run state) and the same metrics.jsonl records after iteration 1 but for the clock's fields. The same resume from
    that checkpoint without its run state (one written before run states existed) loads with one warning line and
    starts from fresh resets: the weights then differ (the test fails without the run state)."""
    from redline.run_state.parts import RUN_STATE_KEY

    argv = ["train", "--task", "Redline-Cartpole", "--device", "cpu", "--num_envs", "16", "--nproc", "1"]
    first, whole, resumed = _straight_and_resumed(tmp_path, argv, "redline_cartpole")
    end = torch.load(whole / "model_3.pt", weights_only=True)
    assert same_state(end, torch.load(resumed / "model_3.pt", weights_only=True)) == []
    assert end[RUN_STATE_KEY]["parts"][0]["episodes"]["written"] > 0  # episodes ended on the way
    assert untimed(resumed) == untimed(whole)[2:]

    old = tmp_path / "old"  # the checkpoint as it was written before run states existed
    old.mkdir()
    checkpoint = torch.load(first / "model_1.pt", weights_only=True)
    del checkpoint[RUN_STATE_KEY]
    torch.save(checkpoint, old / "model_1.pt")
    capsys.readouterr()
    assert main([*argv, "--max_iterations", "2", "--log_root", str(old), "--resume", str(old)]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "env state" in line]
    assert warnings == [
        "[redline] warning: the checkpoint's env state is not restored: it holds none (saved before run states, or "
        "by a task that saves none); the envs start from fresh resets"
    ]
    fresh = torch.load(only_run(old, "redline_cartpole") / "model_3.pt", weights_only=True)
    assert same_state(end["actor_state_dict"], fresh["actor_state_dict"]) != []


def test_a_resumed_ant_run_is_the_run_never_interrupted(tmp_path: Path) -> None:
    """Issue 37 items 2-3 on Redline-Ant (direct workflow, a joint-wrench sensor), one process: 4 iterations
    straight, and 2 then `--resume` for 2 more, end with bitwise the same checkpoint and the same metrics.jsonl
    records after iteration 1. Its run state holds the task's progress potentials (each step's reward is their
    change); without them the resumed run differs."""
    from redline.run_state.parts import RUN_STATE_KEY

    argv = ["train", "--task", "Redline-Ant", "--device", "cpu", "--num_envs", "16", "--nproc", "1"]
    first, whole, resumed = _straight_and_resumed(tmp_path, argv, "redline_ant")
    end = torch.load(whole / "model_3.pt", weights_only=True)
    assert same_state(end, torch.load(resumed / "model_3.pt", weights_only=True)) == []
    assert untimed(resumed) == untimed(whole)[2:]

    partial = tmp_path / "partial"  # the same checkpoint without the task's potentials
    partial.mkdir()
    checkpoint = torch.load(first / "model_1.pt", weights_only=True)
    (part,) = checkpoint[RUN_STATE_KEY]["parts"]
    for name in ("potentials", "prev_potentials"):
        del part["env"]["env"][name]
    torch.save(checkpoint, partial / "model_1.pt")
    assert main([*argv, "--max_iterations", "2", "--log_root", str(partial), "--resume", str(partial)]) == 0
    other = torch.load(only_run(partial, "redline_ant") / "model_3.pt", weights_only=True)
    assert same_state(end["actor_state_dict"], other["actor_state_dict"]) != []


@pytest.mark.extended  # ~45 s; CI holds the same promise on these tasks with test_kill_resume_sim.py's kills
@pytest.mark.parametrize("task", ["Redline-Velocity-Flat-Go1", "Redline-Velocity-Rough-Go1"])
def test_a_resumed_go1_run_is_the_run_never_interrupted(tmp_path: Path, task: str) -> None:
    """Issue 37 items 2-3 on the manager-based Go1 tasks, one process, physics=mujoco_cpu: 4 iterations straight,
    and 2 then `--resume` for 2 more, end with bitwise the same checkpoint and the same metrics.jsonl records after
    iteration 1. The run state holds the managers' and the sensors' state (and the rough task's terrain-levels
    curriculum); without them (the same checkpoint with the simulator's and the env's buffers only) the resumed run
    differs."""
    from redline.run_state.parts import RUN_STATE_KEY

    experiment = task.lower().replace("-", "_")
    argv = ["train", "--task", task, "--device", "cpu", "--num_envs", "16", "--nproc", "1"]  # 4 x 24 steps
    first, whole, resumed = _straight_and_resumed(tmp_path, argv, experiment)
    end = torch.load(whole / "model_3.pt", weights_only=True)
    assert same_state(end, torch.load(resumed / "model_3.pt", weights_only=True)) == []
    env_state = end[RUN_STATE_KEY]["parts"][0]["env"]
    assert any(k.startswith("command_manager/") for k in env_state["managers"])
    assert any(k.startswith("sensor/contact_forces/data/") for k in env_state["scene"])
    assert ("terrain/terrain_levels" in env_state["scene"]) == ("Rough" in task)
    assert end[RUN_STATE_KEY]["parts"][0]["episodes"]["written"] > 0  # episodes ended: falls, random offsets
    assert untimed(resumed) == untimed(whole)[2:]

    partial = tmp_path / "partial"  # what a checkpoint held before the managers' and sensors' state was saved
    partial.mkdir()
    checkpoint = torch.load(first / "model_1.pt", weights_only=True)
    (part,) = checkpoint[RUN_STATE_KEY]["parts"]
    del part["env"]["managers"], part["env"]["scene"]
    torch.save(checkpoint, partial / "model_1.pt")
    assert main([*argv, "--max_iterations", "2", "--log_root", str(partial), "--resume", str(partial)]) == 0
    other = torch.load(only_run(partial, experiment) / "model_3.pt", weights_only=True)
    assert same_state(end["actor_state_dict"], other["actor_state_dict"]) != []


def _isaaclab(*args: str, cwd: Path) -> subprocess.Popen:
    """Start Isaac Lab's stock ``isaaclab`` command; its output is read with ``communicate``."""
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("isaaclab")), *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_isaaclab_stock_cli_finds_and_trains_our_tasks(tmp_path: Path) -> None:
    """``isaaclab list_envs`` lists every redline task and ``isaaclab train`` trains one (side by side: each is one
    process, mostly one core's imports)."""
    listing = _isaaclab("list_envs", cwd=tmp_path)
    training = _isaaclab(
        "train",
        "--rl_library",
        "rsl_rl",
        "--task",
        "Redline-Cartpole",
        "--device",
        "cpu",
        "agent.device=cpu",
        "--max_iterations",
        "3",
        "--num_envs",
        "64",
        cwd=tmp_path,
    )
    try:
        listed, listed_err = listing.communicate(timeout=900)
        trained, trained_err = training.communicate(timeout=900)
    finally:
        listing.kill()
        training.kill()
    assert listing.returncode == 0, listed_err[-2000:]
    from redline.envs.registry import redline_task_ids

    for task in redline_task_ids():
        assert task in listed, task
    assert training.returncode == 0, (trained[-3000:], trained_err[-3000:])
    assert list((tmp_path / "logs" / "rsl_rl" / "redline_cartpole").glob("*/model_2.pt"))


@pytest.mark.slow
def test_cartpole_learns_to_balance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """README command 1's job (256 envs, 150 iterations, seed 42), arranged as the user gets it (on a multi-core
    CPU one process per core): mean reward >= 4.9 with full episodes."""
    monkeypatch.delenv("REDLINE_NPROC")
    assert main(["train", "--task", "Redline-Cartpole", "--device", "cpu", "--log_root", str(tmp_path)]) == 0
    last = records(only_run(tmp_path, "redline_cartpole"))[-1]
    assert last["world_size"] == auto_nproc(256, usable_cores()), last
    assert last["mean_reward"] >= 4.9, last
    assert last["mean_episode_length"] >= 299, last

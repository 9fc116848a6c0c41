"""redline's update inside Isaac Lab's stock scripts: `isaaclab train --rl_library rsl_rl ...
agent.algorithm.class_name=redline.learning.rsl_rl:PPO` trains, and the stock `isaaclab play` plays the result:
Isaac Lab's own Isaac-Cartpole with its symmetry agent (`--agent rsl_rl_with_symmetry_cfg_entry_point`, assets from
`redline assets`, on redline's CPU physics `physics=mujoco_cpu`) and redline's Cartpole with its recurrent (LSTM)
agent, whose play exports the recurrent policy to JIT and ONNX; the plain configs on Isaac-Cartpole-Direct and
Redline-Cartpole under --extended (CI's budget)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from redline.learning.rsl_rl import CLASS_PATH

pytestmark = pytest.mark.sim

ISAACLAB = str(Path(sys.executable).with_name("isaaclab"))
COMMON = ["--rl_library", "rsl_rl", "--device", "cpu", "--num_envs", "16"]
TASK_ARGS = {
    "Redline-Cartpole": ["agent.device=cpu"],  # redline's tasks choose mujoco_cpu on the CPU by themselves
    # the command as a user types it: no agent.device=cpu (redline's agent entry moves it off cuda:0 when there is
    # no GPU) and the stock task's own registration, with redline's physics asked for
    "Isaac-Cartpole-Direct": ["physics=mujoco_cpu"],
    "Isaac-Cartpole:symmetry": [
        "--agent",
        "rsl_rl_with_symmetry_cfg_entry_point",
        "physics=mujoco_cpu",
        "agent.device=cpu",
    ],
    "Redline-Cartpole:recurrent": [
        "--agent",
        "rsl_rl_recurrent_cfg_entry_point",
        "physics=mujoco_cpu",
        "agent.device=cpu",
    ],
}


def _env() -> dict[str, str]:
    from redline.assets import ensure_asset_root

    return {**os.environ, "PYTHONUNBUFFERED": "1", "ISAACSIM_ASSET_ROOT": str(ensure_asset_root())}


def _play_until_running(args: list[str], cwd: Path, timeout_s: float = 600) -> str:
    """Start the stock play script (it plays until interrupted), wait for its playback loop, then end it (SIGKILL:
    how Isaac Lab's script shuts down is not what is tested, and its interpreter's shutdown takes seconds)."""
    out = cwd / "play.txt"
    with open(out, "w") as log:
        proc = subprocess.Popen([ISAACLAB, "play", *args], cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=_env())
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and proc.poll() is None and "playback is running" not in out.read_text():
            time.sleep(0.5)
        running = proc.poll() is None
        proc.kill()
        proc.wait()
    text = out.read_text()
    assert running and "playback is running" in text, text[-3000:]
    return text


@pytest.mark.parametrize(
    "case",
    [
        pytest.param("Redline-Cartpole", marks=pytest.mark.extended),
        pytest.param("Isaac-Cartpole-Direct", marks=pytest.mark.extended),
        "Isaac-Cartpole:symmetry",  # ~2 min each in CI
        "Redline-Cartpole:recurrent",
    ],
)
def test_stock_train_and_play_with_redlines_update(case: str, tmp_path: Path) -> None:
    task = case.partition(":")[0]
    args = ["--task", task, *COMMON, *TASK_ARGS[case], f"agent.algorithm.class_name={CLASS_PATH}"]
    trained = subprocess.run(
        [ISAACLAB, "train", *args, "--max_iterations", "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        env=_env(),
    )
    assert trained.returncode == 0, (trained.stdout[-3000:], trained.stderr[-3000:])
    assert "Traceback" not in trained.stderr
    (checkpoint,) = tmp_path.glob("logs/rsl_rl/*/*/model_1.pt")
    env_yaml = (checkpoint.parent / "params" / "env.yaml").read_text()
    assert "class_type: redline.physics.mujoco_cpu:NewtonMuJoCoCPUManager" in env_yaml  # MuJoCo-C, recorded
    assert "use_mujoco_contacts: true" in env_yaml
    agent_yaml = (checkpoint.parent / "params" / "agent.yaml").read_text()
    assert f"class_name: {CLASS_PATH}" in agent_yaml
    features = {"symmetry": "use_data_augmentation: true", "recurrent": "class_name: RNNModel"}
    assert features.get(case.partition(":")[2], "") in agent_yaml
    text = _play_until_running([*args, "--checkpoint", str(checkpoint)], tmp_path)
    assert "Traceback" not in text
    exported = checkpoint.parent / "exported"
    assert (exported / "policy.pt").is_file() and (exported / "policy.onnx").is_file()


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        # ~70 s (3 stock runs); passed by hand 2026-12-05 (docs/reliability.md)
        pytest.param("Redline-Cartpole", marks=pytest.mark.extended),
        "Redline-Cartpole:recurrent",  # GeneralPPO: torch's generator samples the actions, an LSTM carries state
    ],
)
def test_stock_train_resume_continues_the_env_state(case: str, tmp_path: Path) -> None:
    """Issue 37 item 5: stock `isaaclab train` with redline's drop-in PPO, 2 iterations, then `--checkpoint
    <model_1.pt> --max_iterations 2` (rsl_rl re-runs the saved iteration's index: 2 more updates) ends with bitwise
    the actor of a 4-iteration run never interrupted: the checkpoint held the env's seeding counters and run state,
    restored at the first action of training (after the runner's random episode lengths). Issue 44 item 2: under
    :class:`~redline.learning.general_ppo.GeneralPPO` (the recurrent agent) too — the checkpoint holds torch's
    global generator (rsl_rl's distributions sample from it, its storage permutes minibatches with it) and the
    LSTM's hidden states."""
    task = case.partition(":")[0]
    args = ["--task", task, *COMMON, *TASK_ARGS[case], f"agent.algorithm.class_name={CLASS_PATH}"]
    folders, runs = {}, {}
    for name, extra in (("cut", ["--max_iterations", "2"]), ("straight", ["--max_iterations", "4"])):
        (tmp_path / name).mkdir()  # both at once: neither reads the other
        with (tmp_path / f"{name}.err").open("w") as err:
            runs[name] = subprocess.Popen(
                [ISAACLAB, "train", *args, *extra],
                cwd=tmp_path / name,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=_env(),
            )
    for name, proc in runs.items():
        assert proc.wait(timeout=900) == 0, (tmp_path / f"{name}.err").read_text()[-3000:]
        (folders[name],) = (tmp_path / name).glob("logs/rsl_rl/*/*")
    cut = folders["cut"] / "model_1.pt"
    assert "run_state" in torch.load(cut, weights_only=True)
    resume = [ISAACLAB, "train", *args, "--max_iterations", "2", "--checkpoint", str(cut)]
    done = subprocess.run(resume, cwd=tmp_path / "cut", capture_output=True, text=True, env=_env())
    assert done.returncode == 0 and "env state is not restored" not in done.stderr, done.stderr[-3000:]
    (resumed,) = (p for p in (tmp_path / "cut").glob("logs/rsl_rl/*/*") if p != folders["cut"])
    ends = [
        torch.load(p, weights_only=True)["actor_state_dict"]
        for p in (resumed / "model_2.pt", folders["straight"] / "model_3.pt")
    ]
    assert all(torch.equal(ends[0][k], ends[1][k]) for k in ends[1])


def test_stock_train_and_play_with_redlines_sac(tmp_path: Path) -> None:
    """Issue 46 item 3: ``isaaclab train --rl_library rsl_rl --task Redline-Cartpole --agent
    rsl_rl_sac_cfg_entry_point``: stock Isaac Lab builds its ``OnPolicyRunner``, which runs redline's SAC through the
    ``algorithm.class_name`` drop-in; stock ``isaaclab play`` plays and exports the result."""
    from redline.learning.sac import CLASS_PATH as SAC_CLASS_PATH

    tiny = ["agent.algorithm.batch_size=64", "agent.actor.hidden_dims=[32,32]", "agent.critic.hidden_dims=[32,32]"]
    args = ["--task", "Redline-Cartpole", *COMMON, "--agent", "rsl_rl_sac_cfg_entry_point", "agent.device=cpu", *tiny]
    trained = subprocess.run(
        [ISAACLAB, "train", *args, "--max_iterations", "3"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        env=_env(),
    )
    assert trained.returncode == 0, (trained.stdout[-3000:], trained.stderr[-3000:])
    assert "Traceback" not in trained.stderr
    (checkpoint,) = tmp_path.glob("logs/rsl_rl/redline_cartpole_sac/*/model_2.pt")
    assert f"class_name: {SAC_CLASS_PATH}" in (checkpoint.parent / "params" / "agent.yaml").read_text()
    text = _play_until_running([*args, "--checkpoint", str(checkpoint)], tmp_path)
    assert "Traceback" not in text
    exported = checkpoint.parent / "exported"
    assert (exported / "policy.pt").is_file() and (exported / "policy.onnx").is_file()

"""Hostile and clumsy input, table-driven: one line naming the field and the valid values, exit status 2, no
traceback, and no run folder left behind — all before the simulator starts (the last case only after it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from redline.cli import main

TRAIN = ["train", "--task", "Redline-Cartpole", "--device", "cpu", "--max_iterations", "1"]

CASES = [
    # numeric agent settings: kind, finiteness, range
    (["agent.algorithm.learning_rate=1e999"], "agent.algorithm.learning_rate: must be a finite number > 0, got inf"),
    (["agent.algorithm.learning_rate=nan"], "expects float"),  # Hydra reads nan and inf as text
    (["agent.algorithm.learning_rate=-0.001"], "agent.algorithm.learning_rate: must be a finite number > 0"),
    (["agent.algorithm.learning_rate=0"], "agent.algorithm.learning_rate: must be a finite number > 0"),
    (["agent.algorithm.learning_rate=abc"], "expects float"),
    (["agent.save_interval=0"], "agent.save_interval: must be an integer >= 1, got 0"),
    (["agent.save_interval=-5"], "agent.save_interval: must be an integer >= 1"),
    (["agent.save_interval=2.5"], "expects int"),
    (["agent.max_iterations=-3"], "agent.max_iterations: must be an integer >= 1, got -3"),
    (["agent.num_steps_per_env=0"], "agent.num_steps_per_env: must be an integer >= 1"),
    (["agent.algorithm.num_learning_epochs=0"], "agent.algorithm.num_learning_epochs: must be an integer >= 1"),
    (["agent.algorithm.num_mini_batches=0"], "agent.algorithm.num_mini_batches: must be an integer >= 1"),
    (["agent.algorithm.gamma=1.5"], "agent.algorithm.gamma: must be a finite number in [0, 1], got 1.5"),
    (["agent.algorithm.lam=-0.1"], "agent.algorithm.lam: must be a finite number in [0, 1]"),
    (["agent.algorithm.clip_param=0"], "agent.algorithm.clip_param: must be a finite number > 0"),
    (["agent.algorithm.entropy_coef=-0.01"], "agent.algorithm.entropy_coef: must be a finite number >= 0"),
    (["agent.algorithm.value_loss_coef=inf"], "expects float"),
    (["agent.algorithm.value_loss_coef=-1e400"], "agent.algorithm.value_loss_coef: must be a finite number >= 0"),
    (["agent.algorithm.max_grad_norm=-1.0"], "agent.algorithm.max_grad_norm: must be a finite number > 0"),
    (["agent.algorithm.desired_kl=0"], "agent.algorithm.desired_kl: must be a finite number > 0"),
    (["agent.clip_actions=0"], "agent.clip_actions: must be a finite number > 0"),
    (["agent.algorithm.learning_ratee=0.1"], "'agent.algorithm' has no field 'learning_ratee'"),
    # numeric env settings
    (["env.sim.dt=-0.01"], "env.sim.dt: must be a finite number > 0, got -0.01"),
    (["env.sim.dt=0"], "env.sim.dt: must be a finite number > 0"),
    (["env.decimation=0"], "env.decimation: must be an integer >= 1"),
    (["env.episode_length_s=-5.0"], "env.episode_length_s: must be a finite number > 0"),
    (["env.scene.num_envs=0"], "env.scene.num_envs: must be an integer >= 1, got 0"),
    (["env.scene.num_envs=-8"], "env.scene.num_envs: must be an integer >= 1"),
    (["env.sim.dtt=0.1"], "'env.sim' has no field 'dtt'"),
    (["env.seeding.strategy=perenv"], "unknown strategy 'perenv'"),
    (["physics=physx2"], "Unknown preset(s): physx2 (valid: "),
    (["env.sim.physics.solver_cfg.nthread=0"], "env.sim.physics.solver_cfg.nthread: must be an integer >= 1, got 0"),
    (["env.sim.physics.solver_cfg.nthread=-2"], "env.sim.physics.solver_cfg.nthread: must be an integer >= 1"),
    (
        ["env.sim.physics.solver_cfg.fuse_decimation=maybe"],
        "override 'env.sim.physics.solver_cfg.fuse_decimation=maybe': expects bool (the default is False)",
    ),
    # command options
    (["--seed", "4294967296"], "--seed: must be an integer in [0, 4294967295]"),
    (["--seed", "-1"], "--seed: must be an integer in [0, 4294967295]"),
    (["--seed", "abc"], "--seed: must be an integer in [0, 4294967295]"),
    (["--num_envs", "0"], "--num_envs: must be a positive integer"),
    (["--num_envs", "1.5"], "--num_envs: must be a positive integer"),
    (["--max_iterations", "0"], "--max_iterations: must be a positive integer"),
    (["--run_name", "../../etc"], "--run_name: must be one folder-name component"),
    (["--run_name", "a/b"], "--run_name: must be one folder-name component"),
    (["--run_name", ".."], "--run_name: must be one folder-name component"),
    (["--device", "tpu"], "valid: cpu, cuda, cuda:N"),
    (["--learner", "sb3"], "--learner: unknown learner 'sb3' (valid: redline, rsl_rl)"),
    (["--precision", "fp8"], "--precision: unknown precision 'fp8'"),
    (["--seeding", "random"], "unknown strategy 'random'"),
    (["--dist_timeout", "0"], "--dist_timeout: must be a positive number"),
    (["--dist_timeout", "inf"], "--dist_timeout: must be a number of seconds in (0, 604800] (a week), got 'inf'"),
    (["--dist_timeout", "1e300"], "--dist_timeout: must be a number of seconds in (0, 604800]"),
    (["--resume", "/dev/null"], "is not a regular file"),
    (["--resume", "/no/such/model_3.pt"], "does not exist"),
    (["--resume", "{garbage}"], "is not a readable checkpoint"),
    (["--resume", "{nan}"], "--resume: '{nan}' holds non-finite values in actor_state_dict.mlp.0.weight (1 NaN of 8)"),
    (["--log_root", "{file}"], "--log_root: '{file}' is a file, not a folder"),
    (["--log_root", "{file}/sub"], "--log_root: '{file}' is a file, not a folder"),
    (["--logger", "mlflow"], "--logger: unknown logger 'mlflow' (valid: tensorboard, wandb, neptune)"),
    (["agent.logger=comet"], "agent.logger: unknown logger 'comet' (valid: tensorboard, wandb, neptune)"),
    (["--video_length", "0"], "--video_length: must be a positive integer"),
    # unusable log roots (issue 22): created and test-written before the simulator starts
    (["--log_root", "/proc/redline-logs"], "--log_root: cannot write to '/proc/redline-logs"),
    (["--log_root", "{loop}/logs"], "(Too many levels of symbolic links)"),
    # list- and dict-typed overrides keep their kind; list elements their range
    (["agent.actor.hidden_dims=512"], "override 'agent.actor.hidden_dims=512': expects a list of int (the default is"),
    (["agent.critic.hidden_dims=[a,b]"], "override 'agent.critic.hidden_dims=[a,b]': expects a list of int"),
    (["agent.actor.hidden_dims=[]"], "agent.actor.hidden_dims: must be a non-empty list of integers >= 1, got []"),
    (["agent.critic.hidden_dims=[64,0]"], "agent.critic.hidden_dims: must be a non-empty list of integers >= 1"),
    (["agent.obs_groups=5"], "override 'agent.obs_groups=5': expects dict"),
    (["agent.actor.activation=relu6"], "agent.actor.activation: unknown 'relu6' (valid: elu, selu, relu"),
    (["--learner", "rsl_rl", "agent.critic.activation=swishh"], "agent.critic.activation: unknown 'swishh'"),
    # the rollout's shape, before the simulator (T x N = 16 x 4 for Cartpole with --num_envs 4)
    (
        ["--num_envs", "4", "agent.algorithm.num_mini_batches=65"],
        "agent.algorithm.num_mini_batches: must be at most the rollout's T x N = 16 x 4 = 64 transitions",
    ),
    (
        ["--learner", "rsl_rl", "--num_envs", "2", "agent.num_steps_per_env=3", "agent.algorithm.num_mini_batches=7"],
        "agent.algorithm.num_mini_batches: must be at most the rollout's T x N = 3 x 2 = 6 transitions",
    ),
    # the off-policy learner's config (issue 46): a batch larger than the replay, zero updates, a bad token
    (
        ["--algorithm", "sac", "--num_envs", "4", "agent.algorithm.buffer_size_per_env=8"],
        "batch_size: must be at most buffer_size_per_env x envs = 8 x 4 = 32, got 1024",
    ),
    (["--algorithm", "sac", "agent.algorithm.updates_per_step=0"], "updates_per_step: must be an integer >= 1"),
    (["--algorithm", "sac", "agent.algorithm.num_mini_batches=4"], "'agent.algorithm' has no field 'num_mini_batches'"),
    (["--algorithm", "ddpg"], "--algorithm: unknown algorithm 'ddpg' (valid: ppo, sac, td3)"),
    (
        ["--algorithm", "td3", "agent.algorithm.exploration_std=[0.5,0.1]"],
        "exploration_std: expected (low, high) with 0",
    ),
    (["--algorithm", "td3", "agent.algorithm.variant=sac"], "agent.algorithm.variant: set by --algorithm td3"),
    (["--algorithm", "sac", "agent.algorithm.variant=ddpg"], "variant: unknown 'ddpg' (valid: sac, td3)"),
    # runs that cannot fit in memory
    (["--num_envs", "3000000000"], "--num_envs: 3000000000 envs of Redline-Cartpole need an estimated"),
    (["env.scene.num_envs=3000000000"], "--num_envs: 3000000000 envs of Redline-Cartpole need an estimated"),
    (
        ["--num_envs", "10000", "agent.num_steps_per_env=1000000"],  # the envs fit; 10^10 transitions do not
        "--num_envs: 10000 envs x 1000000 steps of Redline-Cartpole need an estimated",
    ),
    (  # the envs and the learner fit; SAC's replay of 10^8 transitions per env does not
        ["--algorithm", "sac", "--num_envs", "256", "agent.algorithm.buffer_size_per_env=100000000"],
        "agent.algorithm.buffer_size_per_env: 256 envs x 100000000 replay transitions of Redline-Cartpole need an "
        "estimated",
    ),
    (["--video_interval", "-5"], "--video_interval: must be a positive integer"),
]


@pytest.mark.parametrize(("extra", "expected"), CASES, ids=[" ".join(c[0])[:40] for c in CASES])
def test_bad_train_input(extra: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    log_root, file, garbage = tmp_path / "logs", tmp_path / "a_file", tmp_path / "model_1.pt"
    file.write_text("not a folder")
    garbage.write_bytes(os.urandom(64))
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")
    names = {"file": str(file), "garbage": str(garbage), "loop": str(tmp_path / "loop_a"), "nan": _nan(tmp_path)}
    extra = [token.format(**names) for token in extra]
    argv = [*TRAIN, "--log_root", str(log_root), *extra]
    if "--log_root" in extra:
        argv = [*TRAIN, *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("redline train: error: "), err
    assert expected.format(**names) in err[0]
    assert "Traceback" not in err[0]
    assert not log_root.exists() or not any(log_root.rglob("*/*"))  # no run folder


def _nan(folder: Path) -> str:
    """A checkpoint whose actor holds one NaN weight (issue 37, item 7)."""
    path = folder / "nan" / "model_4.pt"
    path.parent.mkdir()
    weight = torch.zeros(2, 4)
    weight[1, 2] = float("nan")
    torch.save({"actor_state_dict": {"mlp.0.weight": weight}, "critic_state_dict": {}, "iter": 4}, path)
    return str(path)


LOGGER_CASES = [
    (["--logger", "neptune"], "--logger neptune: the neptune package is not installed (pip install neptune; or use "),
    (["agent.logger=wandb"], "agent.logger wandb: the wandb package is not installed (install redline's extra: uv "),
    (
        ["--logger", "wandb", "--installed"],
        "--logger wandb: no W&B credentials (run `wandb login` or set WANDB_API_KEY",
    ),
    (["--logger", "neptune", "--installed"], "--logger neptune: no Neptune credentials (set NEPTUNE_API_TOKEN and "),
]


@pytest.mark.parametrize(("extra", "expected"), LOGGER_CASES, ids=[" ".join(c[0]) for c in LOGGER_CASES])
def test_a_logger_without_its_package_or_credentials(
    extra: list[str], expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """No fallback to TensorBoard: the run stops before the simulator, in one line that says what to do."""
    import importlib.util

    installed = "--installed" in extra
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        if name in ("wandb", "neptune"):
            return object() if installed else None
        return real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "NEPTUNE_API_TOKEN", "NEPTUNE_USERNAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc, no W&B settings
    monkeypatch.delenv("NETRC", raising=False)
    monkeypatch.delenv("WANDB_CONFIG_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    log_root = tmp_path / "logs"
    argv = [*TRAIN, "--log_root", str(log_root), *[token for token in extra if token != "--installed"]]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"redline train: error: {expected}"), err
    assert not log_root.exists()  # stopped before any run folder (and before the simulator)


OTHER = [
    (["play", "--task", "Redline-Cartpole", "--checkpoint", "/dev/null"], "is not a regular file"),
    (  # refused before anything is played or exported
        ["play", "--task", "Redline-Cartpole", "--checkpoint", "{nan}"],
        "--checkpoint: '{nan}' holds non-finite values in actor_state_dict.mlp.0.weight (1 NaN of 8); it cannot be "
        "played, exported or resumed (use an earlier checkpoint)",
    ),
    (["play", "--task", "Redline-Cartpole", "--steps", "0"], "--steps: must be a positive integer"),
    (["report", "{missing}"], "no metrics.jsonl"),
    (["report", "{run}", "--out", "{file}"], "--out: '{file}' is a file, not a folder"),
    (["bench", "learner", "--iterations", "0"], "--iterations: must be a positive integer"),
    (["bench", "learner", "--shape", "huge"], "--shape: 'huge' (valid: legged, tiny"),
    (["bench", "env"], "the following arguments are required: --task"),
    (["bench", "physics", "--device", "cuda"], "--device: bench physics compares CPU physics backends (valid: cpu)"),
]


@pytest.mark.parametrize(("argv", "expected"), OTHER, ids=[" ".join(c[0])[:40] for c in OTHER])
def test_bad_input_of_the_other_commands(
    argv: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run, file = tmp_path / "run", tmp_path / "a_file"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"iteration": 0, "env_steps": 1, "wall_time_s": 1.0, "sps": 1.0}\n')
    file.write_text("x")
    names = {"missing": str(tmp_path / "missing"), "run": str(run), "file": str(file), "nan": _nan(tmp_path)}
    assert main([token.format(**names) for token in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("redline "), err
    assert expected.format(**names) in err[0]
    assert not (tmp_path / "nan" / "exported").exists()


@pytest.mark.sim
def test_resume_from_another_tasks_checkpoint_is_one_line_and_leaves_no_run(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Found only once the env exists (a manager-based task's observation size is known then): still one line, and
    the run folder made for it is removed."""
    foreign = tmp_path / "model_5.pt"
    actor = {
        "mlp.0.weight": torch.zeros(32, 60),
        "mlp.0.bias": torch.zeros(32),
        "distribution.std_param": torch.ones(8),
    }
    torch.save({"actor_state_dict": actor, "critic_state_dict": {}, "iter": 5}, foreign)
    log_root = tmp_path / "logs"
    assert main([*TRAIN, "--num_envs", "4", "--log_root", str(log_root), "--resume", str(foreign)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--resume: '{foreign}' does not fit task Redline-Cartpole" in err[0], err
    assert not any(log_root.rglob("*/*"))

"""The memory estimate that refuses runs too big for the host or GPU before the simulator starts."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from redline.envs import memory
from redline.envs.memory import (
    UNKNOWN_ACTIONS,
    UNKNOWN_OBS,
    Footprint,
    RolloutShape,
    check_env_count,
    check_run,
    footprint,
    rollout_shape,
)
from redline.errors import UserError

GIB = 1 << 30


def test_the_rollout_storage_is_t_x_n_x_the_floats_of_a_transition() -> None:
    shape = RolloutShape(num_envs=1000, num_steps=10, obs_dim=48, critic_obs_dim=0, action_dim=12, num_mini_batches=4)
    # T x N x (obs + critic obs + 3 x actions + 6) x 4 bytes, plus one gathered minibatch (a quarter)
    assert shape.storage_bytes() == (10_000 + 2_500) * (48 + 36 + 6) * 4


def test_footprints_fall_back_for_tasks_not_measured() -> None:
    assert footprint("Redline-Cartpole-Play", "mujoco_cpu") == footprint("Redline-Cartpole", "mujoco_cpu")
    assert footprint("Isaac-Humanoid-v0", None) == memory.DEFAULT_FOOTPRINT
    assert Footprint(fixed_mib=1, per_env_kib=2).bytes(1024) == (1 << 20) + 2 * (1 << 20)


def test_a_run_that_does_not_fit_is_one_line_with_estimate_and_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "host_available_bytes", lambda: 8 * GIB)
    shape = RolloutShape(num_envs=1_000_000, num_steps=10_000, obs_dim=4, critic_obs_dim=0, action_dim=1)
    with pytest.raises(UserError) as caught:
        check_run("Redline-Cartpole", "mujoco_cpu", "cpu", shape)
    text = str(caught.value)
    assert text.startswith("--num_envs: 1000000 envs x 10000 steps of Redline-Cartpole need an estimated ")
    assert "but this host has 8.0 GiB available" in text and "--no_memory_check" in text
    check_run("Redline-Cartpole", "mujoco_cpu", "cpu", RolloutShape(256, 16, 4, 0, 1))  # the README's run fits


def test_ranks_on_one_host_share_its_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "host_available_bytes", lambda: 8 * GIB)
    per_rank = footprint("Redline-Ant", None).bytes(50_000)
    assert per_rank < 8 * GIB < 4 * per_rank
    check_env_count("Redline-Ant", 50_000, ranks=1)
    with pytest.raises(UserError, match=r"^--num_envs: 50000 envs of Redline-Ant in each of 4 processes need "):
        check_env_count("Redline-Ant", 50_000, ranks=4)  # names the processes: `--nproc 64` on 4 envs was refused as
    # '4 envs of Redline-Cartpole need an estimated 25.0 GiB' (issue 22), blaming the env count


def test_on_cuda_the_device_memory_is_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "host_available_bytes", lambda: 512 * GIB)
    monkeypatch.setattr(memory, "gpu_available_bytes", lambda device: 1 * GIB)
    with pytest.raises(UserError, match=r"but cuda:0 has 1\.0 GiB available"):
        check_run("Redline-Ant", "newton_mjwarp", "cuda:0", RolloutShape(100_000, 24, 60, 0, 8))


def test_cgroup_limits_are_read_v1_and_v2(tmp_path: Path) -> None:
    (tmp_path / "memory.max").write_text("1073741824\n")
    (tmp_path / "memory.current").write_text("268435456\n")
    assert memory._headroom(tmp_path, "memory.max", "memory.current") == 768 << 20
    (tmp_path / "memory.max").write_text("max\n")
    assert memory._headroom(tmp_path, "memory.max", "memory.current") is None
    assert memory._headroom(tmp_path / "missing", "memory.max", "memory.current") is None
    available = memory.host_available_bytes()
    assert available is None or available > 0


def test_three_billion_envs_are_refused_in_well_under_a_second() -> None:
    """Before Isaac Lab is imported: the whole command, interpreter start-up included."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "redline.cli", "train", "--task", "Redline-Cartpole", "--num_envs", "3000000000"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.perf_counter() - start
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert "3000000000 envs of Redline-Cartpole need an estimated" in done.stderr
    assert elapsed < 3.0, elapsed  # ~0.3 s on an idle core here; the bound leaves room for a loaded CI machine


def test_the_rollout_shape_comes_from_the_final_configs_with_unknown_sizes_assumed() -> None:
    """A direct task gives its sizes as numbers; a manager-based one (sizes known once the env exists) counts as
    :data:`UNKNOWN_OBS` observations and :data:`UNKNOWN_ACTIONS` actions; the widest network sizes the learner."""
    agent = NS(
        num_steps_per_env=24,
        algorithm=NS(num_mini_batches=4),
        actor=NS(hidden_dims=[128, 128]),
        critic=NS(hidden_dims=[512, 256, 128]),
    )
    direct = NS(scene=NS(num_envs=64), observation_space=4, state_space=0, action_space=1)
    assert rollout_shape(direct, agent) == RolloutShape(64, 24, 4, 0, 1, 4, (512, 256, 128))
    managed = NS(scene=NS(num_envs=8))
    assert rollout_shape(managed, agent) == RolloutShape(8, 24, UNKNOWN_OBS, 0, UNKNOWN_ACTIONS, 4, (512, 256, 128))


def test_sacs_replay_is_the_buffer_x_envs_x_a_transitions_bytes() -> None:
    shape = RolloutShape(100, 4, obs_dim=10, critic_obs_dim=5, action_dim=3, replay_per_env=1000, batch_size=256)
    # obs and next obs of both groups, action and reward as 4-byte floats; done and time-out as bytes
    assert shape.replay_bytes() == 1000 * 100 * ((2 * 15 + 3 + 1) * 4 + 2)
    assert shape.storage_bytes() == 0  # SAC has no rollout storage
    saved = RolloutShape(100, 4, 10, 5, 3, replay_per_env=1000, batch_size=256, save_replay=True)
    assert saved.replay_bytes() == 2 * shape.replay_bytes()  # a checkpoint copies the replay before writing it
    assert RolloutShape(100, 4, 10, 5, 3).replay_bytes() == 0  # PPO


def test_a_replay_that_does_not_fit_names_the_buffer_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "host_available_bytes", lambda: 8 * GIB)
    monkeypatch.setattr(memory, "gpu_available_bytes", lambda device: 8 * GIB)
    fits = RolloutShape(1024, 4, obs_dim=48, critic_obs_dim=0, action_dim=12, replay_per_env=1024, batch_size=1024)
    check_run("Redline-Velocity-Flat-Go1", "mujoco_cpu", "cpu", fits)  # 0.4 GiB of replay
    big = dataclasses.replace(fits, replay_per_env=100_000)  # 42 GiB of replay
    for device in ("cpu", "cuda:0"):
        with pytest.raises(UserError) as caught:
            check_run("Redline-Velocity-Flat-Go1", "mujoco_cpu", device, big)
        text = str(caught.value)
        assert text.startswith(
            "agent.algorithm.buffer_size_per_env: 1024 envs x 100000 replay transitions of Redline-Velocity-Flat-Go1 "
            "need an estimated "
        ), text
        assert "(a smaller agent.algorithm.buffer_size_per_env or fewer envs fit;" in text
    ppo = dataclasses.replace(big, replay_per_env=0, batch_size=0)  # the same run without a replay fits
    check_run("Redline-Velocity-Flat-Go1", "mujoco_cpu", "cpu", ppo)


def test_sacs_shape_comes_from_its_agent_config() -> None:
    algorithm = NS(buffer_size_per_env=512, batch_size=2048, save_replay=True)
    agent = NS(num_steps_per_env=4, algorithm=algorithm, actor=NS(hidden_dims=[64]), critic=NS(hidden_dims=[128]))
    direct = NS(scene=NS(num_envs=64), observation_space=4, state_space=0, action_space=1)
    expected = RolloutShape(64, 4, 4, 0, 1, 1, (128,), replay_per_env=512, batch_size=2048, save_replay=True)
    assert rollout_shape(direct, agent) == expected

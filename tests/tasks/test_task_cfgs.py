"""Every registered task: configs load without the simulator running; Play twins only shrink and quiet."""

from __future__ import annotations

import pytest

from redline.assets import asset_root
from redline.envs import registry

TRAIN_TASKS = [t for t in registry.redline_task_ids() if not t.endswith(registry.PLAY_SUFFIX)]
VELOCITY_TASKS = [t for t in TRAIN_TASKS if t.startswith("Redline-Velocity-")]


def test_every_task_has_a_play_twin() -> None:
    assert TRAIN_TASKS, "no Redline-* task registered"
    for task in TRAIN_TASKS:
        assert registry.play_twin(task) == task + "-Play"


def _structure(env_cfg: object) -> tuple[object, object]:
    """(observation structure, action structure): the spaces of a direct env, the term names of a manager-based one."""
    if hasattr(env_cfg, "observation_space"):
        return env_cfg.observation_space, env_cfg.action_space
    groups = {name: list(_terms(group)) for name, group in _terms(env_cfg.observations).items()}
    return groups, list(_terms(env_cfg.actions))


def _terms(cfg: object) -> dict[str, object]:
    return {k: v for k, v in vars(cfg).items() if not k.startswith("_") and v is not None and not isinstance(v, bool)}


@pytest.mark.parametrize("task", TRAIN_TASKS)
def test_play_twin_keeps_spaces_and_shrinks(task: str) -> None:
    env_cfg, agent_cfg = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", [])
    play_cfg, play_agent = registry.load_cfgs(task + "-Play", "rsl_rl_cfg_entry_point", [])
    assert _structure(play_cfg) == _structure(env_cfg)
    assert play_cfg.scene.num_envs < env_cfg.scene.num_envs
    assert play_agent.experiment_name == agent_cfg.experiment_name  # play finds the training runs


@pytest.mark.parametrize("task", VELOCITY_TASKS)
def test_play_twin_turns_noise_and_pushes_off(task: str) -> None:
    env_cfg, _ = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", [])
    play_cfg, _ = registry.load_cfgs(task + "-Play", "rsl_rl_cfg_entry_point", [])
    assert env_cfg.observations.policy.enable_corruption and not play_cfg.observations.policy.enable_corruption
    assert env_cfg.events.push_robot is not None and play_cfg.events.push_robot is None
    assert (env_cfg.seeding.strategy, play_cfg.seeding.strategy) == ("per_env", "eval")


@pytest.mark.parametrize("task", registry.redline_task_ids())
def test_assets_point_at_local_files(task: str) -> None:
    env_cfg, _ = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", [])
    paths = [getattr(getattr(cfg, "spawn", None), "usd_path", None) for cfg in vars(env_cfg.scene).values()]
    usd_paths = [p for p in paths if p]
    assert usd_paths, "the scene spawns no USD file"
    for path in usd_paths:
        assert "://" not in path and path.startswith(str(asset_root())), path


@pytest.mark.parametrize("task", registry.redline_task_ids())
def test_registered_with_isaac_labs_entry_points(task: str) -> None:
    """The env config and the one rsl_rl agent config (read by both learners), as Isaac Lab's scripts expect."""
    import gymnasium as gym

    kwargs = gym.spec(task).kwargs
    assert {"env_cfg_entry_point", "rsl_rl_cfg_entry_point"} <= set(kwargs) and kwargs["default_agent"] == "rsl_rl"


def test_cfgs_are_fresh_copies() -> None:
    a, _ = registry.load_cfgs("Redline-Cartpole", "rsl_rl_cfg_entry_point", [])
    a.scene.num_envs = 3
    b, _ = registry.load_cfgs("Redline-Cartpole", "rsl_rl_cfg_entry_point", [])
    assert b.scene.num_envs != 3


def test_overrides_apply_and_bad_ones_are_user_errors() -> None:
    from redline.errors import UserError

    env_cfg, agent_cfg = registry.load_cfgs(
        "Redline-Cartpole", "rsl_rl_cfg_entry_point", ["env.scene.num_envs=12", "agent.max_iterations=7"]
    )
    assert env_cfg.scene.num_envs == 12 and agent_cfg.max_iterations == 7
    with pytest.raises(UserError, match=r"'env.scene' has no field 'num_env' \(valid: .*num_envs"):
        registry.load_cfgs("Redline-Cartpole", "rsl_rl_cfg_entry_point", ["env.scene.num_env=1"])
    with pytest.raises(UserError, match="expects int"):
        registry.load_cfgs("Redline-Cartpole", "rsl_rl_cfg_entry_point", ["agent.max_iterations=many"])
    with pytest.raises(UserError, match=r"keys start with 'env\.' or 'agent\.'"):
        registry.load_cfgs("Redline-Cartpole", "rsl_rl_cfg_entry_point", ["scene.num_envs=1"])

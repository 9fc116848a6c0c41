"""The Go1's and the G1's left-right mirror (``redline_tasks.velocity.mdp.symmetry``), for rsl_rl's symmetry
extension and SAC's."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from tensordict import TensorDict

from redline_tasks.velocity.mdp.symmetry import (
    go1_left_right,
    joint_mirror,
    left_right,
    mirror_actions,
    mirror_policy,
    mirror_tensors,
)

LEGS = ("FR", "FL", "RR", "RL")
BY_LEG = tuple(f"{leg}_{j}_joint" for leg in LEGS for j in ("hip", "thigh", "calf"))
"""MuJoCo Menagerie's order: leg by leg."""
BY_KIND = tuple(f"{leg}_{j}_joint" for j in ("hip", "thigh", "calf") for leg in ("FL", "FR", "RL", "RR"))
"""Isaac Lab's PhysX order: joint kind by joint kind."""
G1_LEG = ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")
G1_ARM = ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_roll", "wrist_pitch", "wrist_yaw")
G1 = (
    *(f"{side}_{j}_joint" for side in ("left", "right") for j in G1_LEG),
    *(f"waist_{axis}_joint" for axis in ("yaw", "roll", "pitch")),
    *(f"{side}_{j}_joint" for side in ("left", "right") for j in G1_ARM),
)
"""The G1's 29 joints in the model's order (legs, waist, arms)."""


def _env(names: tuple[str, ...]) -> SimpleNamespace:
    robot = SimpleNamespace(joint_names=list(names))
    unwrapped = SimpleNamespace(scene={"robot": robot})
    return SimpleNamespace(unwrapped=unwrapped)


@pytest.mark.parametrize("names", [BY_LEG, BY_KIND], ids=["by_leg", "by_kind"])
def test_the_mirror_swaps_left_and_right_legs_and_flips_the_hips(names: tuple[str, ...]) -> None:
    partners, signs = joint_mirror(names)
    for i, name in enumerate(names):
        leg, _, rest = name.partition("_")
        other = {"FL": "FR", "FR": "FL", "RL": "RR", "RR": "RL"}[leg]
        assert names[partners[i]] == f"{other}_{rest}"
        assert signs[i] == (-1.0 if rest == "hip_joint" else 1.0)
    actions = torch.randn(5, 12)
    assert torch.equal(mirror_actions(mirror_actions(actions, names), names), actions)  # an involution


def test_a_robot_turning_left_mirrors_into_one_turning_right() -> None:
    policy = torch.zeros(1, 48)
    policy[0, :12] = torch.tensor([1.0, 0.3, 0.0, 0.2, 0.1, 0.5, 0.0, 0.05, -1.0, 1.0, 0.4, 0.8])
    policy[0, 12 + BY_LEG.index("FL_hip_joint")] = 0.2  # the left front hip abducted
    mirrored = mirror_policy(policy, BY_LEG)
    assert mirrored[0, :12].tolist() == pytest.approx(
        [1.0, -0.3, 0.0, -0.2, 0.1, -0.5, 0.0, -0.05, -1.0, 1.0, -0.4, -0.8]
    )
    assert mirrored[0, 12 + BY_LEG.index("FR_hip_joint")] == pytest.approx(-0.2)
    assert mirrored[0, 12 + BY_LEG.index("FL_hip_joint")] == 0.0


def test_the_augmentation_appends_mirror_images_and_keeps_actions_and_last_actions_consistent() -> None:
    obs = TensorDict({"policy": torch.randn(4, 48)}, batch_size=[4])
    actions = obs["policy"][:, 36:48].clone()  # the last actions' block, as the env reports them
    obs_aug, actions_aug = go1_left_right(_env(BY_KIND), obs, actions)
    assert obs_aug is not None and actions_aug is not None
    assert torch.equal(obs_aug["policy"][:4], obs["policy"]) and torch.equal(actions_aug[:4], actions)
    assert torch.equal(obs_aug["policy"][4:, 36:48], actions_aug[4:])
    assert go1_left_right(_env(BY_KIND), None, None) == (None, None)


def test_the_mirror_traces_as_one_graph_from_tensors_made_once() -> None:
    """Inside SAC's captured gradient step: one graph (no host read), the same numbers, and its index and sign
    tensors made once per robot and device (a host-to-device copy cannot sit in a CUDA graph)."""
    obs = TensorDict({"policy": torch.randn(4, 12 + 3 * len(G1))}, batch_size=[4])
    actions = torch.randn(4, len(G1))
    env = _env(G1)
    torch._dynamo.reset()
    compiled = torch.compile(left_right, fullgraph=True, backend="eager")
    expected_obs, expected_actions = left_right(env, obs, actions)
    got_obs, got_actions = compiled(env, obs, actions)
    assert torch.equal(got_obs["policy"], expected_obs["policy"]) and torch.equal(got_actions, expected_actions)
    first = mirror_tensors(G1, actions.device, actions.dtype)
    assert all(a is b for a, b in zip(first, mirror_tensors(G1, actions.device, actions.dtype), strict=True))


def test_a_robot_without_mirror_images_is_refused_naming_the_joint() -> None:
    with pytest.raises(ValueError, match="joint 'FL_tail_joint' has no mirror image"):
        joint_mirror((*BY_LEG, "FL_tail_joint"))
    with pytest.raises(ValueError, match="a policy observation of 47 entries"):
        mirror_policy(torch.zeros(2, 47), BY_LEG)


def test_the_g1_mirror_swaps_sides_keeps_the_waist_and_flips_rolls_and_yaws() -> None:
    partners, signs = joint_mirror(G1)
    mirror = {name: (G1[partners[i]], signs[i]) for i, name in enumerate(G1)}
    assert mirror["left_hip_pitch_joint"] == ("right_hip_pitch_joint", 1.0)
    assert mirror["right_hip_roll_joint"] == ("left_hip_roll_joint", -1.0)
    assert mirror["left_knee_joint"] == ("right_knee_joint", 1.0)
    assert mirror["left_shoulder_yaw_joint"] == ("right_shoulder_yaw_joint", -1.0)
    assert mirror["right_wrist_pitch_joint"] == ("left_wrist_pitch_joint", 1.0)
    assert mirror["waist_yaw_joint"] == ("waist_yaw_joint", -1.0)
    assert mirror["waist_roll_joint"] == ("waist_roll_joint", -1.0)
    assert mirror["waist_pitch_joint"] == ("waist_pitch_joint", 1.0)
    assert sum(s < 0 for s in signs) == 16  # 2 x 7 (hip, ankle, shoulder and wrist rolls and yaws) + the waist's 2
    actions = torch.randn(5, 29)
    assert torch.equal(mirror_actions(mirror_actions(actions, G1), G1), actions)  # an involution
    policy = torch.randn(3, 12 + 3 * 29)
    assert torch.equal(mirror_policy(mirror_policy(policy, G1), G1), policy)
    assert go1_left_right is left_right  # the Go1's saved configs name the same function


def test_the_g1_default_pose_is_its_own_mirror_image() -> None:
    """Actions and joint observations are offsets from the default pose: the mirror is exact only if the pose is
    symmetric (the shoulder rolls at +-0.2 rad)."""
    import re

    from redline.assets.robots import UNITREE_G1_CFG

    pose = torch.tensor(
        [next((v for k, v in UNITREE_G1_CFG.init_state.joint_pos.items() if re.fullmatch(k, n)), 0.0) for n in G1]
    )
    assert pose.abs().sum() > 0
    assert torch.equal(mirror_actions(pose[None], G1)[0], pose)


@pytest.mark.parametrize(
    "module, name",
    [("go1_flat_sac_cfg", "Go1FlatSACRunnerCfg"), ("g1_flat_sac_cfg", "G1FlatSACRunnerCfg")],
)
def test_the_flat_legged_sac_recipes_train_on_this_mirror(module: str, name: str) -> None:
    """The Go1's and the G1's SAC agents augment every minibatch with :func:`left_right` (a name rsl_rl resolves),
    and the learner's config reader takes the agent as the runner hands it over."""
    import importlib

    from rsl_rl.utils import resolve_callable

    from redline.envs.prepare import runner_cfg_dict
    from redline.learning.sac import SACConfig

    agent = runner_cfg_dict(getattr(importlib.import_module(f"redline_tasks.velocity.agents.{module}"), name)())
    symmetry = agent["algorithm"]["symmetry_cfg"]
    assert symmetry["use_data_augmentation"] and not symmetry["use_mirror_loss"]
    assert resolve_callable(symmetry["data_augmentation_func"]) is left_right
    cfg = SACConfig.from_rsl_rl({k: v for k, v in agent.items() if k in ("algorithm", "actor", "critic", "obs_groups")})
    assert cfg.batch_size == 512 and cfg.updates_per_step == 8

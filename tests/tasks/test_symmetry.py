"""The Go1's left-right mirror (``redline_tasks.velocity.mdp.symmetry``), for rsl_rl's symmetry extension."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from tensordict import TensorDict

from redline_tasks.velocity.mdp.symmetry import go1_left_right, joint_mirror, mirror_actions, mirror_policy

LEGS = ("FR", "FL", "RR", "RL")
BY_LEG = tuple(f"{leg}_{j}_joint" for leg in LEGS for j in ("hip", "thigh", "calf"))
"""MuJoCo Menagerie's order: leg by leg."""
BY_KIND = tuple(f"{leg}_{j}_joint" for j in ("hip", "thigh", "calf") for leg in ("FL", "FR", "RL", "RR"))
"""Isaac Lab's PhysX order: joint kind by joint kind."""


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


def test_a_robot_without_mirror_images_is_refused_naming_the_joint() -> None:
    with pytest.raises(ValueError, match="joint 'FL_tail_joint' has no mirror image"):
        joint_mirror((*BY_LEG, "FL_tail_joint"))
    with pytest.raises(ValueError, match="a policy observation of 47 entries"):
        mirror_policy(torch.zeros(2, 47), BY_LEG)

"""The Go1's left-right symmetry for rsl_rl's symmetry extension (``symmetry_cfg.data_augmentation_func``).

Mirroring the robot in its sagittal (x-z) plane swaps the left and right legs (FL <-> FR, RL <-> RR), flips the hip
(abduction) joints' sign and keeps the thigh and calf joints'; in the base frame it flips the lateral velocity, the
roll and yaw rates and the gravity's y component, and the command's lateral velocity and yaw rate. The default pose
is mirror-symmetric (hips at +-0.1 rad), so the joint observations and actions, taken relative to it, mirror the same
way. The legs are found by joint name, whatever order the simulator lists them in.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from tensordict import TensorDict

BASE_SIGNS = (1, -1, 1, -1, 1, -1, 1, -1, 1, 1, -1, -1)
"""The mirror's signs for the policy observation's first 12 entries: base linear velocity (x, y, z), base angular
velocity (roll, pitch, yaw rate), projected gravity (x, y, z), velocity command (x, y, yaw rate)."""
SIDES = {"FL": "FR", "FR": "FL", "RL": "RR", "RR": "RL"}
"""Each leg's mirror image."""


@functools.cache
def joint_mirror(joint_names: tuple[str, ...]) -> tuple[list[int], list[float]]:
    """For each joint, the index of its mirror image and the sign its position takes (-1 for the hips).

    Raises:
        ValueError: a joint whose name does not start with a leg (``FL_``, ``FR_``, ``RL_``, ``RR_``) or whose
            mirror image is missing.
    """
    index = {name: i for i, name in enumerate(joint_names)}
    partners, signs = [], []
    for name in joint_names:
        leg, _, rest = name.partition("_")
        if leg not in SIDES or f"{SIDES[leg]}_{rest}" not in index:
            raise ValueError(f"symmetry: joint '{name}' has no mirror image among {list(joint_names)}")
        partners.append(index[f"{SIDES[leg]}_{rest}"])
        signs.append(-1.0 if rest.startswith("hip") else 1.0)
    return partners, signs


def mirror_policy(policy: torch.Tensor, joint_names: tuple[str, ...]) -> torch.Tensor:
    """The mirror image of a batch of policy observations ``(B, 12 + 3 J)``: base terms, then joint positions,
    joint velocities and last actions (J each)."""
    num_joints = len(joint_names)
    if policy.shape[-1] != len(BASE_SIGNS) + 3 * num_joints:
        raise ValueError(
            f"symmetry: a policy observation of {policy.shape[-1]} entries; expected 12 + 3 x {num_joints}"
        )
    partners, signs = joint_mirror(joint_names)
    base = policy[:, : len(BASE_SIGNS)] * policy.new_tensor(BASE_SIGNS)
    joints = policy[:, len(BASE_SIGNS) :].reshape(-1, 3, num_joints)[:, :, partners] * policy.new_tensor(signs)
    return torch.cat([base, joints.reshape(policy.shape[0], -1)], dim=-1)


def mirror_actions(actions: torch.Tensor, joint_names: tuple[str, ...]) -> torch.Tensor:
    """The mirror image of a batch of joint-position actions ``(B, J)`` (offsets from the default pose)."""
    partners, signs = joint_mirror(joint_names)
    return actions[:, partners] * actions.new_tensor(signs)


@torch.no_grad()
def go1_left_right(
    env: Any, obs: TensorDict | None = None, actions: torch.Tensor | None = None
) -> tuple[TensorDict | None, torch.Tensor | None]:
    """rsl_rl's augmentation: the originals, then their mirror images (twice the batch); None stays None."""
    joint_names = tuple(env.unwrapped.scene["robot"].joint_names)
    obs_aug: TensorDict | None = None
    if obs is not None:
        mirrored = obs.clone()
        mirrored["policy"] = mirror_policy(obs["policy"], joint_names)
        obs_aug = TensorDict.cat([obs, mirrored])
    actions_aug = None if actions is None else torch.cat([actions, mirror_actions(actions, joint_names)])
    return obs_aug, actions_aug

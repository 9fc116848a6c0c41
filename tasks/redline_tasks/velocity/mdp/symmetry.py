"""The legged robots' left-right symmetry for rsl_rl's symmetry extension (``symmetry_cfg.data_augmentation_func``)
and SAC's (``algorithm.symmetry_cfg``): the Go1 and the G1.

Mirroring a robot in its sagittal (x-z) plane swaps its left and right joints (Go1: FL <-> FR, RL <-> RR; G1:
``left_`` <-> ``right_``; a joint without a side, the G1's waist, mirrors onto itself) and flips the sign of every
joint turning about the x (roll) or z (yaw) axis: the Go1's hip (abduction) joints, the G1's ``*_roll`` / ``*_yaw``
joints; pitch joints (the Go1's thighs and calves, the G1's hips, knees, ankles, shoulders, elbows and wrists in
pitch) keep theirs. In the base frame the mirror flips the lateral velocity, the roll and yaw rates and the gravity's
y component, and the command's lateral velocity and yaw rate. Both default poses are mirror-symmetric (the Go1's
hips at +-0.1 rad, the G1's shoulder rolls at +-0.2 rad), so the joint observations and actions, taken relative to
them, mirror the same way. The joints are found by name, whatever order the simulator lists them in.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from tensordict import TensorDict

BASE_SIGNS = (1, -1, 1, -1, 1, -1, 1, -1, 1, 1, -1, -1)
"""The mirror's signs for the policy observation's first 12 entries: base linear velocity (x, y, z), base angular
velocity (roll, pitch, yaw rate), projected gravity (x, y, z), velocity command (x, y, yaw rate)."""
SIDES = {"FL": "FR", "FR": "FL", "RL": "RR", "RR": "RL", "left": "right", "right": "left"}
"""Each side's mirror image: the Go1's legs, the G1's sides (the name's first ``_``-separated word)."""
CENTRE = ("waist",)
"""First words of the joints on the plane of symmetry, each its own mirror image (the G1's waist)."""
FLIPPED = ("hip_joint", "roll_joint", "yaw_joint")
"""Name endings of the joints turning about the x or z axis, whose mirror image has the opposite sign: the Go1's
``{leg}_hip_joint`` (abduction), the G1's ``*_roll_joint`` / ``*_yaw_joint``."""


@functools.cache
def joint_mirror(joint_names: tuple[str, ...]) -> tuple[list[int], list[float]]:
    """For each joint, the index of its mirror image and the sign its position takes (-1 for :data:`FLIPPED`).

    Raises:
        ValueError: a joint whose name starts with neither a side (:data:`SIDES`) nor :data:`CENTRE`, or whose
            mirror image is missing.
    """
    index = {name: i for i, name in enumerate(joint_names)}
    partners, signs = [], []
    for name in joint_names:
        side, _, rest = name.partition("_")
        partner = name if side in CENTRE else f"{SIDES[side]}_{rest}" if side in SIDES else None
        if partner not in index:
            raise ValueError(f"symmetry: joint '{name}' has no mirror image among {list(joint_names)}")
        partners.append(index[partner])
        signs.append(-1.0 if rest.endswith(FLIPPED) else 1.0)
    return partners, signs


@functools.cache
def mirror_tensors(
    joint_names: tuple[str, ...], device: torch.device, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`joint_mirror` and :data:`BASE_SIGNS` as tensors on ``device``: the joints' partner indices, their
    signs and the base signs, made once per robot and device (no host-to-device copy in a captured step)."""
    partners, signs = joint_mirror(joint_names)
    return (
        torch.tensor(partners, device=device),
        torch.tensor(signs, device=device, dtype=dtype),
        torch.tensor(BASE_SIGNS, device=device, dtype=dtype),
    )


def mirror_policy(policy: torch.Tensor, joint_names: tuple[str, ...]) -> torch.Tensor:
    """The mirror image of a batch of policy observations ``(B, 12 + 3 J)``: base terms, then joint positions,
    joint velocities and last actions (J each)."""
    num_joints = len(joint_names)
    if policy.shape[-1] != len(BASE_SIGNS) + 3 * num_joints:
        raise ValueError(
            f"symmetry: a policy observation of {policy.shape[-1]} entries; expected 12 + 3 x {num_joints}"
        )
    partners, signs, base_signs = mirror_tensors(joint_names, policy.device, policy.dtype)
    base = policy[:, : len(BASE_SIGNS)] * base_signs
    joints = policy[:, len(BASE_SIGNS) :].reshape(-1, 3, num_joints).index_select(2, partners) * signs
    return torch.cat([base, joints.reshape(policy.shape[0], -1)], dim=-1)


def mirror_actions(actions: torch.Tensor, joint_names: tuple[str, ...]) -> torch.Tensor:
    """The mirror image of a batch of joint-position actions ``(B, J)`` (offsets from the default pose)."""
    partners, signs, _ = mirror_tensors(joint_names, actions.device, actions.dtype)
    return actions.index_select(1, partners) * signs


@torch.no_grad()
def left_right(
    env: Any, obs: TensorDict | None = None, actions: torch.Tensor | None = None
) -> tuple[TensorDict | None, torch.Tensor | None]:
    """rsl_rl's augmentation: the originals, then their mirror images (twice the batch); None stays None. The
    robot's joints (``env.unwrapped.scene["robot"].joint_names``) say which mirror (:func:`joint_mirror`)."""
    joint_names = tuple(env.unwrapped.scene["robot"].joint_names)
    obs_aug: TensorDict | None = None
    if obs is not None:
        mirrored = obs.clone()
        mirrored["policy"] = mirror_policy(obs["policy"], joint_names)
        obs_aug = TensorDict.cat([obs, mirrored])
    actions_aug = None if actions is None else torch.cat([actions, mirror_actions(actions, joint_names)])
    return obs_aug, actions_aug


go1_left_right = left_right
"""The name the Go1's symmetry agent (and its saved configs) gives :func:`left_right`."""

"""Every PPO agent config that Isaac Lab 3.0 and redline register for rsl_rl builds redline's drop-in: none refused.

The configs are read as Isaac Lab's train script reads them (``load_cfg_from_registry``, its presets resolved —
each named preset in turn —, Isaac Lab's rsl_rl 5 shim, ``to_dict()``), their ``algorithm.class_name`` set to redline's,
and the class is built against a stand-in env whose observation groups have the shapes the config's models need
(1-D, or ``(C, H, W)`` images for a CNN model's image groups), then acts once. Configs of other algorithms
(``Distillation``, a task's own PPO subclass such as ``SharedEncoderPPO``) keep their class: replacing it would drop
what that class adds (docs/learner.md).
"""

from __future__ import annotations

import copy
import importlib.metadata
from typing import Any

import gymnasium as gym
import pytest
import torch
from tensordict import TensorDict

from redline.learning.rsl_rl import CLASS_PATH
from redline.learning.rsl_rl import PPO as DropIn

IMAGE_NAMES = ("image", "heightmap", "perception", "camera", "rgb", "depth")
"""Substrings of the observation-group names that Isaac Lab's camera and height-map tasks feed to a CNN."""
NUM_ENVS = 8


def _ppo_configs() -> list[tuple[str, dict[str, Any]]]:
    """``(task:entry point[:preset], runner config dict)`` of every registered rsl_rl PPO config."""
    import isaaclab_tasks  # noqa: F401  (registers Isaac Lab's tasks; heavy, so only when this test runs)
    from isaaclab_rl.rsl_rl import handle_deprecated_rsl_rl_cfg
    from isaaclab_tasks.utils.hydra import collect_presets, resolve_presets
    from isaaclab_tasks.utils.parse_cfg import load_cfg_from_registry

    import redline_tasks  # noqa: F401  (registers redline's)

    version = importlib.metadata.version("rsl-rl-lib")
    found = []
    for spec in list(gym.registry.values()):
        for key in sorted(spec.kwargs or {}):
            if not (key.startswith("rsl_rl") and key.endswith("cfg_entry_point")) or "distillation" in key:
                continue
            cfg = load_cfg_from_registry(spec.id, key)
            names = sorted({n for alternatives in collect_presets(cfg).values() for n in alternatives} - {"default"})
            for name in ["default", *names]:
                preset = resolve_presets(copy.deepcopy(cfg), (name,))
                runner = handle_deprecated_rsl_rl_cfg(preset, version).to_dict()
                if str(runner["algorithm"]["class_name"]).rpartition(".")[2].rpartition(":")[2] == "PPO":
                    found.append((f"{spec.id}:{key}" + ("" if name == "default" else f":{name}"), runner))
    return found


def _stand_in(cfg: dict[str, Any]) -> Any:
    """An env with the config's observation groups: 1-D (width 11), or ``(3, 64, 64)`` images where a CNN model
    reads them (the groups named like images, else all of that model's groups)."""
    groups = cfg.get("obs_groups") or {}
    names = {g for gs in groups.values() for g in gs} | {"policy", "critic"}
    images: set[str] = set()
    for role in ("actor", "critic"):
        if "CNN" in str(cfg[role].get("class_name", "")):
            mine = groups.get(role) or ["policy"]
            named = {g for g in mine if any(s in g for s in IMAGE_NAMES)}
            images |= named or set(mine)

    class Env:
        num_envs, num_actions = NUM_ENVS, 4
        step_dt = 0.02

        @property
        def unwrapped(self) -> Any:
            return self

        def get_observations(self) -> TensorDict:
            data = {g: torch.rand(NUM_ENVS, *((3, 64, 64) if g in images else (11,))) for g in names}
            return TensorDict(data, batch_size=[NUM_ENVS])

    return Env()


CONFIGS = _ppo_configs()


def test_the_walk_finds_every_kind_of_stock_ppo_config() -> None:
    kinds = {
        (c["actor"]["class_name"].rpartition(".")[2], bool(c["algorithm"].get("symmetry_cfg"))) for _, c in CONFIGS
    }
    assert {("MLPModel", False), ("MLPModel", True), ("RNNModel", False), ("CNNModel", False)} <= kinds, kinds
    assert any(name.startswith("Redline-") for name, _ in CONFIGS)


@pytest.mark.parametrize("name", [name for name, _ in CONFIGS])
def test_every_stock_ppo_config_builds_redlines_class_and_acts(name: str) -> None:
    cfg = copy.deepcopy(dict(CONFIGS)[name])
    cfg["algorithm"]["class_name"] = CLASS_PATH
    cfg["multi_gpu"] = None
    env = _stand_in(cfg)
    obs = env.get_observations()
    alg = DropIn.construct_algorithm(obs, env, cfg, "cpu")
    with torch.inference_mode():
        actions = alg.act(obs)
    assert actions.shape == (NUM_ENVS, env.num_actions) and torch.isfinite(actions).all()

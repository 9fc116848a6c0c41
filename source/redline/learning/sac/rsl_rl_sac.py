"""redline's SAC as an rsl_rl algorithm class: runs inside rsl_rl 5.5.1's stock ``OnPolicyRunner``.

Stock Isaac Lab 3.0 builds only rsl_rl's ``OnPolicyRunner`` (or ``DistillationRunner``), which resolves
``algorithm.class_name`` with ``resolve_callable``; so one setting selects the off-policy learner in the stock train
and play scripts::

    agent.algorithm.class_name=redline.learning.sac.rsl_rl_sac:SAC

The runner's loop fits an off-policy learner: each iteration acts ``num_steps_per_env`` steps (each stored in the
replay by :meth:`SAC.process_env_step`), then calls :meth:`SAC.update`, which runs ``num_steps_per_env *
updates_per_step`` gradient steps. ``compute_returns`` has nothing to do. The runner's own host syncs stay (its NaN
check of every env step, its logger); the update makes none until its metrics are read once per iteration here.

Checkpoints keep rsl_rl's ``actor_state_dict`` (an rsl_rl ``MLPModel`` whose deterministic output is
``action_scale * tanh(mean)``), so the stock play script's ``get_inference_policy`` and its TorchScript / ONNX export
work on them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import torch
from rsl_rl.models import MLPModel
from rsl_rl.utils import resolve_obs_groups
from tensordict import TensorDict

from redline.errors import UserError
from redline.learning.distributed import Communicator
from redline.learning.dropin import DropIn
from redline.learning.sac.sac import SAC as RedlineSAC
from redline.learning.sac.sac import bind_symmetry, request_final_observation
from redline.learning.sac.sac_config import CLASS_PATH, SACConfig
from redline.seeding.plan import bind_action_noise

DIST_TIMEOUT_S = 1800.0
"""The process-group timeout quoted when a rank is lost under rsl_rl's runner (torch's default for NCCL) [s]."""


class SAC(DropIn):
    """What rsl_rl's ``OnPolicyRunner`` calls on its algorithm, done by :class:`redline.learning.sac.sac.SAC`
    (:class:`~redline.learning.dropin.DropIn`: the policy, modes and checkpoints' env part)."""

    learner: RedlineSAC

    @classmethod
    def construct_algorithm(cls, obs: TensorDict, env: Any, cfg: Mapping[str, Any], device: str) -> SAC:
        """rsl_rl's constructor hook: build the learner from the runner config (``cfg`` is only read).

        Raises:
            UserError: a setting out of its range or unknown (:meth:`SACConfig.from_rsl_rl`), a batch larger than the
                replay, or ``torch_compile_mode`` (one line each).
        """
        if cfg.get("torch_compile_mode") is not None:
            raise UserError(
                f"torch_compile_mode: {cfg['torch_compile_mode']!r} is not taken by algorithm.class_name={CLASS_PATH}"
                " (valid: None)"
            )
        plain = copy.deepcopy(dict(cfg))
        try:  # rsl_rl's rule for a missing actor / critic set: the env's group of that name, else "policy"
            plain["obs_groups"] = resolve_obs_groups(obs, plain.get("obs_groups") or {}, ["actor", "critic"])
        except ValueError as exc:
            raise UserError(f"obs_groups: {exc}") from None
        sac_cfg = SACConfig.from_rsl_rl(plain)
        comm = None
        if plain.get("multi_gpu"):  # rsl_rl's runner made the process group
            comm = Communicator.from_process_group(device, DIST_TIMEOUT_S)
        learner = RedlineSAC(obs, env.num_actions, sac_cfg, device=device, seed=int(cfg.get("seed", 0)), comm=comm)
        bind_action_noise(learner, env)
        request_final_observation(env)  # the stock script builds the task with the switch off
        bind_symmetry(learner, env, plain.get("algorithm") or {})
        return cls(learner, env)

    # the rollout -------------------------------------------------------------------------------------------------

    def process_env_step(
        self, obs: TensorDict, rewards: torch.Tensor, dones: torch.Tensor, extras: dict[str, Any]
    ) -> None:
        """Store the transition (``extras["time_outs"]``, ``extras["final_observation"]`` where the env gives it)."""
        self.learner.process_env_step(obs, rewards, dones, extras)

    def compute_returns(self, obs: TensorDict) -> None:
        """Nothing: n-step returns are computed when sampling."""

    def update(self) -> dict[str, float]:
        """The learner's update; its metrics read once, as floats for rsl_rl's logger."""
        metrics = self.learner.update()
        values = torch.stack([v.float().reshape(()) for v in metrics.values()]).tolist()
        return dict(zip(metrics, values, strict=True))

    # what the runner reads ------------------------------------------------------------------------------------------

    def get_policy(self) -> MLPModel:
        """The deployed policy (the actor, or its running average: ``policy_average``): export, inference,
        ``output_std``."""
        return self.learner.get_policy()

    def train_mode(self) -> None:
        super().train_mode()
        self.learner.policy.train()

    def eval_mode(self) -> None:
        super().eval_mode()
        self.learner.policy.eval()

    @property
    def learning_rate(self) -> float:
        """The actor's learning rate (read by rsl_rl's logger)."""
        return self.learner.learning_rate

    def broadcast_parameters(self) -> None:
        """Every rank takes rank 0's weights, target critic and normalisers."""
        self.learner.sync_replicas()

    # checkpoints ----------------------------------------------------------------------------------------------------

    def load(self, loaded_dict: dict[str, Any], load_cfg: dict | None = None, strict: bool = True) -> bool:
        """Load a checkpoint of this class; returns True (the runner continues at the saved iteration)."""
        if loaded_dict.get("algorithm") != "sac":
            raise UserError(
                f"checkpoint: not one of the off-policy learner (algorithm.class_name={CLASS_PATH}); "
                "train it with the class that wrote it"
            )
        return self.load_learner_and_env(loaded_dict, load_cfg, strict, "the off-policy learner")

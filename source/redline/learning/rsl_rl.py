"""redline's PPO as an rsl_rl algorithm class: a drop-in for rsl_rl 5.5.1's stock ``OnPolicyRunner``.

rsl_rl resolves ``algorithm.class_name`` with ``resolve_callable``, so one line in any Isaac Lab agent config (or one
Hydra override) puts redline's update inside the stock training and play scripts::

    isaaclab train --rl_library rsl_rl --task Isaac-Cartpole-Direct \
        agent.algorithm.class_name=redline.learning.rsl_rl:PPO

The stock runner keeps its own loop and logger (their host syncs: a NaN check of every env step, the logger's
per-step episode bookkeeping, ``.item()`` of every loss); the update is redline's (fused Adam over one flat buffer,
the bf16 precision policy with fp32 islands, the NaN guard, value normalisation, capture on CUDA). Checkpoints keep
rsl_rl's keys, so the stock ``play`` script loads them with this class or with rsl_rl's own PPO.
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
from redline.learning.config import PPOConfig
from redline.learning.limits import check_agent, check_rollout
from redline.learning.ppo import PPO as RedlinePPO
from redline.seeding.plan import bind_action_noise

CLASS_PATH = "redline.learning.rsl_rl:PPO"
"""The ``algorithm.class_name`` that selects this class."""


class PPO:
    """What rsl_rl's ``OnPolicyRunner`` calls on its algorithm, done by :class:`redline.learning.ppo.PPO`.

    Args:
        learner: the redline learner.
    """

    def __init__(self, learner: RedlinePPO) -> None:
        self.learner = learner
        self.rnd = None  # rsl_rl's runner asks; redline has no RND
        self.intrinsic_rewards = None

    @classmethod
    def construct_algorithm(cls, obs: TensorDict, env: Any, cfg: Mapping[str, Any], device: str) -> PPO:
        """rsl_rl's constructor hook: build the learner from the runner config (``cfg`` is only read).

        Raises:
            UserError: rsl_rl's multi-GPU mode (use ``redline train --nproc``), a setting out of its range
                (:mod:`redline.learning.limits`, as ``redline train`` checks), more minibatches than the rollout
                has transitions, or a setting the redline learner does not implement (named in one line).
        """
        if cfg.get("multi_gpu"):
            raise UserError(
                f"algorithm.class_name={CLASS_PATH}: not under rsl_rl's multi-GPU runner; use `redline train --nproc N`"
            )
        plain = copy.deepcopy(dict(cfg))
        plain["algorithm"] = {**plain.get("algorithm", {}), "class_name": "PPO"}
        check_agent(plain)  # redline train's range checks, inside the stock scripts too
        check_rollout(plain.get("num_steps_per_env", 24), env.num_envs, plain["algorithm"].get("num_mini_batches", 4))
        try:  # rsl_rl's rule for a missing actor / critic set: the env's group of that name, else "policy"
            plain["obs_groups"] = resolve_obs_groups(obs, plain.get("obs_groups") or {}, ["actor", "critic"])
        except ValueError as exc:
            raise UserError(f"obs_groups: {exc}") from None
        learner = RedlinePPO(
            obs, env.num_actions, PPOConfig.from_rsl_rl(plain), device=device, seed=int(cfg.get("seed", 0))
        )
        bind_action_noise(learner, env)
        return cls(learner)

    # the rollout -------------------------------------------------------------------------------------------------

    def act(self, obs: TensorDict) -> torch.Tensor:
        """Sample actions ``(N, A)`` and record the step (:meth:`redline.learning.ppo.PPO.act`)."""
        return self.learner.act(obs)

    def process_env_step(
        self, obs: TensorDict, rewards: torch.Tensor, dones: torch.Tensor, extras: dict[str, Any]
    ) -> None:
        """Record the env's answer (the next observation is read again by :meth:`act`)."""
        self.learner.process_env_step(rewards, dones, extras)

    def compute_returns(self, obs: TensorDict) -> None:
        """GAE over the stored rollout, bootstrapped from ``obs``."""
        self.learner.compute_returns(obs)

    def update(self) -> dict[str, float]:
        """redline's update; its losses under rsl_rl's names (``value``, ``surrogate``, ``entropy``), read once."""
        metrics = self.learner.update()
        with torch.no_grad():  # the runner logs get_policy().output_std: rsl_rl's distribution of the current std
            self.learner.actor.distribution.update(self.learner.action_std().reshape(1, -1) * 0.0)
        names = {"value": "value_loss", "surrogate": "surrogate_loss", "entropy": "entropy"}
        values = torch.stack([metrics[k].float().reshape(()) for k in names.values()]).tolist()
        return dict(zip(names, values, strict=True))

    # what the runner reads ------------------------------------------------------------------------------------------

    @property
    def learning_rate(self) -> float:
        """The current learning rate (read by rsl_rl's logger)."""
        return float(self.learner.learning_rate)

    def get_policy(self) -> MLPModel:
        """The actor, an rsl_rl ``MLPModel`` (export, inference, ``output_std``)."""
        return self.learner.actor

    def train_mode(self) -> None:
        self.learner.actor.train()
        self.learner.critic.train()

    def eval_mode(self) -> None:
        self.learner.actor.eval()
        self.learner.critic.eval()

    def broadcast_parameters(self) -> None:
        raise UserError(f"algorithm.class_name={CLASS_PATH}: rsl_rl's multi-GPU runner is not supported")

    # checkpoints ----------------------------------------------------------------------------------------------------

    def save(self) -> dict[str, Any]:
        """rsl_rl's keys (``actor_state_dict``, ``critic_state_dict``, ``optimizer_state_dict``) plus redline's."""
        return self.learner.state_dict()

    def load(self, loaded_dict: dict[str, Any], load_cfg: dict | None = None, strict: bool = True) -> bool:
        """Load a checkpoint of this class, of ``redline train`` or of rsl_rl's PPO; returns True (the runner then
        continues at the saved iteration, as rsl_rl does)."""
        if load_cfg is not None and not all(load_cfg.get(k, True) for k in ("actor", "critic", "optimizer")):
            raise UserError("load_cfg: the redline learner loads actor, critic and optimizer together")
        self.learner.load_state_dict(loaded_dict, strict=strict)
        return True

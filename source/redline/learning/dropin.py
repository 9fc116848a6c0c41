"""What rsl_rl 5.5.1's stock ``OnPolicyRunner`` calls on an algorithm class, once for redline's two drop-ins.

:class:`DropIn` holds a redline learner (PPO's :mod:`redline.learning.rsl_rl`, SAC's
:mod:`redline.learning.sac.rsl_rl_sac`) and the env's part of the checkpoints, and answers the runner's calls that do
not depend on the algorithm: the policy, train / eval mode, and the checkpoint's env part on save and load.
"""

from __future__ import annotations

from typing import Any

import torch
from rsl_rl.models import MLPModel
from tensordict import TensorDict

from redline.errors import UserError
from redline.run_state.parts import RunnerEnvState


class DropIn:
    """An rsl_rl algorithm class around a redline learner (``actor``, ``critic``, ``comm``, ``noise_generator``,
    ``state_dict``, ``load_state_dict``).

    Args:
        learner: the redline learner.
        env: the runner's env (its seeding counters and run state go into the checkpoints in one process: rsl_rl's
            multi-GPU runner saves on rank 0 alone, so the other ranks' envs cannot be gathered).
    """

    def __init__(self, learner: Any, env: Any = None) -> None:
        self.learner = learner
        self.env_state = RunnerEnvState(
            env, enabled=not learner.comm.distributed, generators={"noise_generator": learner.noise_generator}
        )
        """The env's part of the checkpoints (:class:`~redline.run_state.parts.RunnerEnvState`)."""
        self.rnd = None  # rsl_rl's runner asks; redline's learners have no RND
        self.intrinsic_rewards = None

    def act(self, obs: TensorDict) -> torch.Tensor:
        """The learner's actions ``(N, A)`` (PPO samples and records the step; SAC explores), once the env's part of
        a loaded checkpoint is restored (at the first action of training)."""
        return self.learner.act(self.env_state.before_act(obs))

    def get_policy(self) -> MLPModel:
        """The actor, an rsl_rl ``MLPModel`` (export, inference, ``output_std``)."""
        return self.learner.actor

    def train_mode(self) -> None:
        self.learner.actor.train()
        self.learner.critic.train()

    def eval_mode(self) -> None:
        self.learner.actor.eval()
        self.learner.critic.eval()

    def save(self) -> dict[str, Any]:
        """The learner's state plus, in one process, the env's seeding counters and run state
        (:meth:`~redline.run_state.parts.RunnerEnvState.save_into`)."""
        saved = self.learner.state_dict()
        self.env_state.save_into(saved)
        return saved

    def load_learner_and_env(self, loaded_dict: dict[str, Any], load_cfg: dict | None, strict: bool, who: str) -> bool:
        """Load the learner's state and the env's part (restored at the first action of training, not in play or
        export); returns True (the runner then continues at the saved iteration, as rsl_rl does).

        Raises:
            UserError: ``load_cfg`` leaves out the actor, critic or optimizer (``who`` names the learner).
        """
        if load_cfg is not None and not all(load_cfg.get(k, True) for k in ("actor", "critic", "optimizer")):
            raise UserError(f"load_cfg: {who} loads actor, critic and optimizer together")
        self.learner.load_state_dict(loaded_dict, strict=strict)
        self.env_state.load(loaded_dict)
        return True

"""What a SAC checkpoint holds and how it is restored: the learner's whole state (:func:`state_dict`), one rank's own
part for a data-parallel checkpoint (:func:`rank_state_dict`), and their restores. Tensors are copies. ``sac`` is
the learner (:class:`redline.learning.sac.sac.SAC`, which imports this module: typed ``Any`` to keep the import
graph free of circles)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import torch
from tensordict import TensorDict
from torch import nn

from redline.learning.sac.replay import philox_key


def state_dict(sac: Any) -> dict[str, Any]:
    """Everything to resume, rsl_rl's key names where they fit (``actor_state_dict``, ``critic_state_dict``,
    ``optimizer_state_dict`` = ``{"actor", "critic"}``), the rest under ``"sac"``: target critic, log alpha and
    its optimizer, the replay (unless ``save_replay`` is False), the noise generator and the step counters.
    Tensors are copies."""

    def copied(module: nn.Module) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in module.state_dict().items()}

    return {
        "actor_state_dict": copied(sac.actor),
        "critic_state_dict": copied(sac.critic),
        "optimizer_state_dict": {
            "actor": copy.deepcopy(sac.actor_optimizer.state_dict()),
            "critic": copy.deepcopy(sac.critic_optimizer.state_dict()),
        },
        "precision": sac.precision.mode,
        "algorithm": "sac",
        "sac": {
            "target_critic": copied(sac.target_qs),
            "log_alpha": sac.log_alpha.detach().clone(),
            "alpha_optimizer": copy.deepcopy(sac.alpha_optimizer.state_dict()),
            "replay": sac.replay.state_dict(with_data=sac.cfg.save_replay),
            "noise_generator": sac.noise_generator.get_state(),
            "gradient_steps": sac.gradient_steps,
            "seed": sac.seed,
            "reward_normalizer": None if sac.reward_normalizer is None else sac.reward_normalizer.state_dict(),
        },
    }


def rank_state_dict(sac: Any) -> dict[str, Any]:
    """This rank's own part of the state, as CPU copies: its envs' replay (unless ``save_replay`` is False), its
    exploration generator and its envs' running returns (reward normalisation). :meth:`state_dict` holds the
    calling rank's; a data-parallel checkpoint gathers every rank's (``Communicator.gather_objects``) and gives
    each its own back with :meth:`load_rank_state_dict`."""
    replay = sac.replay.state_dict(with_data=sac.cfg.save_replay)
    if replay["data"] is not None:
        replay["data"] = {k: v.cpu() for k, v in TensorDict(replay["data"]).flatten_keys(".").items()}
    norm = sac.reward_normalizer
    return {
        "replay": replay,
        "noise_generator": sac.noise_generator.get_state(),
        "reward_returns": None if norm is None else norm.returns.cpu(),
        "reward_batch": None if norm is None else norm.batch.cpu(),
    }


def load_rank_state_dict(sac: Any, state: Mapping[str, Any]) -> None:
    """Restore :meth:`rank_state_dict` (this rank's replay, exploration generator, running returns)."""
    replay = dict(state["replay"])
    if replay["data"] is not None:
        replay["data"] = TensorDict(dict(replay["data"])).unflatten_keys(".").to_dict()
    sac.replay.load_state_dict(replay)
    sac.noise_generator.set_state(state["noise_generator"].cpu())
    if sac.reward_normalizer is not None and state.get("reward_returns") is not None:
        sac.reward_normalizer.returns.copy_(state["reward_returns"])
        sac.reward_normalizer.batch.copy_(state["reward_batch"])


def load_state_dict(sac: Any, state: Mapping[str, Any], strict: bool = True) -> None:
    """Restore :meth:`state_dict` (a checkpoint without the ``"sac"`` part loads the actor and critic only)."""
    with torch.no_grad():
        sac.actor.load_state_dict(state["actor_state_dict"], strict=strict)
        sac.critic.load_state_dict(state["critic_state_dict"], strict=strict)
    extra = state.get("sac")
    if extra is not None:
        optim = state["optimizer_state_dict"]
        sac.actor_optimizer.load_state_dict(optim["actor"])
        sac.critic_optimizer.load_state_dict(optim["critic"])
        sac.alpha_optimizer.load_state_dict(extra["alpha_optimizer"])
        with torch.no_grad():
            sac.target_qs.load_state_dict(extra["target_critic"])
            sac.log_alpha.copy_(extra["log_alpha"])
        sac.replay.load_state_dict(extra["replay"])
        sac.noise_generator.set_state(extra["noise_generator"].cpu())
        sac.gradient_steps = int(extra["gradient_steps"])
        sac.seed = int(extra["seed"])  # the minibatch draws continue the checkpoint's sequence
        sac._key = philox_key(sac.seed)
        sac._update_index.fill_(sac.gradient_steps)
        if sac.reward_normalizer is not None and extra.get("reward_normalizer") is not None:
            sac.reward_normalizer.load_state_dict(extra["reward_normalizer"])
    sac.flat.bind_grads()
    sac.sync_replicas()

"""redline's PPO as an rsl_rl algorithm class: a drop-in for rsl_rl 5.5.1's stock ``OnPolicyRunner``.

rsl_rl resolves ``algorithm.class_name`` with ``resolve_callable``, so one line in any Isaac Lab agent config (or one
Hydra override) puts redline's update inside the stock training and play scripts::

    isaaclab train --rl_library rsl_rl --task Isaac-Cartpole-Direct \
        agent.algorithm.class_name=redline.learning.rsl_rl:PPO

The stock runner keeps its own loop and logger (their host syncs: a NaN check of every env step, the logger's
per-step episode bookkeeping); the update is redline's. Which update depends on the config (:func:`general_feature`):

- MLP actor and critic, a Gaussian policy, Adam, no extension: :class:`redline.learning.ppo.PPO` (fused Adam over one
  flat buffer, the NaN guard, capture on CUDA; under ``use_mixed_precision=True`` the bf16 precision policy with fp32
  islands and value normalisation);
- anything else rsl_rl 5.5.1 offers (recurrent and CNN models, Beta / heteroscedastic distributions, symmetry, RND,
  adamw / sgd / rmsprop): :class:`redline.learning.general_ppo.GeneralPPO`, rsl_rl's models and extensions under
  redline's update rules.

Both read rsl_rl's config as rsl_rl does: ``algorithm.use_mixed_precision`` False (the default) is fp32 on every
device, True bf16 (:meth:`redline.learning.precision.Precision.for_rsl_rl`); ``torch_compile_mode`` is refused.

Under rsl_rl's multi-GPU mode (``cfg["multi_gpu"]``, stock ``--distributed``) both use the process group the runner
made: ``broadcast_parameters()`` aligns every rank with rank 0, and each minibatch's gradients are averaged with one
all-reduce. Checkpoints keep rsl_rl's keys, so the stock ``play`` script loads them with this class or with rsl_rl's
own PPO.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import torch
from rsl_rl.extensions import resolve_rnd_config, resolve_symmetry_config
from rsl_rl.storage import RolloutStorage
from rsl_rl.utils import resolve_class, resolve_obs_groups
from tensordict import TensorDict

from redline.errors import UserError
from redline.learning.config import DISTRIBUTION_KEYS, MODEL_KEYS, PPOConfig, names_class
from redline.learning.distributed import Communicator
from redline.learning.dropin import DropIn
from redline.learning.general_ppo import OPTIMIZERS, GeneralPPO
from redline.learning.limits import check_agent, check_rollout
from redline.learning.ppo import PPO as RedlinePPO
from redline.learning.precision import Precision
from redline.run_state.parts import RunnerEnvState
from redline.seeding.plan import bind_action_noise

CLASS_PATH = "redline.learning.rsl_rl:PPO"
"""The ``algorithm.class_name`` that selects this class."""
DIST_TIMEOUT_S = 1800.0
"""The process-group timeout quoted when a rank is lost under rsl_rl's runner (torch's default for NCCL) [s]."""


def general_feature(cfg: Mapping[str, Any]) -> str | None:
    """The first setting of an rsl_rl runner config that :class:`redline.learning.ppo.PPO` does not implement, as
    ``"key=value"`` (the config then runs on :class:`GeneralPPO`); None when the fast learner takes it."""
    alg = cfg.get("algorithm", {})
    for key in ("rnd_cfg", "symmetry_cfg", "share_cnn_encoders"):
        if alg.get(key):
            return f"algorithm.{key}"
    if str(alg.get("optimizer", "adam")).lower() != "adam":
        return f"algorithm.optimizer={alg['optimizer']}"
    for role in ("actor", "critic"):
        model = cfg.get(role, {})
        if not names_class(model.get("class_name", "MLPModel"), "MLPModel", "rsl_rl.models"):
            return f"{role}.class_name={model['class_name']}"
        extra = sorted(set(model) - MODEL_KEYS)
        if extra:
            return f"{role}.{extra[0]}"
        dist = model.get("distribution_cfg")
        kind = (dist or {}).get("class_name", "GaussianDistribution")
        if dist and (role == "critic" or not names_class(kind, "GaussianDistribution", "rsl_rl")):
            return f"{role}.distribution_cfg.class_name={kind}"
        extra = sorted(set(dist or {}) - DISTRIBUTION_KEYS)
        if extra:
            return f"{role}.distribution_cfg.{extra[0]}"
    return None


def construct_general(obs: TensorDict, env: Any, cfg: Mapping[str, Any], device: str) -> GeneralPPO:
    """rsl_rl's ``PPO.construct_algorithm`` building a :class:`GeneralPPO` (``cfg`` is only read; rsl_rl's own
    errors, such as symmetry with a recurrent model, become one-line ``UserError``s)."""
    cfg = copy.deepcopy(dict(cfg))
    try:
        alg_cfg = {k: v for k, v in cfg["algorithm"].items() if k != "class_name"}
        actor_class, actor_cfg = resolve_class(cfg["actor"])
        critic_class, critic_cfg = resolve_class(cfg["critic"])
        default_sets = ["actor", "critic"] + (["rnd_state"] if alg_cfg.get("rnd_cfg") else [])
        obs_groups = resolve_obs_groups(obs, cfg.get("obs_groups") or {}, default_sets)
        alg_cfg = resolve_symmetry_config(resolve_rnd_config(alg_cfg, obs, obs_groups, env), env)
        if str(alg_cfg.get("optimizer", "adam")).lower() not in OPTIMIZERS:
            raise ValueError(f"optimizer: unknown '{alg_cfg['optimizer']}' (valid: {', '.join(OPTIMIZERS)})")
        actor = actor_class(obs, obs_groups, "actor", env.num_actions, **actor_cfg).to(device)
        if alg_cfg.pop("share_cnn_encoders", None):
            critic_cfg["cnns"] = actor.cnns
        critic = critic_class(obs, obs_groups, "critic", 1, **critic_cfg).to(device)
        storage = RolloutStorage("rl", env.num_envs, cfg["num_steps_per_env"], obs, [env.num_actions], device)
        alg = GeneralPPO(
            actor,
            critic,
            storage,
            device=device,
            multi_gpu_cfg=cfg.get("multi_gpu"),
            timeout_s=DIST_TIMEOUT_S,
            **alg_cfg,
        )
        models = {"actor": actor, "critic": critic}
        alg.env_state = RunnerEnvState(env, enabled=not alg.is_multi_gpu, models=models)
        return alg
    except (TypeError, ValueError, KeyError) as exc:
        raise UserError(f"algorithm.class_name={CLASS_PATH}: {exc}") from None


class PPO(DropIn):
    """What rsl_rl's ``OnPolicyRunner`` calls on its algorithm, done by :class:`redline.learning.ppo.PPO`
    (:class:`~redline.learning.dropin.DropIn`: the policy, modes and checkpoints' env part)."""

    learner: RedlinePPO

    @classmethod
    def construct_algorithm(cls, obs: TensorDict, env: Any, cfg: Mapping[str, Any], device: str) -> PPO | GeneralPPO:
        """rsl_rl's constructor hook: build the learner from the runner config (``cfg`` is only read).

        Returns this class around :class:`redline.learning.ppo.PPO` where it applies, else a :class:`GeneralPPO`
        (:func:`general_feature`).

        Raises:
            UserError: a setting out of its range (:mod:`redline.learning.limits`, as ``redline train`` checks), more
                minibatches than the rollout has transitions, or a setting that neither learner takes (named in one
                line; ``torch_compile_mode`` among them: rsl_rl's models are not compiled here).
        """
        if cfg.get("torch_compile_mode") is not None:  # rsl_rl compiles its models with it: never silently ignored
            raise UserError(
                f"torch_compile_mode: {cfg['torch_compile_mode']!r} is not taken by algorithm.class_name={CLASS_PATH}"
                " (valid: None; the fast learner captures its own update instead)"
            )
        if general_feature(cfg) is not None:
            check_agent({k: v for k, v in cfg.items() if k not in ("actor", "critic")})
            return construct_general(obs, env, cfg, device)
        plain = copy.deepcopy(dict(cfg))
        plain["algorithm"] = {**plain.get("algorithm", {}), "class_name": "PPO"}
        check_agent(plain)  # redline train's range checks, inside the stock scripts too
        check_rollout(plain.get("num_steps_per_env", 24), env.num_envs, plain["algorithm"].get("num_mini_batches", 4))
        try:  # rsl_rl's rule for a missing actor / critic set: the env's group of that name, else "policy"
            plain["obs_groups"] = resolve_obs_groups(obs, plain.get("obs_groups") or {}, ["actor", "critic"])
        except ValueError as exc:
            raise UserError(f"obs_groups: {exc}") from None
        comm = None
        if plain.get("multi_gpu"):  # rsl_rl's runner made the process group (NCCL; gloo when tested on the CPU)
            comm = Communicator.from_process_group(device, DIST_TIMEOUT_S)
        alg = plain["algorithm"]
        precision = Precision.for_rsl_rl(bool(alg.get("use_mixed_precision")), alg.get("precision"), device).mode
        ppo_cfg = PPOConfig.from_rsl_rl(plain, precision=precision)
        learner = RedlinePPO(obs, env.num_actions, ppo_cfg, device=device, seed=int(cfg.get("seed", 0)), comm=comm)
        bind_action_noise(learner, env)
        return cls(learner, env)

    # the rollout -------------------------------------------------------------------------------------------------

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

    def broadcast_parameters(self) -> None:
        """Every rank takes rank 0's state (weights, optimizer, normalisers) and its minibatch generator (Isaac Lab
        seeds each rank with ``seed + rank``; the minibatch partition must be the same on every rank)."""
        self.learner.sync_replicas()
        if self.learner.comm.distributed:
            state = self.learner.generator.get_state()
            self.learner.comm.broadcast_([state])
            self.learner.generator.set_state(state)

    # checkpoints ----------------------------------------------------------------------------------------------------

    def load(self, loaded_dict: dict[str, Any], load_cfg: dict | None = None, strict: bool = True) -> bool:
        """Load a checkpoint of this class, of ``redline train`` or of rsl_rl's PPO; returns True (the runner then
        continues at the saved iteration, as rsl_rl does)."""
        return self.load_learner_and_env(loaded_dict, load_cfg, strict, "the redline learner")

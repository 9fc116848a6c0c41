"""The learner's configuration: frozen dataclasses, one docstring per field, validated on construction.

Frozen so that no part of the learner can mutate a caller's config; :func:`dataclasses.replace` makes a changed
copy. :meth:`PPOConfig.from_rsl_rl` reads an rsl_rl runner config dict (Isaac Lab's ``agent_cfg.to_dict()``)
without modifying it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from redline.errors import UserError
from redline.learning.capture import CAPTURE_MODES
from redline.learning.precision import requested_precision
from redline.validation import (
    COUNT,
    FRACTION,
    NON_NEGATIVE,
    POSITIVE,
    Range,
    check_choice,
    check_fields,
    check_precision,
    check_range,
)

ACTIVATIONS = ("elu", "selu", "relu", "crelu", "lrelu", "tanh", "sigmoid", "softplus", "gelu", "swish", "mish")
"""Activation names rsl_rl's ``MLP`` accepts."""


@dataclass(frozen=True)
class ModelConfig:
    """One MLP network (actor or critic), built as an rsl_rl ``MLPModel`` so checkpoints keep rsl_rl's keys."""

    hidden_dims: tuple[int, ...] = (256, 256, 256)
    """Width of each hidden layer [units]."""
    activation: str = "elu"
    """Hidden-layer activation, one of :data:`ACTIVATIONS`."""
    obs_normalization: bool = False
    """Normalise the concatenated observation with running mean/std (rsl_rl ``EmpiricalNormalization``)."""
    obs_groups: tuple[str, ...] = ("policy",)
    """Observation groups (keys of the env's observation TensorDict) concatenated, in order, as the input."""
    init_std: float = 1.0
    """Actor only: initial action standard deviation [action units]."""
    std_type: Literal["scalar", "log"] = "scalar"
    """Actor only: parameterise the state-independent std directly (``"scalar"``) or as its log (``"log"``)."""
    std_range: tuple[float, float] = (1e-6, 1e6)
    """Actor only: the std is clamped to this (min, max) range [action units]."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden_dims", tuple(int(d) for d in self.hidden_dims))
        object.__setattr__(self, "obs_groups", tuple(self.obs_groups))
        object.__setattr__(self, "std_range", (float(self.std_range[0]), float(self.std_range[1])))
        if not self.hidden_dims or any(d <= 0 for d in self.hidden_dims):
            raise UserError(f"hidden_dims: expected one or more positive widths, got {self.hidden_dims}")
        check_choice("activation", self.activation, ACTIVATIONS)
        if not self.obs_groups:
            raise UserError("obs_groups: expected at least one observation group")
        check_choice("std_type", self.std_type, ("scalar", "log"))
        check_range("init_std", self.init_std, POSITIVE)


PPO_RANGES: dict[str, Range] = {
    **dict.fromkeys(("num_steps_per_env", "num_learning_epochs", "num_mini_batches", "micro_batches"), COUNT),
    "max_consecutive_skips": COUNT,
    "gamma": FRACTION,
    "lam": FRACTION,
    **dict.fromkeys(("clip_param", "learning_rate", "desired_kl", "max_grad_norm", "min_learning_rate"), POSITIVE),
    **dict.fromkeys(("entropy_coef", "value_loss_coef"), NON_NEGATIVE),
}
"""The numeric :class:`PPOConfig` fields and their ranges (:mod:`redline.validation`); the agent config's
``agent.algorithm.*`` settings are checked against the same rules (:data:`redline.learning.limits.AGENT_RANGES`)."""


@dataclass(frozen=True)
class PPOConfig:
    """Hyper-parameters of the redline PPO learner (defaults follow rsl_rl 5.5.1's PPO)."""

    num_steps_per_env: int = 24
    """Rollout length T [env steps per env per iteration]; the batch is T x num_envs transitions."""
    num_learning_epochs: int = 5
    """Passes over the rollout batch per iteration."""
    num_mini_batches: int = 4
    """Minibatches per epoch (one optimizer step each); minibatch size = T * num_envs // num_mini_batches."""
    micro_batches: int = 1
    """Split each minibatch into this many micro-batches whose gradients add up (gradient accumulation)."""
    clip_param: float = 0.2
    """PPO clip range epsilon for the ratio, and for the value change when ``use_clipped_value_loss``."""
    gamma: float = 0.99
    """Discount factor per env step."""
    lam: float = 0.95
    """GAE lambda."""
    value_loss_coef: float = 1.0
    """Weight of the value loss in the total loss."""
    entropy_coef: float = 0.01
    """Weight of the entropy bonus (subtracted from the loss)."""
    learning_rate: float = 1e-3
    """Initial Adam learning rate."""
    schedule: Literal["adaptive", "fixed"] = "adaptive"
    """``"adaptive"``: scale the learning rate by 1.5 up/down to hold the KL near ``desired_kl``; ``"fixed"``."""
    desired_kl: float = 0.01
    """Target KL(old || new) per minibatch for the adaptive schedule [nats]."""
    min_learning_rate: float = 1e-5
    """Lower bound of the adaptive learning rate (rsl_rl's hard-coded value)."""
    max_learning_rate: float = 1e-2
    """Upper bound of the adaptive learning rate (rsl_rl's hard-coded value)."""
    max_grad_norm: float = 1.0
    """Clip the gradient norm of the actor and of the critic (each separately, as rsl_rl) to this value."""
    use_clipped_value_loss: bool = True
    """Clip the value change to +-clip_param around the rollout value (in normalised units when normalising)."""
    normalize_advantage_per_mini_batch: bool = False
    """Normalise advantages per minibatch instead of once over the whole rollout."""
    # rsl_rl's minibatching is the default, measured (docs/learning_parity.md, fp32, 10 seeds, IQM [95 % CI]): on
    # Redline-Ant (target 10) redline's own layout (a fresh partition per epoch, env-by-env strata, so a minibatch
    # holds consecutive steps of every env) learnt worse than rsl_rl — AUC 4.90 [4.54, 5.45] vs 5.93 [5.42, 6.32] —
    # and with both switches at rsl_rl's the AUC rose to 5.60 [5.21, 5.99], P(better than before) 0.79 [0.56, 0.96],
    # no longer distinguishable from rsl_rl's (P 0.36 [0.12, 0.62]). On Cartpole neither switch changed anything
    # detectable (20 and 10 seeds). Cost: on several ranks the uniform layout takes one host sync per minibatch (each
    # rank picks its envs' entries); the stratified one takes none.
    reshuffle_each_epoch: bool = False
    """Draw a fresh minibatch partition for every epoch; False (default): one partition per iteration, reused by
    every epoch (rsl_rl 5.5.1's ``mini_batch_generator``). See the measurement above."""
    stratify_minibatches: bool = False
    """Lay each minibatch out env by env (``T / num_mini_batches`` steps of every env; no host sync on several
    ranks); False (default): a uniform random permutation of all ``T * N`` transitions (rsl_rl 5.5.1)."""
    env_action_noise: bool = True
    """Draw the action noise from the env's per-env streams where it has them (``per_env``/``eval`` seeding: env g's
    noise is a function of (seed, g, episode, step), whatever the partition); False: from the learner's own torch
    generator, as rsl_rl draws from torch's (an ablation switch; a multi-process run is then no longer the same
    experiment as one process)."""
    # Measured (docs/learning_parity.md, study 3, Cartpole, 10 seeds, IQM env steps to 4.9 [95 % CI]): bf16 with value
    # normalisation 234k [211k, 289k], fp32 259k [216k, 315k], bf16 without it 287k [225k, 358k]; every P(better)
    # CI includes 0.5, so both "auto" defaults stay. On the CPU (study 8, 2026-12-06, Cartpole and Ant, 10 fresh seeds
    # each): bf16 no worse on any metric, Ant's wall time to target 0.85x; the update 1.3-1.6x faster from 128 units
    # wide, 1.3x slower at Cartpole's 32 (docs/performance.md), hence the width rule of Precision.resolve.
    precision: str = "auto"
    """``"auto"``, ``"bf16"`` or ``"fp32"``. ``"auto"``: bf16 on CUDA devices that support it, and on CPUs with bf16
    units (AMX-BF16, AVX512-BF16) when the widest hidden layer of the actor or critic is at least
    :data:`redline.learning.precision.CPU_BF16_MIN_WIDTH` (128) units; else fp32."""
    value_normalization: Literal["auto"] | bool = "auto"
    """Critic learns normalised returns (running mean/std of the targets); ``"auto"`` is on exactly under bf16."""
    max_consecutive_skips: int = 3
    """Raise after this many consecutive iterations that each skipped an optimizer step on a non-finite value."""
    capture: Literal["auto", "on", "off"] = "auto"
    """Run the gradient step and policy inference as recorded CUDA graphs (on CUDA) or compiled (on the CPU):
    ``"auto"`` is on with CUDA in a single process and off elsewhere; a refused capture falls back to eager with a
    one-line warning (:mod:`redline.learning.capture`)."""
    capture_backend: str = "inductor"
    """``torch.compile`` backend where capture compiles instead of recording CUDA graphs (``capture="on"`` on the
    CPU); ``"aot_eager"`` or ``"eager"`` trace without generating code (tests)."""
    actor: ModelConfig = ModelConfig()
    """The policy network (outputs the Gaussian action mean; the std is a learned parameter)."""
    critic: ModelConfig = ModelConfig()
    """The value network (one output)."""

    def __post_init__(self) -> None:
        check_fields(self, PPO_RANGES)
        check_choice("schedule", self.schedule, ("adaptive", "fixed"))
        check_precision(self.precision)
        check_choice("value_normalization", self.value_normalization, ("auto", True, False))
        if not self.min_learning_rate <= self.max_learning_rate:
            raise UserError("min_learning_rate: must not exceed max_learning_rate")
        check_choice("capture", self.capture, CAPTURE_MODES)

    def uses_value_normalization(self, bf16: bool) -> bool:
        """Resolve ``value_normalization``: ``"auto"`` means on under bf16, off under fp32."""
        return bf16 if self.value_normalization == "auto" else bool(self.value_normalization)

    @classmethod
    def from_rsl_rl(cls, runner_cfg: Mapping[str, Any], precision: str | None = None, **overrides: Any) -> PPOConfig:
        """Build a config from an rsl_rl 5.x runner config dict (e.g. Isaac Lab's ``agent_cfg.to_dict()``).

        Reads ``num_steps_per_env``, ``obs_groups``, ``actor``/``critic`` (MLPModel with an optional Gaussian
        ``distribution_cfg``) and ``algorithm`` (PPO). The dict is only read, never modified. An algorithm other
        than PPO, features the redline learner does not implement (RND, symmetry, non-Adam optimizers, non-MLP
        models) and any key it does not know (:data:`RUNNER_KEYS`, :data:`ALGORITHM_KEYS`, :data:`MODEL_KEYS`,
        :data:`DISTRIBUTION_KEYS`) raise ``UserError`` naming the key.

        Args:
            runner_cfg: The rsl_rl runner configuration.
            precision: the learner's precision when given explicitly (``--precision``); None: ``"bf16"`` if the
                config's ``algorithm.use_mixed_precision`` is true, else the default ``"auto"`` (False is also
                Isaac Lab's default, so it cannot mean "fp32 on purpose"; pass ``precision="fp32"`` for that) —
                :func:`redline.learning.precision.requested_precision` reads it.
            overrides: PPOConfig fields to set on top (e.g. ``micro_batches=2``).
        """
        if not names_class(runner_cfg.get("class_name", "OnPolicyRunner"), "OnPolicyRunner", "rsl_rl.runners"):
            raise UserError(f"class_name: the redline learner is an OnPolicyRunner, got '{runner_cfg['class_name']}'")
        _refuse_unknown("", runner_cfg, RUNNER_KEYS)
        alg = runner_cfg.get("algorithm", {})
        if not names_class(alg.get("class_name", "PPO"), "PPO", "rsl_rl.algorithms"):
            raise UserError(f"algorithm.class_name: the redline learner is PPO, got '{alg['class_name']}'")
        fields = {f.name for f in dataclasses.fields(cls)} - {"actor", "critic"}
        _refuse_unknown("algorithm.", alg, ALGORITHM_KEYS | fields)
        for key in ("rnd_cfg", "symmetry_cfg", "share_cnn_encoders"):
            if alg.get(key):
                raise UserError(f"algorithm.{key}: not in redline's fast learner ({GENERAL_ROUTE})")
        if alg.get("optimizer", "adam") != "adam":
            raise UserError(
                f"algorithm.optimizer: redline's fast learner uses adam, got '{alg['optimizer']}' ({GENERAL_ROUTE})"
            )
        obs_groups = runner_cfg.get("obs_groups") or {}
        kwargs: dict[str, Any] = {k: alg[k] for k in fields & alg.keys()}
        if "num_steps_per_env" in runner_cfg:
            kwargs["num_steps_per_env"] = runner_cfg["num_steps_per_env"]
        chosen = requested_precision(precision, bool(alg.get("use_mixed_precision")), None)
        if chosen is not None:  # else the config's own (algorithm.precision, or the default auto)
            kwargs["precision"] = chosen
        for role in ("actor", "critic"):
            kwargs[role] = _model_from_rsl_rl(role, runner_cfg.get(role, {}), obs_groups.get(role))
        kwargs.update(overrides)
        return cls(**kwargs)


GENERAL_ROUTE = "for it: --learner rsl_rl agent.algorithm.class_name=redline.learning.rsl_rl:PPO"
"""Where a config the fast learner does not take runs: redline's general update under rsl_rl's runner."""

RUNNER_KEYS = frozenset(
    {
        # read here
        "class_name", "num_steps_per_env", "obs_groups", "actor", "critic", "algorithm",
        # read by `redline train`, not by the learner's config
        "seed", "device", "max_iterations", "init_at_random_ep_len", "clip_actions", "save_interval",
        "experiment_name", "run_name", "cpu_num_envs",
        # deliberately ignored: redline writes metrics.jsonl and TensorBoard only (no wandb/neptune upload)
        "logger", "neptune_project", "wandb_project", "store_code_state",
        # deliberately ignored: Isaac Lab's train script resumes with these; `redline train --resume` replaces them
        "resume", "load_run", "load_checkpoint",
        # deliberately ignored: redline's NaN guard (skip the step, raise after max_consecutive_skips) replaces it
        "check_for_nan",
        # deliberately ignored: redline compiles/captures its own step (PPOConfig.capture), not rsl_rl's models
        "torch_compile_mode",
        # rsl_rl < 4 names that Isaac Lab's handle_deprecated_rsl_rl_cfg has already moved into actor/critic
        "policy", "empirical_normalization",
        # written into the dict by rsl_rl's own runner (data-parallel ranks); redline has its own communicator
        "multi_gpu",
    }
)  # fmt: skip
"""rsl_rl / Isaac Lab runner-config keys :meth:`PPOConfig.from_rsl_rl` accepts (Isaac Lab 3.0, rsl_rl 5.5.1)."""

ALGORITHM_KEYS = frozenset(
    {
        # rsl_rl PPO's arguments that PPOConfig fields of the same name take
        "num_learning_epochs", "num_mini_batches", "clip_param", "gamma", "lam", "value_loss_coef", "entropy_coef",
        "learning_rate", "max_grad_norm", "use_clipped_value_loss", "schedule", "desired_kl",
        "normalize_advantage_per_mini_batch",
        # checked or translated here
        "class_name", "optimizer", "use_mixed_precision", "rnd_cfg", "symmetry_cfg", "share_cnn_encoders",
        # deliberately ignored: rsl_rl's data-parallel gradient bucket size; redline all-reduces one flat buffer
        "grad_reduce_bucket_mb",
    }
)  # fmt: skip
"""rsl_rl PPO algorithm-config keys accepted besides :class:`PPOConfig`'s own field names."""

MODEL_KEYS = frozenset({"class_name", "hidden_dims", "activation", "obs_normalization", "distribution_cfg"})
"""rsl_rl ``MLPModel`` config keys (``actor``, ``critic``)."""

DISTRIBUTION_KEYS = frozenset({"class_name", "init_std", "std_type", "std_range"})
"""rsl_rl ``GaussianDistribution`` config keys (``actor.distribution_cfg``)."""


def _refuse_unknown(prefix: str, cfg: Mapping[str, Any], known: frozenset[str] | set[str]) -> None:
    """One-line ``UserError`` naming the first key of ``cfg`` not in ``known``."""
    unknown = sorted(k for k in cfg if k not in known)
    if unknown:
        raise UserError(f"{prefix}{unknown[0]}: unknown to the redline learner (use --learner rsl_rl)")


def names_class(value: Any, name: str, package: str) -> bool:
    """Whether a config's ``class_name`` (a string or a class) names rsl_rl's ``name`` from ``package``."""
    if isinstance(value, type):
        return value.__name__ == name and value.__module__.startswith(package)
    text = str(value).replace(":", ".")
    return text == name or (text.startswith(f"{package}.") and text.endswith(f".{name}"))


def _model_from_rsl_rl(role: str, model: Mapping[str, Any], obs_groups: Any) -> ModelConfig:
    """Read one rsl_rl ``MLPModel`` config dict into a :class:`ModelConfig`."""
    if not names_class(model.get("class_name", "MLPModel"), "MLPModel", "rsl_rl.models"):
        raise UserError(
            f"{role}.class_name: redline's fast learner builds MLPModel, got '{model['class_name']}' ({GENERAL_ROUTE})"
        )
    _refuse_unknown(f"{role}.", model, MODEL_KEYS)
    kwargs: dict[str, Any] = {}
    for key in ("hidden_dims", "activation", "obs_normalization"):
        if key in model:
            kwargs[key] = model[key]
    if obs_groups:
        kwargs["obs_groups"] = tuple(obs_groups)
    dist = model.get("distribution_cfg")
    if role == "critic" and dist:
        raise UserError("critic.distribution_cfg: the redline critic is deterministic (set it to None)")
    if role == "actor" and dist:
        if not names_class(dist.get("class_name", "GaussianDistribution"), "GaussianDistribution", "rsl_rl.modules"):
            raise UserError(
                "actor.distribution_cfg.class_name: the fast learner's is GaussianDistribution, "
                f"got '{dist['class_name']}' ({GENERAL_ROUTE})"
            )
        _refuse_unknown("actor.distribution_cfg.", dist, DISTRIBUTION_KEYS)
        for key in ("init_std", "std_type", "std_range"):
            if key in dist:
                kwargs[key] = dist[key]
    return ModelConfig(**kwargs)

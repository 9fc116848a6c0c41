"""The off-policy learner's configuration: frozen dataclasses, one docstring per field, validated on construction.

Defaults start from FastSAC's and FastTD3's published ones (``REFERENCE-FIGURES.md`` section 1.3: FastSAC batch 8192,
8 updates per env step with the actor every 4th, C51 with 101 atoms on v +-20, 768-wide LayerNorm critic, 1024
transitions per env, log std in [-5, 0], alpha 0.001 autotuned; FastTD3 n-step 8, tau 0.1, learning rates 3e-4)
shrunk to two CPU cores: 256-wide networks, batch 1024, 51 atoms, 2 updates per env step with the actor every 2nd,
3-step returns. Each field says where it departs. :meth:`SACConfig.from_rsl_rl` reads an rsl_rl-style runner dict
without modifying it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from redline import validation
from redline.errors import UserError
from redline.learning.capture import CAPTURE_MODES
from redline.learning.config import ACTIVATIONS, RUNNER_KEYS

CLASS_PATH = "redline.learning.sac.rsl_rl_sac:SAC"
"""The ``algorithm.class_name`` that selects the off-policy learner (rsl_rl's ``resolve_callable`` syntax)."""
VARIANTS = ("sac", "td3")
"""``SACConfig.variant``: SAC's stochastic policy, or FastTD3's deterministic one on the same critic and replay."""


def _widths(field: str, dims: Any) -> tuple[int, ...]:
    """``dims`` as a tuple of positive ints, else a one-line ``UserError``."""
    try:
        widths = tuple(int(d) for d in dims)
    except (TypeError, ValueError):
        raise UserError(f"{field}: expected a list of positive widths, got {dims!r}") from None
    if not widths or any(d <= 0 for d in widths):
        raise UserError(f"{field}: expected one or more positive widths, got {dims!r}")
    return widths


def _groups(field: str, groups: Any) -> tuple[str, ...]:
    names = (groups,) if isinstance(groups, str) else tuple(groups)
    if not names or not all(isinstance(g, str) for g in names):
        raise UserError(f"{field}: expected one or more observation group names, got {groups!r}")
    return names


@dataclass(frozen=True)
class SACActorConfig:
    """The policy network: an MLP giving a Gaussian's mean and state-dependent log std, squashed by tanh."""

    hidden_dims: tuple[int, ...] = (256, 256)
    """Width of each hidden layer [units] (FastSAC: 512, 256, 128; smaller here for two CPU cores)."""
    activation: str = "relu"
    """Hidden-layer activation, one of :data:`redline.learning.config.ACTIVATIONS` (FastSAC/FastTD3: ReLU)."""
    log_std_range: tuple[float, float] = (-5.0, 0.0)
    """The pre-tanh log standard deviation is squashed into this (min, max) range (FastSAC's) [log action units]."""
    action_scale: float = 1.0
    """Actions are ``action_scale * tanh(u)``, so they lie within +-action_scale [env action units]."""
    obs_groups: tuple[str, ...] = ("policy",)
    """Observation groups (keys of the env's observation TensorDict) concatenated, in order, as the input."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden_dims", _widths("actor.hidden_dims", self.hidden_dims))
        object.__setattr__(self, "obs_groups", _groups("actor.obs_groups", self.obs_groups))
        validation.check_choice("actor.activation", self.activation, ACTIVATIONS)
        low, high = (float(x) for x in self.log_std_range)
        if not low < high:
            raise UserError(f"actor.log_std_range: expected (min, max) with min < max, got {self.log_std_range!r}")
        object.__setattr__(self, "log_std_range", (low, high))
        validation.check_range("actor.action_scale", self.action_scale, validation.POSITIVE)


@dataclass(frozen=True)
class SACCriticConfig:
    """The critic: two distributional (C51) Q networks over ``num_atoms`` atoms on [v_min, v_max]."""

    hidden_dims: tuple[int, ...] = (256, 256)
    """Width of each hidden layer of each Q network [units] (FastSAC: 768; smaller here for two CPU cores)."""
    activation: str = "relu"
    """Hidden-layer activation, one of :data:`redline.learning.config.ACTIVATIONS`."""
    num_atoms: int = 51
    """Atoms of the return distribution (FastSAC 101, FastTD3 251; 51 as the C51 paper, cheaper on the CPU)."""
    v_min: float = -20.0
    """Lowest atom [return units] (FastSAC's); returns below it are clipped onto it."""
    v_max: float = 20.0
    """Highest atom [return units] (FastSAC's); returns above it are clipped onto it."""
    layer_norm: bool = True
    """A LayerNorm after each hidden Linear, before the activation (FastSAC)."""
    obs_groups: tuple[str, ...] = ("policy",)
    """Observation groups concatenated, in order, as the critic's observation input (the action is appended)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden_dims", _widths("critic.hidden_dims", self.hidden_dims))
        object.__setattr__(self, "obs_groups", _groups("critic.obs_groups", self.obs_groups))
        validation.check_choice("critic.activation", self.activation, ACTIVATIONS)
        validation.check_range("critic.num_atoms", self.num_atoms, validation.Range(integer=True, low=2))
        validation.check_range("critic.v_min", self.v_min, validation.Range())
        validation.check_range("critic.v_max", self.v_max, validation.Range())
        if not self.v_min < self.v_max:
            raise UserError(f"critic.v_max: must exceed v_min ({self.v_min:g}), got {self.v_max:g}")


SAC_RANGES: dict[str, validation.Range] = {
    **dict.fromkeys(
        ("num_steps_per_env", "buffer_size_per_env", "batch_size", "policy_frequency", "n_step"), validation.COUNT
    ),
    "updates_per_step": validation.COUNT,
    "learning_starts": validation.Range(integer=True, low=0),
    "gamma": validation.FRACTION,
    "tau": validation.Range(low=0.0, high=1.0, open_low=True),
    **dict.fromkeys(
        ("actor_learning_rate", "critic_learning_rate", "alpha_learning_rate", "alpha_init"), validation.POSITIVE
    ),
    "max_grad_norm": validation.Range(low=0.0, open_low=True, optional=True),
    "reward_norm_max_return": validation.POSITIVE,
    "policy_average": validation.Range(low=0.0, high=1.0),
    **dict.fromkeys(("policy_noise", "noise_clip"), validation.Range(low=0.0)),
}
"""The numeric :class:`SACConfig` fields and their ranges (:mod:`redline.validation`)."""


@dataclass(frozen=True)
class SACConfig:
    """Hyper-parameters of redline's off-policy learner (SAC with a C51 clipped double-Q critic, FastSAC-style)."""

    num_steps_per_env: int = 4
    """Env steps per env per iteration (one ``update()`` call and one log line per iteration)."""
    buffer_size_per_env: int = 1024
    """Replay capacity per env [transitions] (FastSAC's); the oldest are overwritten."""
    batch_size: int = 1024
    """Transitions per gradient step, over all ranks together (FastSAC 8192; smaller for two CPU cores). Each global
    env gives ``batch_size // global envs`` (+1 for the first ``batch_size % global envs``)."""
    updates_per_step: int = 2
    """Gradient updates per vector env step: ``update()`` runs ``num_steps_per_env * updates_per_step`` (FastSAC 8,
    FastTD3 2-8; 2 on the CPU, where the update is the bottleneck)."""
    policy_frequency: int = 2
    """The actor and the temperature update every ``policy_frequency``-th gradient step (FastSAC 4)."""
    n_step: int = 3
    """Returns over up to this many env steps, cut at an episode end (FastSAC 1, FastTD3 8)."""
    gamma: float = 0.99
    """Discount per env step."""
    tau: float = 0.1
    """Polyak rate of the target critic per gradient step: target <- (1 - tau) target + tau critic (FastTD3's)."""
    actor_learning_rate: float = 3e-4
    """Adam learning rate of the actor."""
    critic_learning_rate: float = 3e-4
    """Adam learning rate of the critic."""
    alpha_learning_rate: float = 3e-4
    """Adam learning rate of the temperature's log."""
    alpha_init: float = 0.001
    """Initial entropy temperature alpha (FastSAC's); autotuned towards ``target_entropy``."""
    target_entropy: float | None = None
    """Entropy the temperature steers the policy to [nats]; None: ``-num_actions`` (SAC's default)."""
    learning_starts: int = 10
    """Env steps per env stored before the first gradient update (FastTD3's)."""
    obs_normalization: bool = True
    """Normalise each network's input with running mean/std (rsl_rl ``EmpiricalNormalization``), updated once per
    iteration from the iteration's observations."""
    reward_normalization: bool = False
    """FlashSAC-style: divide rewards (at sampling) by a running scale of the discounted return, so the critic's
    support fits returns of any size."""
    reward_norm_max_return: float = 5.0
    """FlashSAC's G_max: the scale is at least max |G| / this, so normalised returns stay within +-this."""
    max_grad_norm: float | None = None
    """Clip the actor's and the critic's gradient norm (each separately) to this; None: no clipping (FastTD3)."""
    precision: str = "auto"
    """``"auto"`` (bf16 on CUDA devices that support it and on CPUs with bf16 units when the widest hidden layer has
    at least :data:`redline.learning.precision.CPU_BF16_MIN_WIDTH` units, else fp32), ``"bf16"`` or ``"fp32"``: the
    network bodies under bf16 autocast with fp32 master weights, fp32 heads, targets and projection."""
    capture: str = "auto"
    """``"auto"`` (each gradient step replayed from a CUDA graph on a CUDA device in one process, eager elsewhere),
    ``"on"`` (CUDA graphs on CUDA, ``torch.compile`` elsewhere) or ``"off"``: PPO's modes
    (:mod:`redline.learning.capture`); a refused capture runs eagerly after a one-line warning."""
    capture_backend: str = "inductor"
    """``torch.compile`` backend where ``capture="on"`` compiles (no CUDA)."""
    exploration_scale: tuple[float, float] = (1.0, 1.0)
    """(low, high): each env's exploration noise (before the tanh) is multiplied by a fixed factor, log-uniform in
    [low, high] and a pure function of (seed, global env id) — FastTD3's per-env noise scales. Only the behaviour
    policy changes (the update, off-policy, reads none of it); (1, 1): SAC's own noise in every env."""
    env_action_noise: bool = True
    """Draw the exploration noise from the env's per-env streams where it has them (as PPO's: partition-invariant);
    False: from the learner's own generator."""
    policy_average: float = 0.0
    """Rate of the deployed policy's running average of the actor's weights, per iteration (``update()`` call):
    ``policy <- policy + rate * (actor - policy)`` after each update that ran gradient steps (Polyak averaging; the
    normalisers are the actor's own). The deployed policy is what ``redline play``, export, ``act_inference`` and a
    checkpoint's ``actor_state_dict`` hold; the actor keeps exploring and learning as before. 0: the deployed policy
    is the actor itself. Averaging damps the swings of off-policy actors between checkpoints (the G1's stand rate
    moved by up to 30 points from one checkpoint to the next; docs/offpolicy.md, session 30)."""
    save_replay: bool = True
    """Checkpoints hold the replay buffer (exact resume); False leaves it out (smaller files, the buffer refills)."""
    variant: str = "sac"
    """One of :data:`VARIANTS`. ``"sac"``: the tanh-Gaussian policy with the autotuned entropy term. ``"td3"``
    (FastTD3): the deterministic policy ``action_scale * tanh(mean)`` (the actor's log-std outputs unused), explored
    with per-env Gaussian noise (``exploration_std``), its target actions smoothed by clipped noise (``policy_noise``,
    ``noise_clip``; the current actor, no target actor, as FastTD3), the actor loss ``-min_i Q_i`` and no
    temperature. The critic, replay, n-step returns, delayed actor updates, capture and checkpoints are shared."""
    exploration_std: tuple[float, float] = (0.001, 0.4)
    """td3: (low, high): each env's exploration noise std [fraction of the action bound], uniform in [low, high]
    and a pure function of (seed, global env id) (FastTD3's std_min / std_max, which it redraws at every episode
    end; fixed per env here). Actions are ``action_scale * clip(tanh(mean) + std * eps, -1, 1)``."""
    policy_noise: float = 0.001
    """td3: std of the target action's smoothing noise [fraction of the action bound] (FastTD3's)."""
    noise_clip: float = 0.5
    """td3: the smoothing noise is clipped to +-this [fraction of the action bound] (FastTD3's)."""
    actor: SACActorConfig = SACActorConfig()
    """The policy network."""
    critic: SACCriticConfig = SACCriticConfig()
    """The clipped double-Q distributional critic."""

    def __post_init__(self) -> None:
        validation.check_fields(self, SAC_RANGES)
        if self.target_entropy is not None:
            validation.check_range("target_entropy", self.target_entropy, validation.Range())
        validation.check_precision(self.precision)
        validation.check_choice("capture", self.capture, CAPTURE_MODES)
        validation.check_choice("variant", self.variant, VARIANTS)
        object.__setattr__(self, "exploration_std", _pair("exploration_std", self.exploration_std, 0.0))
        object.__setattr__(self, "exploration_scale", _pair("exploration_scale", self.exploration_scale, None))
        for flag in ("obs_normalization", "reward_normalization", "env_action_noise", "save_replay"):
            validation.check_choice(flag, getattr(self, flag), (True, False))
        if isinstance(self.actor, Mapping):
            object.__setattr__(self, "actor", SACActorConfig(**self.actor))
        if isinstance(self.critic, Mapping):
            object.__setattr__(self, "critic", SACCriticConfig(**self.critic))

    def check_envs(self, global_num_envs: int) -> None:
        """Refuse a batch larger than the whole buffer (``buffer_size_per_env`` x ``global_num_envs``)."""
        capacity = self.buffer_size_per_env * global_num_envs
        if self.batch_size > capacity:
            raise UserError(
                f"batch_size: must be at most buffer_size_per_env x envs = {self.buffer_size_per_env} x "
                f"{global_num_envs} = {capacity}, got {self.batch_size}"
            )

    @classmethod
    def from_rsl_rl(cls, train_cfg: Mapping[str, Any], **overrides: Any) -> SACConfig:
        """Build from an rsl_rl-style runner dict: ``num_steps_per_env``, ``obs_groups`` (``actor``/``critic`` sets),
        ``algorithm`` (``class_name`` :data:`CLASS_PATH` and :class:`SACConfig` fields), ``actor`` / ``critic``
        (:class:`SACActorConfig` / :class:`SACCriticConfig` fields; ``class_name`` ignored). Only read, never
        modified. An unknown key is a one-line ``UserError`` naming it."""
        _refuse_unknown("", train_cfg, RUNNER_KEYS)
        alg = dict(train_cfg.get("algorithm") or {})
        name = alg.pop("class_name", CLASS_PATH)
        if str(name).replace(":", ".") != CLASS_PATH.replace(":", "."):
            raise UserError(f"algorithm.class_name: the off-policy learner is {CLASS_PATH}, got '{name}'")
        alg.pop("use_mixed_precision", None)  # rsl_rl's precision switch: read below when precision is not set
        alg.pop("symmetry_cfg", None)  # a function, not a setting: the drop-in reads it (rsl_rl_sac.SAC)
        own = {f.name for f in dataclasses.fields(cls)} - {"actor", "critic", "num_steps_per_env"}
        _refuse_unknown("algorithm.", alg, own)
        kwargs: dict[str, Any] = dict(alg)
        mixed = (train_cfg.get("algorithm") or {}).get("use_mixed_precision")
        if "precision" not in kwargs and mixed:
            kwargs["precision"] = "bf16"
        if "num_steps_per_env" in train_cfg:
            kwargs["num_steps_per_env"] = train_cfg["num_steps_per_env"]
        obs_groups = train_cfg.get("obs_groups") or {}
        for role, kind in (("actor", SACActorConfig), ("critic", SACCriticConfig)):
            model = {k: v for k, v in (train_cfg.get(role) or {}).items() if k != "class_name"}
            if model.pop("distribution_cfg", None) is not None:  # Isaac Lab's version shims set it, to None
                raise UserError(f"{role}.distribution_cfg: the off-policy learner's policy is its own tanh-squashed "
                                "Gaussian (valid: None)")  # fmt: skip
            _refuse_unknown(f"{role}.", model, {f.name for f in dataclasses.fields(kind)})
            if obs_groups.get(role) and "obs_groups" not in model:
                model["obs_groups"] = tuple(obs_groups[role])
            kwargs[role] = kind(**model)
        kwargs.update(overrides)
        return cls(**kwargs)


def _pair(field: str, value: Any, least: float | None) -> tuple[float, float]:
    """``value`` as ``(low, high)`` floats with ``least <= low <= high < inf`` (``least`` None: ``0 < low``), else a
    one-line ``UserError`` naming ``field``."""
    try:
        pair = () if isinstance(value, str) else value  # "12" is no pair
        low, high = (float(x) for x in pair)
    except (TypeError, ValueError):  # not a pair of numbers
        low = high = float("nan")
    above = low > 0.0 if least is None else low >= least
    if not (above and low <= high < float("inf")):
        bound = "0 < low" if least is None else f"{least:g} <= low"
        raise UserError(f"{field}: expected (low, high) with {bound} <= high, got {value!r}")
    return low, high


def _refuse_unknown(prefix: str, cfg: Mapping[str, Any], known: frozenset[str] | set[str]) -> None:
    """One-line ``UserError`` naming the first key of ``cfg`` not in ``known``, with the valid ones."""
    unknown = sorted(k for k in cfg if k not in known)
    if unknown:
        raise UserError(f"{prefix}{unknown[0]}: unknown to the off-policy learner (valid: {', '.join(sorted(known))})")

"""The SAC update at FastSAC's shape, bf16 against fp32: the ``sac_update`` section of ``redline bench gpu``.

No simulator: a synthetic observation TensorDict of a Go1-like size (48 observations, 12 actions) fills each
learner's replay through :meth:`~redline.learning.sac.SAC.act` / :meth:`~redline.learning.sac.SAC.process_env_step`,
then the learners' :meth:`~redline.learning.sac.SAC.update` calls (one per env step: ``updates_per_step`` gradient
steps) are timed in alternation, the device synchronised around each round: eager fp32, eager bf16, and bf16 with
each gradient step replayed from a CUDA graph (:data:`ROWS`).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Any

import torch
from tensordict import TensorDict

from redline.bench.timing import device_sync, timed
from redline.learning.sac import SAC, SACActorConfig, SACConfig, SACCriticConfig

ROWS = {"fp32": ("fp32", "off"), "bf16": ("bf16", "off"), "bf16_captured": ("bf16", "auto")}
"""The rows, in the order they are timed in each round: name -> (precision, ``SACConfig.capture``). ``auto`` replays
each gradient step from a CUDA graph on CUDA and is eager elsewhere (the row's ``capture`` says which ran)."""
EPISODE_STEPS = 8
"""Each synthetic env's episode ends every this many steps (the update has no data-dependent branch: how often
episodes end does not change its cost, only that both kinds of ending are sampled)."""


@dataclasses.dataclass(frozen=True)
class Shape:
    """The sizes of one timing."""

    num_envs: int
    """Envs (the replay's width)."""
    num_obs: int
    """Observations per env (one group, ``policy``, read by actor and critic)."""
    num_actions: int
    """Actions per env."""
    cfg: SACConfig
    """The learner's hyper-parameters (``precision`` is set per row)."""
    rounds: int
    """Timed rounds per precision (the median is reported)."""
    updates_per_round: int
    """``update()`` calls per timed round."""
    warmup: int
    """Untimed ``update()`` calls per learner first."""


FASTSAC = Shape(
    num_envs=4096,
    num_obs=48,
    num_actions=12,
    cfg=SACConfig(
        num_steps_per_env=1,
        buffer_size_per_env=1024,
        batch_size=8192,
        updates_per_step=8,
        policy_frequency=4,
        n_step=1,
        learning_starts=1,
        actor=SACActorConfig(hidden_dims=(512, 256, 128)),
        critic=SACCriticConfig(hidden_dims=(768, 384, 192), num_atoms=101),
    ),
    rounds=10,
    updates_per_round=5,
    warmup=5,
)
"""FastSAC's published Go1/G1 setting (REFERENCE-FIGURES.md 1.3: 4096 envs, batch 8192, 8 updates per env step with
the actor every 4th, 1-step returns, C51 with 101 atoms, 768-wide LayerNorm critic, 1024 transitions per env; the
critic's halving widths after 768 follow FastTD3's layout) at Go1's 48 observations and 12 actions."""
TINY = Shape(
    num_envs=16,
    num_obs=48,
    num_actions=12,
    cfg=dataclasses.replace(
        FASTSAC.cfg,
        buffer_size_per_env=8,
        batch_size=64,
        actor=SACActorConfig(hidden_dims=(32, 32)),
        critic=SACCriticConfig(hidden_dims=(32, 32), num_atoms=11),
    ),
    rounds=2,
    updates_per_round=1,
    warmup=1,
)
"""CI's size on the CPU: the same update (8 gradient steps, actor every 4th), tiny networks and buffer."""


def build(shape: Shape, precision: str, device: str, seed: int = 0, capture: str = "off") -> SAC:
    """A learner at ``shape`` whose replay is full of synthetic transitions (random observations and rewards, an
    episode end every :data:`EPISODE_STEPS` per env, half of them time-outs), stored through ``act`` /
    ``process_env_step``."""
    gen = torch.Generator(device=device).manual_seed(seed)
    n = shape.num_envs

    def obs() -> TensorDict:
        policy = torch.randn(n, shape.num_obs, generator=gen, device=device)
        return TensorDict({"policy": policy}, batch_size=[n], device=device)

    cfg = dataclasses.replace(shape.cfg, precision=precision, capture=capture)
    alg = SAC(obs(), shape.num_actions, cfg, device, seed)
    env_ids = torch.arange(n, device=device)
    for step in range(shape.cfg.buffer_size_per_env):
        alg.act(obs())
        dones = (env_ids + step) % EPISODE_STEPS == EPISODE_STEPS - 1
        rewards = torch.rand(n, generator=gen, device=device)
        extras = {"time_outs": dones & (env_ids % 2 == 0), "final_observation": obs()}
        alg.process_env_step(obs(), rewards, dones, extras)
    return alg


def bench(device: str, tiny: bool) -> dict[str, Any]:
    """Time ``update()`` of the :data:`ROWS` learners at :data:`FASTSAC` (``tiny``: :data:`TINY`) on ``device``,
    in alternating rounds; JSON-ready.

    Returns:
        ``{"shape", "num_envs", "batch_size", "updates_per_step", "capture" (what the captured row ran: eager,
        cuda_graph), "tf32", "rows": {name: {"precision", "capture", "update_ms" (one env step's update:
        ``updates_per_step`` gradient steps), "gradient_step_ms", "gradient_steps" (per update, as the learner
        reported), "finite"}}, "bf16_to_fp32", "captured_to_fp32"}`` (ratios of the update times, eager bf16 and
        captured bf16 to eager fp32; < 1 when faster).
    """
    shape = TINY if tiny else FASTSAC
    learners = {name: build(shape, precision, device, capture=mode) for name, (precision, mode) in ROWS.items()}
    metrics: dict[str, dict[str, float]] = {}
    for alg in learners.values():
        for _ in range(shape.warmup):
            alg.update()
    sync = device_sync(device)
    samples: dict[str, list[float]] = {name: [] for name in ROWS}
    for _ in range(shape.rounds):
        for name, alg in learners.items():
            samples[name].append(timed(alg.update, sync, shape.updates_per_round) / shape.updates_per_round)
    for name, alg in learners.items():  # host reads after the clock: one more update, its metrics
        out = alg.update()
        metrics[name] = {k: float(out[k]) for k in ("gradient_steps", "critic_loss", "skipped_steps")}
    rows: dict[str, dict[str, Any]] = {}
    for name, alg in learners.items():
        update_s = statistics.median(samples[name])
        steps = metrics[name]["gradient_steps"]
        rows[name] = {
            "precision": alg.precision.mode,
            "capture": alg.capture_plan.kind,
            "update_ms": update_s * 1e3,
            "gradient_step_ms": update_s * 1e3 / steps,
            "gradient_steps": steps,
            "finite": math.isfinite(metrics[name]["critic_loss"]) and metrics[name]["skipped_steps"] == 0,
        }
    cfg = shape.cfg
    fp32_ms = rows["fp32"]["update_ms"]
    return {
        "shape": "tiny" if tiny else "fastsac",
        "num_envs": shape.num_envs,
        "num_obs": shape.num_obs,
        "num_actions": shape.num_actions,
        "batch_size": cfg.batch_size,
        "updates_per_step": cfg.updates_per_step,
        "policy_frequency": cfg.policy_frequency,
        "actor_hidden": list(cfg.actor.hidden_dims),
        "critic_hidden": list(cfg.critic.hidden_dims),
        "num_atoms": cfg.critic.num_atoms,
        "timed_updates": shape.rounds * shape.updates_per_round,
        "capture": rows["bf16_captured"]["capture"],
        "tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "rows": rows,
        "bf16_to_fp32": rows["bf16"]["update_ms"] / fp32_ms,
        "captured_to_fp32": rows["bf16_captured"]["update_ms"] / fp32_ms,
    }

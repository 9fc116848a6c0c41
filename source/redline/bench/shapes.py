"""The benches' shared shapes and their synthetic env (no simulator): one place that the learner benches, the GPU
acceptance run and the tests read.

:class:`DummyVecEnv` is a tiny batched linear-dynamics environment with the interface of Isaac Lab's
``RslRlVecEnvWrapper`` (it subclasses rsl_rl's ``VecEnv``), so the same object drives the redline learner and
rsl_rl's ``OnPolicyRunner``. :data:`SHAPES` are the learner benches' shapes, :data:`TASK_SHAPES` the tasks' CPU
shapes of ``redline bench learner --rollout``, and :func:`rsl_rl_cfg` the runner config both learners read.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from redline.seeding import EnvStreams


class DummyVecEnv(VecEnv):
    """Steer a noisy linear system to the origin.

    State x in R^num_actions (one controllable dimension per action), action a in R^num_actions::

        x' = x + B a + noise_std * eps,   B = 0.3 (I + 0.2 R),   eps ~ N(0, I)
        r  = exp(-mean(x'^2)) - action_cost * mean(a^2)        (~1 when held at the origin)

    Doing nothing keeps x where it started (reward ~0.5 from x ~ U(-1.5, 1.5)); a good policy drives it to the
    origin (reward ~1). The ``policy`` observation is ``[x, x M]`` with a fixed random mix M filling it up to
    ``num_obs`` dims; with ``critic_obs`` a ``critic`` group adds the episode progress t / max_episode_length. An
    episode terminates when any |x_i| exceeds ``limit`` and times out after ``max_episode_length`` steps; done envs
    reset. All randomness comes from the env's own generator (``seed``), or with ``per_env_seed`` from per-env
    streams (:mod:`redline.seeding`, ``per_env``), so that env g behaves the same whichever process holds it.
    With ``log_terms`` K, a step on which some env reset reports K per-episode means in ``extras["log"]`` (0-dim
    tensors), as Isaac Lab's manager-based envs report their reward and termination terms.
    """

    def __init__(
        self,
        num_envs: int = 64,
        num_obs: int = 4,
        num_actions: int = 2,
        max_episode_length: int = 40,
        device: torch.device | str = "cpu",
        seed: int = 0,
        noise_std: float = 0.05,
        action_cost: float = 0.01,
        init_range: float = 1.5,
        limit: float = 3.0,
        critic_obs: bool = False,
        per_env_seed: int | None = None,
        env_id_offset: int = 0,
        log_terms: int = 0,
    ) -> None:
        if num_obs < num_actions:
            raise ValueError(f"num_obs ({num_obs}) must be >= num_actions ({num_actions})")
        self.num_envs, self.num_obs, self.num_actions = num_envs, num_obs, num_actions
        self.max_episode_length = max_episode_length
        self.device = torch.device(device)
        self.cfg: dict = {}
        self.noise_std, self.action_cost, self.init_range, self.limit = noise_std, action_cost, init_range, limit
        self.critic_obs = critic_obs
        self.log_terms = log_terms
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)
        self.streams = (
            None if per_env_seed is None else EnvStreams("per_env", per_env_seed, num_envs, self.device, env_id_offset)
        )
        """Per-env streams (with ``per_env_seed``): env g's draws depend on (seed, g, episode, draw) only."""
        eye = torch.eye(num_actions, device=self.device)
        mix = torch.randn(num_actions, num_actions, generator=self.generator, device=self.device)
        self.B = 0.3 * (eye + 0.2 * mix)
        self.M = torch.randn(num_actions, num_obs - num_actions, generator=self.generator, device=self.device)
        self.M /= math.sqrt(num_actions)
        self.state = torch.zeros(num_envs, num_actions, device=self.device)
        self.episode_length_buf = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        self._reset(torch.ones(num_envs, dtype=torch.bool, device=self.device))

    def _reset(self, mask: torch.Tensor) -> None:
        shape = (self.num_envs, self.num_actions)
        if self.streams is None:
            u = torch.rand(shape, generator=self.generator, device=self.device)
        else:
            self.streams.begin_episode(mask.nonzero().squeeze(-1))  # a host sync: fine for a test env
            u = self.streams.uniform(None, (self.num_actions,))
        fresh = (u * 2.0 - 1.0) * self.init_range
        self.state = torch.where(mask.unsqueeze(-1), fresh, self.state)
        self.episode_length_buf = torch.where(mask, 0, self.episode_length_buf)

    def get_observations(self) -> TensorDict:
        """``{"policy": (N, num_obs)}`` (and ``"critic": (N, num_obs + 1)`` with ``critic_obs``), batch ``[N]``."""
        policy = torch.cat((self.state, self.state @ self.M), dim=-1)
        obs = {"policy": policy}
        if self.critic_obs:
            progress = (self.episode_length_buf.float() / self.max_episode_length).unsqueeze(-1)
            obs["critic"] = torch.cat((policy, progress), dim=-1)
        return TensorDict(obs, batch_size=[self.num_envs], device=self.device)

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        """Advance all envs; returns ``(obs, rewards (N,), dones (N,) long, {"time_outs": (N,) bool, "log": {}})``.

        As in Isaac Lab, done envs are reset before the observation is taken, and ``time_outs`` may overlap a
        termination.
        """
        actions = actions.to(self.device, torch.float32)
        if self.streams is None:
            noise = torch.randn(self.state.shape, generator=self.generator, device=self.device)
        else:
            noise = self.streams.normal(None, (self.num_actions,))
        self.state = self.state + actions @ self.B.T + self.noise_std * noise
        rewards = torch.exp(-self.state.square().mean(-1)) - self.action_cost * actions.square().mean(-1)
        self.episode_length_buf += 1
        terminated = (self.state.abs() > self.limit).any(-1)
        time_outs = self.episode_length_buf >= self.max_episode_length
        dones = terminated | time_outs
        self._reset(dones)
        log = {}
        if self.log_terms and bool(dones.any()):  # Isaac Lab's `if len(reset_env_ids) > 0`: a host read
            x = self.state.abs().mean(0)
            log = {f"Episode_Reward/term_{i}": x[i % self.num_actions] for i in range(self.log_terms)}
        return self.get_observations(), rewards, dones.long(), {"time_outs": time_outs, "log": log}


SHAPES: dict[str, dict[str, Any]] = {
    # legged_gym's shape: 4096 envs x 24 steps, obs 48, act 12, [512, 256, 128] actor and critic, 5 x 4 updates
    "legged": {"num_envs": 4096, "steps": 24, "num_obs": 48, "num_actions": 12, "hidden": [512, 256, 128]},
    # the overhead floor: the same networks and schedule at 8 envs, where arithmetic is negligible
    "tiny": {"num_envs": 8, "steps": 24, "num_obs": 48, "num_actions": 12, "hidden": [512, 256, 128]},
    # one rank of Redline-Velocity-Flat-Go1's CPU default (2 x 512 envs): 512 envs x 24 steps, its [128, 128, 128]
    "go1_rank": {"num_envs": 512, "steps": 24, "num_obs": 48, "num_actions": 12, "hidden": [128, 128, 128]},
}
"""Benchmark shapes."""

TASK_SHAPES: dict[str, dict[str, Any]] = {
    # the tasks' CPU defaults: envs, steps per env, observation and action dims, hidden layers (agent configs),
    # observation normalisation, episode length [steps], extras["log"] terms per reset step
    "cartpole": {
        "num_envs": 256, "steps": 16, "num_obs": 4, "num_actions": 1, "hidden": [32, 32],
        "obs_norm": False, "episode": 300, "log_terms": 0,
    },
    "ant": {
        "num_envs": 64, "steps": 32, "num_obs": 60, "num_actions": 8, "hidden": [400, 200, 100],
        "obs_norm": False, "episode": 1000, "log_terms": 0,
    },
    "go1": {
        "num_envs": 1024, "steps": 24, "num_obs": 48, "num_actions": 12, "hidden": [128, 128, 128],
        "obs_norm": True, "episode": 1000, "log_terms": 14,
    },
}  # fmt: skip
"""Rollout shapes (``redline bench learner --rollout``): Redline-Cartpole, Redline-Ant and Redline-Velocity-Flat-Go1
on the CPU (Go1's 14 log terms: 10 rewards, 2 terminations, 2 command metrics)."""


def rsl_rl_cfg(shape: dict[str, Any], bf16: bool) -> dict[str, Any]:
    """The rsl_rl runner config both learners read (rsl_rl's legged-gym PPO hyper-parameters)."""
    model = {"class_name": "MLPModel", "hidden_dims": shape["hidden"], "activation": "elu", "obs_normalization": False}
    return {
        "num_steps_per_env": shape["steps"],
        "save_interval": 1000,
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "actor": {**model, "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0}},
        "critic": dict(model),
        "algorithm": {
            "class_name": "PPO",
            "num_learning_epochs": 5,
            "num_mini_batches": 4,
            "learning_rate": 1e-3,
            "schedule": "adaptive",
            "desired_kl": 0.01,
            "clip_param": 0.2,
            "gamma": 0.99,
            "lam": 0.95,
            "value_loss_coef": 1.0,
            "entropy_coef": 0.01,
            "max_grad_norm": 1.0,
            "use_clipped_value_loss": True,
            "use_mixed_precision": bf16,
        },
    }


def synthetic_env(shape: dict[str, Any], device: str, seed: int) -> DummyVecEnv:
    """The benchmark's synthetic batched env at ``shape``; seeds torch's generator for the networks' initial
    weights."""
    torch.manual_seed(seed)  # network initialisation draws from the global generator in both learners
    return DummyVecEnv(shape["num_envs"], shape["num_obs"], shape["num_actions"], device=device, seed=seed)


def negation_mirror(env: Any, obs: TensorDict | None = None, actions: torch.Tensor | None = None) -> tuple[Any, Any]:
    """rsl_rl's ``data_augmentation_func`` for :class:`DummyVecEnv`: the originals, then every observation and action
    negated (an exact symmetry of its linear dynamics and its reward in x² and a²); None stays None."""
    out_obs = None if obs is None else TensorDict.cat([obs, obs.apply(torch.neg)])
    out_actions = None if actions is None else torch.cat([actions, -actions])
    return out_obs, out_actions


def feature_models(hidden: list[int], rnn_hidden: int, obs_normalization: bool) -> dict[str, dict[str, Any]]:
    """The recurrent and symmetry configs the drop-in's studies compare with rsl_rl (``actor``, ``critic`` and
    ``algorithm`` entries of an rsl_rl runner config): an LSTM of ``rnn_hidden`` before ``hidden`` ELU layers, or the
    MLP with symmetry augmentation and a mirror loss of 0.1 (:func:`negation_mirror`)."""
    mlp = {"hidden_dims": hidden, "activation": "elu", "obs_normalization": obs_normalization}
    lstm = {"class_name": "RNNModel", "rnn_type": "lstm", "rnn_hidden_dim": rnn_hidden, "rnn_num_layers": 1}
    gaussian = {"class_name": "GaussianDistribution", "init_std": 1.0}
    symmetry = {
        "use_data_augmentation": True,
        "use_mirror_loss": True,
        "mirror_loss_coeff": 0.1,
        "data_augmentation_func": negation_mirror,
    }
    return {
        "recurrent": {"actor": mlp | lstm | {"distribution_cfg": gaussian}, "critic": mlp | lstm, "algorithm": {}},
        "symmetry": {
            "actor": mlp | {"class_name": "MLPModel", "distribution_cfg": gaussian},
            "critic": mlp | {"class_name": "MLPModel"},
            "algorithm": {"symmetry_cfg": symmetry},
        },
    }

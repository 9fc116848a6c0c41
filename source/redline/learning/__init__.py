"""redline's PPO learner: bf16 network bodies with fp32 islands, TensorDict rollouts, no host syncs in the hot path.

Imports no simulator code (only torch, tensordict and rsl_rl's model modules), so it runs under plain pytest.
"""

from redline.learning.config import ModelConfig, PPOConfig
from redline.learning.guard import NonFiniteError
from redline.learning.ppo import PPO
from redline.learning.precision import Precision
from redline.learning.rollout import collect_rollout, train_iteration

__all__ = ["PPO", "ModelConfig", "NonFiniteError", "PPOConfig", "Precision", "collect_rollout", "train_iteration"]

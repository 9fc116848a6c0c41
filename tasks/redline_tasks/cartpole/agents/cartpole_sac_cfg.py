"""SAC hyper-parameters for Redline-Cartpole (``rsl_rl_sac_cfg_entry_point``): the CPU defaults with 4x the gradient
steps (docs/offpolicy.md: at the learner's default of 2 per env step, Cartpole needed ~2x PPO's env steps)."""

from isaaclab.utils import configclass

from ...sac_agent import SACAlgorithmCfg, SACCriticCfg, SACRunnerCfg


@configclass
class CartpoleSACRunnerCfg(SACRunnerCfg):
    """The learner's CPU defaults (:class:`~redline.learning.sac.SACConfig`); the critic's support fits the task's
    returns (rewards are x step_dt: at most 1/60 per step, so discounted returns lie within about +-2)."""

    experiment_name = "redline_cartpole_sac"
    max_iterations = 250  # x num_steps_per_env (4) env steps per env: 256 k env steps at 256 envs
    critic = SACCriticCfg(v_min=-2.0, v_max=2.0)  # [return units]
    algorithm = SACAlgorithmCfg(updates_per_step=8)  # 32 samples per stored transition at batch 1024, 256 envs

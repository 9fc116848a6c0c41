"""SAC hyper-parameters for Redline-Cartpole
(``rsl_rl_sac_cfg_entry_point``): CPU-sized starting points, not yet tuned."""

from isaaclab.utils import configclass

from ...sac_agent import SACCriticCfg, SACRunnerCfg


@configclass
class CartpoleSACRunnerCfg(SACRunnerCfg):
    """The learner's CPU defaults (:class:`~redline.learning.sac.SACConfig`); the critic's support fits the task's
    returns (rewards are x step_dt: at most 1/60 per step, so discounted returns lie within about +-2)."""

    experiment_name = "redline_cartpole_sac"
    max_iterations = 500  # x num_steps_per_env (4) env steps per env
    critic = SACCriticCfg(v_min=-2.0, v_max=2.0)  # [return units]

"""SAC hyper-parameters for Redline-Ant
(``rsl_rl_sac_cfg_entry_point``): CPU-sized starting points, not yet tuned."""

from isaaclab.utils import configclass

from ...sac_agent import SACRunnerCfg


@configclass
class AntSACRunnerCfg(SACRunnerCfg):
    """The learner's CPU defaults (:class:`~redline.learning.sac.SACConfig`)."""

    experiment_name = "redline_ant_sac"
    max_iterations = 1500  # x num_steps_per_env (4) env steps per env

"""SAC hyper-parameters for Redline-Velocity-Flat-G1
(``rsl_rl_sac_cfg_entry_point``): CPU-sized starting points, not yet tuned."""

from isaaclab.utils import configclass

from ...sac_agent import SACRunnerCfg


@configclass
class G1FlatSACRunnerCfg(SACRunnerCfg):
    """The learner's CPU defaults (:class:`~redline.learning.sac.SACConfig`)."""

    experiment_name = "redline_velocity_flat_g1_sac"
    max_iterations = 2500  # x num_steps_per_env (4) env steps per env

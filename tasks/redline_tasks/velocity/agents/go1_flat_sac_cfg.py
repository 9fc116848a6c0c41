"""SAC hyper-parameters for Redline-Velocity-Flat-Go1 (``rsl_rl_sac_cfg_entry_point``): the CPU defaults at a 16x
higher replay ratio (docs/offpolicy.md, seed 1 each, anecdotes: at 256 envs and 32 gradient steps per iteration the
Go1 stood after 5.4 min of training, at 1024 envs and 8 after 8.8; none walked in 10 min)."""

from isaaclab.utils import configclass

from ...sac_agent import SACAlgorithmCfg, SACRunnerCfg


@configclass
class Go1FlatSACRunnerCfg(SACRunnerCfg):
    """The learner's CPU defaults (:class:`~redline.learning.sac.SACConfig`) with fewer envs and more gradient steps
    on the CPU: each stored transition is sampled ~32 times at batch 1024 (the learner's default: ~2)."""

    experiment_name = "redline_velocity_flat_go1_sac"
    max_iterations = 1500  # x num_steps_per_env (4) env steps per env
    cpu_num_envs = 256  # one process on 2 cores (launch.MIN_ENVS_PER_RANK): the update, not the physics, bounds it
    algorithm = SACAlgorithmCfg(updates_per_step=8)  # 32 gradient steps per iteration

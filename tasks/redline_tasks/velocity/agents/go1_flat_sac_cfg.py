"""SAC hyper-parameters for Redline-Velocity-Flat-Go1 (``rsl_rl_sac_cfg_entry_point``): the legged CPU recipe
(docs/offpolicy.md: seed 1 stood after 5.4 min of training at it in fp32, 8.8 in bf16 and 8.8 at 1024 envs and 8
gradient steps per iteration, anecdotes; at it in bf16 4 of 5 seeds stood after 6.4-8.8 min, none walked in 10)."""

from isaaclab.utils import configclass

from ...sac_agent import LeggedSACRunnerCfg


@configclass
class Go1FlatSACRunnerCfg(LeggedSACRunnerCfg):
    """:class:`~redline_tasks.sac_agent.LeggedSACRunnerCfg`: 256 envs and 8 gradient steps per env step on the CPU."""

    experiment_name = "redline_velocity_flat_go1_sac"
    max_iterations = 1500  # x num_steps_per_env (4) env steps per env

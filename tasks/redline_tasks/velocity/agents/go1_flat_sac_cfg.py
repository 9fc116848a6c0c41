"""SAC hyper-parameters for Redline-Velocity-Flat-Go1 (``rsl_rl_sac_cfg_entry_point``): the legged CPU recipe
(docs/offpolicy.md: without the mirror images 4 of 5 seeds stood after 6.4-8.8 min of training, none walked in 10;
with them seed 1 stood within ~4 min and plays as standing still at 10, an anecdote)."""

from isaaclab.utils import configclass

from ...sac_agent import LeggedSACRunnerCfg


@configclass
class Go1FlatSACRunnerCfg(LeggedSACRunnerCfg):
    """:class:`~redline_tasks.sac_agent.LeggedSACRunnerCfg`: 256 envs and 8 gradient steps per env step on the CPU."""

    experiment_name = "redline_velocity_flat_go1_sac"
    max_iterations = 1500  # x num_steps_per_env (4) env steps per env

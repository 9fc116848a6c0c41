"""SAC hyper-parameters for Redline-Velocity-Flat-G1 (``rsl_rl_sac_cfg_entry_point``): the legged CPU recipe
(docs/offpolicy.md, seed 1, an anecdote: 85 % of the ended episodes reached the time-out after 30 min, where PPO's
reached none after 20)."""

from isaaclab.utils import configclass

from ...sac_agent import LeggedSACRunnerCfg


@configclass
class G1FlatSACRunnerCfg(LeggedSACRunnerCfg):
    """:class:`~redline_tasks.sac_agent.LeggedSACRunnerCfg`: 256 envs and 8 gradient steps per env step on the CPU."""

    experiment_name = "redline_velocity_flat_g1_sac"
    max_iterations = 2500  # x num_steps_per_env (4) env steps per env

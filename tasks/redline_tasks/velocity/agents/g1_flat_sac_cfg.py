"""SAC hyper-parameters for Redline-Velocity-Flat-G1 (``rsl_rl_sac_cfg_entry_point``): the legged CPU recipe
(docs/offpolicy.md, seed 1, anecdotes: with the left-right mirror images its checkpoints after 15.1 and 23.1 min of
training play whole at 95 % and 98 % time-outs, the last, at 30 min, at 72 %; without them 70 / 86 / 83 %. PPO's
reach none after 20 min)."""

from isaaclab.utils import configclass

from ...sac_agent import LeggedSACRunnerCfg


@configclass
class G1FlatSACRunnerCfg(LeggedSACRunnerCfg):
    """:class:`~redline_tasks.sac_agent.LeggedSACRunnerCfg`: 256 envs and 8 gradient steps per env step on the CPU."""

    experiment_name = "redline_velocity_flat_g1_sac"
    max_iterations = 2500  # x num_steps_per_env (4) env steps per env

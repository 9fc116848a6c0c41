"""SAC hyper-parameters for Redline-Velocity-Flat-G1 (``rsl_rl_sac_cfg_entry_point``): the legged CPU recipe
(docs/offpolicy.md, anecdotes: with the left-right mirror images seed 1's checkpoints play whole at 90-98 %
time-outs at 4 of 6 checkpoints from 11 min of training, its last, at 30 min, at 72 %; seeds 2's and 3's at 64-87 %;
PPO's reach none after 20 min)."""

from isaaclab.utils import configclass

from ...sac_agent import LeggedSACRunnerCfg


@configclass
class G1FlatSACRunnerCfg(LeggedSACRunnerCfg):
    """:class:`~redline_tasks.sac_agent.LeggedSACRunnerCfg`: 256 envs and 8 gradient steps per env step on the CPU."""

    experiment_name = "redline_velocity_flat_g1_sac"
    max_iterations = 2500  # x num_steps_per_env (4) env steps per env

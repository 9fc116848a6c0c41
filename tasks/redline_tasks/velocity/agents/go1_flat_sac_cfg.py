"""SAC hyper-parameters for Redline-Velocity-Flat-Go1 (``rsl_rl_sac_cfg_entry_point``): the legged CPU recipe and a
target entropy of 0 nats (docs/offpolicy.md: at SAC's default, -12 nats, 4 of 5 seeds stood after 6.4-8.8 min and
none walked in 10; at 0, seed 1 walked after 6.9 min of training, an anecdote until the 5-seed table)."""

from typing import Any

from isaaclab.utils import configclass

from ...sac_agent import LeggedSACRunnerCfg, SACAlgorithmCfg


@configclass
class Go1FlatSACRunnerCfg(LeggedSACRunnerCfg):
    """:class:`~redline_tasks.sac_agent.LeggedSACRunnerCfg` (256 envs and 8 gradient steps per env step on the CPU)
    with the temperature steered to 0 nats of policy entropy: an exploration std of ~0.55 before the tanh (~0.3 at
    -12), which finds the gait after the robot stands instead of settling on standing still."""

    experiment_name = "redline_velocity_flat_go1_sac"
    max_iterations = 1500  # x num_steps_per_env (4) env steps per env
    algorithm: Any = SACAlgorithmCfg(updates_per_step=8, target_entropy=0.0)  # [nats]; None: -num_actions (-12)

"""PPO hyper-parameters for Redline-Ant (Isaac Lab's Ant values)."""

from isaaclab.utils import configclass
from isaaclab_tasks.core.locomotion.ant.agents.rsl_rl_ppo_cfg import AntPPORunnerCfg as IsaacAntPPORunnerCfg

from redline.device import default_device


@configclass
class AntPPORunnerCfg(IsaacAntPPORunnerCfg):
    """Isaac Lab's Ant PPO (32 steps/env, [400, 200, 100] ELU MLPs, 5 epochs x 4 minibatches, adaptive KL)."""

    experiment_name = "redline_ant"
    obs_groups = {"actor": ["policy"], "critic": ["policy"]}
    device = default_device()  # "cuda:0" when a GPU is present, else "cpu" (rsl_rl's default is always cuda:0)

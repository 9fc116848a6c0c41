"""PPO hyper-parameters for Redline-Cartpole (Isaac Lab's cartpole values)."""

from isaaclab.utils import configclass
from isaaclab_tasks.core.cartpole.agents.rsl_rl_ppo_cfg import CartpolePPORunnerCfg as IsaacCartpolePPORunnerCfg

from redline.device import default_device


@configclass
class CartpolePPORunnerCfg(IsaacCartpolePPORunnerCfg):
    """Isaac Lab's cartpole PPO (16 steps/env, [32, 32] ELU MLPs, 5 epochs x 4 minibatches, adaptive KL)."""

    experiment_name = "redline_cartpole"
    obs_groups = {"actor": ["policy"], "critic": ["policy"]}
    device = default_device()  # "cuda:0" when a GPU is present, else "cpu" (rsl_rl's default is always cuda:0)

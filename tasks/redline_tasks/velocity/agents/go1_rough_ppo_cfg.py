"""PPO hyper-parameters for Redline-Velocity-Rough-Go1: the flat Go1's, with Isaac Lab's rough iteration budget."""

from isaaclab.utils import configclass

from .go1_flat_ppo_cfg import ISAAC_LAB_DESIRED_KL, ISAAC_LAB_ENTROPY, Go1FlatPPORunnerCfg


@configclass
class Go1RoughPPORunnerCfg(Go1FlatPPORunnerCfg):
    """The flat Go1's PPO (24 steps/env, 5 epochs x 4 minibatches, adaptive KL, running observation normalisation)
    and its [128, 128, 128] networks: Isaac Lab's rough configs use [512, 256, 128], ~5x the update FLOPs on a CPU,
    and the 187 height-scan inputs already make the first layer 5x wider. 1500 iterations, as Isaac Lab's rough
    legged tasks, and Isaac Lab's KL target and entropy (the flat Go1's departures are measured on flat ground only)."""

    max_iterations = 1500
    experiment_name = "redline_velocity_rough_go1"

    def __post_init__(self):
        super().__post_init__()
        self.algorithm.desired_kl = ISAAC_LAB_DESIRED_KL
        self.algorithm.entropy_coef = ISAAC_LAB_ENTROPY

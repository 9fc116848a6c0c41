"""PPO hyper-parameters for Redline-Velocity-Flat-G1 (Isaac Lab's G1 flat values)."""

from isaaclab.utils import configclass

from .go1_flat_ppo_cfg import ISAAC_LAB_DESIRED_KL, Go1FlatPPORunnerCfg


@configclass
class G1FlatPPORunnerCfg(Go1FlatPPORunnerCfg):
    """The Go1's legged PPO with Isaac Lab's G1 flat changes: [256, 128, 128] ELU actor and critic, entropy 0.008,
    1500 iterations, Isaac Lab's KL target (the flat Go1's 0.02 is measured on the Go1 only); running observation
    normalisation kept (29 unscaled joint velocities)."""

    max_iterations = 1500
    experiment_name = "redline_velocity_flat_g1"

    def __post_init__(self):
        super().__post_init__()
        self.actor.hidden_dims = [256, 128, 128]
        self.critic.hidden_dims = [256, 128, 128]
        self.algorithm.entropy_coef = 0.008
        self.algorithm.desired_kl = ISAAC_LAB_DESIRED_KL

"""PPO hyper-parameters for Redline-Velocity-Flat-Go1: Isaac Lab's flat legged values, two tuned for sample use."""

from isaaclab.utils import configclass
from isaaclab_rl.rsl_rl import RslRlMLPModelCfg, RslRlOnPolicyRunnerCfg, RslRlPpoAlgorithmCfg, RslRlSymmetryCfg

from redline.device import default_device

from ..mdp.symmetry import go1_left_right

ISAAC_LAB_DESIRED_KL = 0.01
"""Isaac Lab's KL target of the adaptive learning-rate schedule (its legged velocity agents)."""
ISAAC_LAB_ENTROPY = 0.01
"""Isaac Lab's entropy coefficient of its legged velocity agents."""


@configclass
class Go1FlatPPORunnerCfg(RslRlOnPolicyRunnerCfg):
    """Legged PPO as in Isaac Lab's flat velocity tasks (24 steps/env, 5 epochs x 4 minibatches, adaptive KL, lr 1e-3,
    gamma 0.99, lambda 0.95; [128, 128, 128] ELU actor and critic: Isaac Lab's flat choice, the rough tasks'
    [512, 256, 128] costs ~5x the update FLOPs on a CPU), with running observation normalisation (as mjlab's Go1
    velocity task; Isaac Lab 3.0's velocity configs leave it off: the joint velocities enter unscaled, and a
    CPU-sized batch is a few thousand samples) and two departures for env-step efficiency on a CPU-sized batch
    (issue 45, docs/go1.md): the adaptive schedule's KL target 0.02 (Isaac Lab: 0.01), which keeps the learning
    rate ~3x higher, and entropy 0.005 (Isaac Lab: 0.01), which lets the action noise shrink so fewer training
    episodes end in a fall. Isaac Lab's values are :data:`ISAAC_LAB_DESIRED_KL` and :data:`ISAAC_LAB_ENTROPY`."""

    num_steps_per_env = 24
    max_iterations = 300
    save_interval = 50
    experiment_name = "redline_velocity_flat_go1"
    obs_groups = {"actor": ["policy"], "critic": ["policy"]}
    device = default_device()  # "cuda:0" when a GPU is present, else "cpu" (rsl_rl's default is always cuda:0)
    actor = RslRlMLPModelCfg(
        hidden_dims=[128, 128, 128],
        activation="elu",
        obs_normalization=True,
        distribution_cfg=RslRlMLPModelCfg.GaussianDistributionCfg(init_std=1.0),
    )
    critic = RslRlMLPModelCfg(hidden_dims=[128, 128, 128], activation="elu", obs_normalization=True)
    algorithm = RslRlPpoAlgorithmCfg(
        value_loss_coef=1.0,
        use_clipped_value_loss=True,
        clip_param=0.2,
        entropy_coef=0.005,  # Isaac Lab: 0.01
        num_learning_epochs=5,
        num_mini_batches=4,
        learning_rate=1.0e-3,
        schedule="adaptive",
        gamma=0.99,
        lam=0.95,
        desired_kl=0.02,  # Isaac Lab: 0.01
        max_grad_norm=1.0,
    )


@configclass
class Go1FlatPPORunnerSymmetryCfg(Go1FlatPPORunnerCfg):
    """The same PPO with the Go1's left-right mirror appended to every minibatch (data augmentation, as Isaac Lab's
    Anymal symmetry agents); ``rsl_rl_with_symmetry_cfg_entry_point``. It runs on rsl_rl's runner: with
    ``agent.algorithm.class_name=redline.learning.rsl_rl:PPO`` on redline's general update."""

    experiment_name = "redline_velocity_flat_go1_symmetry"
    algorithm = Go1FlatPPORunnerCfg().algorithm.replace(
        symmetry_cfg=RslRlSymmetryCfg(use_data_augmentation=True, data_augmentation_func=go1_left_right)
    )

"""PPO hyper-parameters for Redline-Cartpole (Isaac Lab's cartpole values)."""

from isaaclab.utils import configclass
from isaaclab_rl.rsl_rl import RslRlMLPModelCfg, RslRlRNNModelCfg
from isaaclab_tasks.core.cartpole.agents.rsl_rl_ppo_cfg import CartpolePPORunnerCfg as IsaacCartpolePPORunnerCfg
from isaaclab_tasks.core.cartpole.agents.rsl_rl_ppo_cfg import CartpolePPORunnerWithSymmetryCfg

from redline.device import default_device


@configclass
class CartpolePPORunnerCfg(IsaacCartpolePPORunnerCfg):
    """Isaac Lab's cartpole PPO (16 steps/env, [32, 32] ELU MLPs, 5 epochs x 4 minibatches, adaptive KL)."""

    experiment_name = "redline_cartpole"
    obs_groups = {"actor": ["policy"], "critic": ["policy"]}
    device = default_device()  # "cuda:0" when a GPU is present, else "cpu" (rsl_rl's default is always cuda:0)


@configclass
class CartpolePPORunnerRecurrentCfg(CartpolePPORunnerCfg):
    """The same PPO with LSTM actor and critic (one layer of 32 before the [32, 32] MLPs), as Isaac Lab's recurrent
    Anymal-D config; ``rsl_rl_recurrent_cfg_entry_point``."""

    experiment_name = "redline_cartpole_recurrent"
    actor = RslRlRNNModelCfg(
        hidden_dims=[32, 32],
        activation="elu",
        obs_normalization=False,
        distribution_cfg=RslRlMLPModelCfg.GaussianDistributionCfg(init_std=1.0),
        rnn_type="lstm",
        rnn_hidden_dim=32,
        rnn_num_layers=1,
    )
    critic = RslRlRNNModelCfg(
        hidden_dims=[32, 32],
        activation="elu",
        obs_normalization=False,
        rnn_type="lstm",
        rnn_hidden_dim=32,
        rnn_num_layers=1,
    )


@configclass
class CartpolePPORunnerSymmetryCfg(CartpolePPORunnerWithSymmetryCfg):
    """Isaac Lab's cartpole PPO with left-right symmetry augmentation; ``rsl_rl_with_symmetry_cfg_entry_point``.

    Its ``compute_symmetric_states`` negates the ``policy`` observation and the action, which holds for redline's
    cartpole too (pole and cart positions and velocities)."""

    experiment_name = "redline_cartpole_symmetry"
    obs_groups = {"actor": ["policy"], "critic": ["policy"]}
    device = default_device()

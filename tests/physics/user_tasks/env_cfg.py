"""The user task's configs: its own physics preset group and an armature chosen per preset."""

from isaaclab.sim import SimulationCfg
from isaaclab.utils import configclass
from isaaclab_newton.physics import MJWarpSolverCfg, NewtonCfg
from isaaclab_physx.physics import PhysxCfg
from isaaclab_tasks.core.cartpole.cartpole_direct_env_cfg import CartpoleEnvCfg
from isaaclab_tasks.utils import PresetCfg, preset


@configclass
class UserPhysicsCfg(PresetCfg):
    """The user's physics choices: MuJoCo-Warp (default) with its own solver options, or PhysX."""

    newton_mjwarp: NewtonCfg = NewtonCfg(
        solver_cfg=MJWarpSolverCfg(njmax=7, nconmax=4, cone="pyramidal", integrator="implicitfast"),
        num_substeps=1,
    )
    isaacsim_physx: PhysxCfg = PhysxCfg()
    default: NewtonCfg = newton_mjwarp


@configclass
class UserCartpoleEnvCfg(CartpoleEnvCfg):
    """Isaac Lab's direct cartpole with the user's physics group, a 2 s episode and a MuJoCo-Warp armature."""

    sim: SimulationCfg = SimulationCfg(dt=1 / 120, render_interval=2, physics=UserPhysicsCfg())
    episode_length_s = 2.0
    armature = preset(default=0.0, newton_mjwarp=0.01)
    """[kg m^2] a value the user picks per preset (read by nothing here; resolution is what is tested)."""

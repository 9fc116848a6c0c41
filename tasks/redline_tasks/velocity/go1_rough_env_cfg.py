"""Redline-Velocity-Rough-Go1: Isaac Lab's rough velocity task (height scan, terrain-levels curriculum) on the Go1.

The terrain is Isaac Lab's ``ROUGH_TERRAINS_CFG`` (stairs up and down, boxes, random rough, slopes up and down) with
Isaac Lab's small-robot scaling (its Go1/Go2 rough configs), on a 10 x 10 grid of 8 m tiles, every sub-terrain marked
``convert_to_heightfield``: Isaac Lab's importer writes the generated mesh to the stage and tags it, Newton rasterises
it into one heightfield at the generator's 0.1 m resolution, and Newton's MuJoCo solver hands that heightfield to
MuJoCo as an ``hfield`` geom, so MuJoCo-C (``physics=mujoco_cpu``), MuJoCo-Warp and Newton's collision pipeline all
collide with the same samples (docs/go1_rough.md). The height scan samples that heightfield under Isaac Lab's scan
grid (:mod:`.mdp.height_scan`: the numbers of Isaac Lab's ray caster without its per-step cost on the CPU).
"""

from __future__ import annotations

import isaaclab.sim as sim_utils
from isaaclab.managers import CurriculumTermCfg as CurrTerm
from isaaclab.managers import EventTermCfg as EventTerm
from isaaclab.managers import ObservationTermCfg as ObsTerm
from isaaclab.terrains import TerrainGeneratorCfg, TerrainImporterCfg
from isaaclab.terrains.config.rough import ROUGH_TERRAINS_CFG
from isaaclab.utils import configclass

from .go1_flat_env_cfg import Go1FlatEnvCfg
from .mdp import noisy_term
from .mdp.height_scan import height_scan
from .mdp.terrain import seed_terrain_origins, terrain_levels_vel
from .velocity_env_cfg import ObservationsCfg, VelocitySceneCfg, use_velocity_play_defaults


def go1_rough_terrains(num_rows: int = 10, num_cols: int = 10) -> TerrainGeneratorCfg:
    """Isaac Lab's rough terrains scaled for a small robot, every sub-terrain collided with as a heightfield.

    Args:
        num_rows: difficulty levels (the curriculum's rows).
        num_cols: tiles per level, shared among the sub-terrain types by their proportions.
    """
    cfg = ROUGH_TERRAINS_CFG.copy()  # type: ignore[attr-defined]
    cfg.num_rows, cfg.num_cols = num_rows, num_cols
    cfg.seed = 0  # the ground is one for every env and every run: its own fixed seed, not the run's
    cfg.curriculum = True  # rows of increasing difficulty (Isaac Lab sets it when the curriculum term is on)
    terrains = cfg.sub_terrains
    terrains["boxes"].grid_height_range = (0.025, 0.1)  # [m]
    terrains["random_rough"].noise_range = (0.01, 0.06)  # [m]
    terrains["random_rough"].noise_step = 0.01  # [m]
    terrains["pyramid_stairs"].step_height_range = (0.025, 0.12)  # [m]
    terrains["pyramid_stairs_inv"].step_height_range = (0.025, 0.12)  # [m]
    for sub in terrains.values():
        sub.convert_to_heightfield = True  # MuJoCo collides with a mesh as with its convex hull; with an hfield, not
    return cfg


@configclass
class RoughSceneCfg(VelocitySceneCfg):
    """The generated terrain, the robot, contact sensors on all its bodies, a light (the height scan reads the
    terrain itself: :mod:`redline_tasks.velocity.mdp.height_scan`)."""

    terrain = TerrainImporterCfg(
        prim_path="/World/ground",
        terrain_type="generator",
        terrain_generator=go1_rough_terrains(),
        max_init_terrain_level=5,
        collision_group=-1,
        physics_material=VelocitySceneCfg(num_envs=1, env_spacing=0.0).terrain.physics_material,  # the flat ground
        visual_material=sim_utils.PreviewSurfaceCfg(diffuse_color=(0.45, 0.45, 0.42)),
        debug_vis=False,
    )


@configclass
class RoughObservationsCfg(ObservationsCfg):
    """The flat task's 48 observations and the height scan (187 values) of Isaac Lab's rough task."""

    @configclass
    class PolicyCfg(ObservationsCfg.PolicyCfg):
        """Observations of the policy (and the critic)."""

        height_scan = ObsTerm(**noisy_term(height_scan, -0.1, 0.1), clip=(-1.0, 1.0))  # [m]

    policy: PolicyCfg = PolicyCfg()


@configclass
class CurriculumCfg:
    """Isaac Lab's terrain-levels curriculum, its random level drawn from the env's stream."""

    terrain_levels = CurrTerm(func=terrain_levels_vel)


@configclass
class Go1RoughEnvCfg(Go1FlatEnvCfg):
    """Go1 on rough terrain: 235 observations (48 + a 187-ray height scan), 12 joint-position actions; Isaac Lab's
    Go1 rough reward weights."""

    scene: RoughSceneCfg = RoughSceneCfg(num_envs=4096, env_spacing=0.0)
    observations: RoughObservationsCfg = RoughObservationsCfg()
    curriculum: CurriculumCfg = CurriculumCfg()

    def __post_init__(self):
        super().__post_init__()
        self.events.terrain_origins = EventTerm(func=seed_terrain_origins, mode="startup")
        # Isaac Lab's Go1 rough rewards: no thigh-contact penalty, a small air-time reward, no flat-orientation term
        self.rewards.feet_air_time.weight = 0.01
        self.rewards.undesired_contacts = None
        self.rewards.flat_orientation_l2.weight = 0.0
        newton_mjwarp = self.sim.physics.newton_mjwarp
        newton_mjwarp.solver_cfg.njmax = 400  # rough ground: more contacts per world than on the plane
        newton_mjwarp.solver_cfg.nconmax = 100
        self.sim.physics.mujoco_cpu.solver_cfg.njmax = 400
        self.sim.physics.mujoco_cpu.solver_cfg.nconmax = 100
        self.sim.physics.mujoco_cpu.solver_cfg.fuse_decimation = False  # the flat Go1's; not measured on rough ground


@configclass
class Go1RoughEnvCfg_PLAY(Go1RoughEnvCfg):
    """Play twin: 16 envs, ``eval`` seeding, no observation noise, no pushes, a 5 x 5 terrain with robots spawned
    on every level (Isaac Lab's play changes)."""

    def __post_init__(self):
        super().__post_init__()
        use_velocity_play_defaults(self)
        self.scene.terrain.max_init_terrain_level = None
        generator = self.scene.terrain.terrain_generator
        generator.num_rows, generator.num_cols = 5, 5
        generator.curriculum = False

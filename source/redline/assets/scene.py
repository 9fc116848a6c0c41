"""Scene pieces that load redline's local assets (imports Isaac Lab; used by the task configs only)."""

from __future__ import annotations

import isaaclab.sim as sim_utils
from isaaclab.terrains import TerrainImporter, TerrainImporterCfg

from redline.assets import GROUND_PLANE_REL, asset_path, ensure_asset_root


def local_ground_plane_cfg(**kwargs) -> sim_utils.GroundPlaneCfg:
    """Isaac Lab's :class:`GroundPlaneCfg` pointing at the local ground plane instead of the asset server."""
    return sim_utils.GroundPlaneCfg(usd_path=asset_path(GROUND_PLANE_REL), **kwargs)


class LocalPlaneTerrainImporter(TerrainImporter):
    """A ``terrain_type="plane"`` terrain whose plane comes from the local asset root.

    Isaac Lab's importer spawns its plane from the remote asset server; this one builds the local
    asset root first and spawns the same kind of plane (same physics material) from it.
    """

    def __init__(self, cfg: TerrainImporterCfg):
        ensure_asset_root()
        super().__init__(cfg)

    def import_ground_plane(self, name: str, size: tuple[float, float] | None = None):
        prim_path = f"{self.cfg.prim_path}/{name}"
        if prim_path in self.terrain_prim_paths:
            raise ValueError(f"A terrain named '{name}' already exists: {', '.join(self.terrain_names)}.")
        self.terrain_prim_paths.append(prim_path)
        cfg = local_ground_plane_cfg(
            physics_material=self.cfg.physics_material, size=size or self._compute_ground_plane_size()
        )
        cfg.func(prim_path, cfg)

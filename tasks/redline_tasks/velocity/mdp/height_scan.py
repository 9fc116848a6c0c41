"""The height scan of Isaac Lab's rough velocity task, read from the heightfield the physics collides with.

Isaac Lab's ``height_scan`` observation reads a :class:`~isaaclab.sensors.RayCaster` on the base: a grid of vertical
rays, aligned with the base's yaw, cast from 20 m above it; the value per ray is ``base z - hit z - 0.5`` [m]. On
Newton that ray caster works kit-less (it casts against Newton's shape BVH, heightfields included), but every call
re-creates and re-hashes its Warp kernel: ~60 ms per env step on this CPU whatever the env count, more than the whole
physics step of a few hundred envs. The terrain here is one heightfield (see ``go1_rough_env_cfg``), so this term
computes the same numbers directly: the ray grid's points in the world, the height of the heightfield's triangle
under each (Newton's triangulation, the one its collision and ray casting use), ``base z - height - offset``. A few
torch operations per step, no kernel. A test compares it with Isaac Lab's ray caster on the same states.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import torch
from isaaclab.managers import SceneEntityCfg
from isaaclab.sensors.ray_caster.patterns import GridPatternCfg

from .events import ROBOT

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedEnv

SCAN_PATTERN = GridPatternCfg(resolution=0.1, size=(1.6, 1.0))
"""Isaac Lab's rough-task scan: 17 x 11 = 187 points, 0.1 m apart, 1.6 m along the base's heading, 1.0 m across."""


class TerrainHeights:
    """Heights [m] of a Newton heightfield shape at world (x, y) points, on its triangles."""

    def __init__(self, heights: torch.Tensor, hx: float, hy: float, center: tuple[float, float, float]) -> None:
        """``heights`` ``(nrow, ncol)`` [m]: row ``r`` at ``y = -hy + r dy``, column ``c`` at ``x = -hx + c dx`` in
        the shape's frame, whose origin is at ``center`` [m] in the world (heightfields are never rotated here)."""
        self.heights = heights
        self.nrow, self.ncol = heights.shape
        self.hx, self.hy = hx, hy
        self.dx, self.dy = 2.0 * hx / (self.ncol - 1), 2.0 * hy / (self.nrow - 1)
        self.center = center

    @classmethod
    def from_newton_model(cls, model: Any, device: torch.device | str) -> TerrainHeights:
        """The model's only heightfield shape; a ``ValueError`` when it has none or several."""
        # heavy: Warp/Newton, imported only once the simulator runs
        from newton import GeoType

        types = model.shape_type.numpy()
        shapes = [i for i, t in enumerate(types) if int(t) == int(GeoType.HFIELD)]
        if len(shapes) != 1:
            raise ValueError(f"the height scan needs exactly one heightfield terrain in the model, found {len(shapes)}")
        source = model.shape_source[shapes[0]]
        xform = model.shape_transform.numpy()[shapes[0]]  # (px, py, pz, qx, qy, qz, qw)
        if abs(abs(float(xform[6])) - 1.0) > 1e-6:
            raise ValueError("the height scan supports an unrotated heightfield only")
        data = torch.as_tensor(source.data, dtype=torch.float32, device=device)  # normalised to [0, 1]
        heights = source.min_z + data * (source.max_z - source.min_z)
        return cls(heights, float(source.hx), float(source.hy), (float(xform[0]), float(xform[1]), float(xform[2])))

    def height_at(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Heights [m] at world points ``(x, y)`` (any shape; points off the field take its edge's height)."""
        col_f = ((x - self.center[0] + self.hx) / self.dx).clamp_(0.0, self.ncol - 1)
        row_f = ((y - self.center[1] + self.hy) / self.dy).clamp_(0.0, self.nrow - 1)
        col = col_f.long().clamp_(max=self.ncol - 2)
        row = row_f.long().clamp_(max=self.nrow - 2)
        fx, fy = col_f - col, row_f - row
        flat = self.heights.view(-1)
        index = row * self.ncol + col  # (row, col) in the flat array
        h00, h10 = flat[index], flat[index + 1]
        h01, h11 = flat[index + self.ncol], flat[index + self.ncol + 1]
        # the cell's diagonal runs from (row, col) to (row + 1, col + 1), as in Newton's heightfield queries
        lower = h00 + fx * (h10 - h00) + fy * (h11 - h10)  # triangle (00, 10, 11): fx >= fy
        upper = h00 + fy * (h01 - h00) + fx * (h11 - h01)  # triangle (00, 11, 01)
        return torch.where(fx >= fy, lower, upper) + self.center[2]


_TERRAINS: weakref.WeakKeyDictionary[Any, TerrainHeights] = weakref.WeakKeyDictionary()
_PATTERNS: dict[tuple[str, float, tuple[float, float]], torch.Tensor] = {}


def terrain_heights(env: ManagerBasedEnv) -> TerrainHeights:
    """The env's terrain heightfield, read from its Newton model once."""
    heights = _TERRAINS.get(env)
    if heights is None:
        # heavy: Isaac Lab, imported only once the simulator is needed
        from isaaclab_newton.physics import NewtonManager

        heights = TerrainHeights.from_newton_model(NewtonManager.get_model(), env.device)
        _TERRAINS[env] = heights
    return heights


def scan_points(pattern: GridPatternCfg, device: torch.device | str) -> torch.Tensor:
    """``(rays, 3)`` the pattern's points in the sensor frame, in Isaac Lab's ray order."""
    key = (str(device), pattern.resolution, tuple(pattern.size))
    if key not in _PATTERNS:
        _PATTERNS[key] = pattern.func(pattern, device)[0]
    return _PATTERNS[key]


def height_scan(
    env: ManagerBasedEnv,
    asset_cfg: SceneEntityCfg = ROBOT,
    pattern: GridPatternCfg = SCAN_PATTERN,
    offset: float = 0.5,
) -> torch.Tensor:
    """``(num_envs, rays)`` base height above the terrain minus ``offset`` [m] at each point of ``pattern`` around
    the root body, the pattern turned with the body's yaw: Isaac Lab's ``height_scan`` of a yaw-aligned ray caster
    on that body."""
    asset: Any = env.scene[asset_cfg.name]
    pos = asset.data.root_pos_w.torch  # (n, 3) [m]
    w, x, y, z = asset.data.root_quat_w.torch.unbind(-1)  # (w, x, y, z)
    yaw = torch.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))[:, None]  # (n, 1) [rad]
    cos, sin = torch.cos(yaw), torch.sin(yaw)
    local = scan_points(pattern, env.device)
    lx, ly = local[:, 0], local[:, 1]  # (rays,) [m]
    px = pos[:, :1] + cos * lx - sin * ly  # (n, rays) [m]
    py = pos[:, 1:2] + sin * lx + cos * ly
    return pos[:, 2:3] - terrain_heights(env).height_at(px, py) - offset

"""``redline play --video``: an mp4 of the first envs, ray-traced headless by Newton's Warp renderer.

Newton's :class:`newton.sensors.SensorTiledCamera` ray-traces every Newton world (one per env) with Warp kernels on
the env's device, the CPU included, without a display or OpenGL. One camera per world looks at the world's root
body from a fixed offset (so it follows a walking robot and stays put on a fixed-base one); the first
:data:`MAX_TILES` worlds are tiled into each frame, the other worlds' cameras look at the empty sky (cheap misses).
Frames are H.264-encoded with PyAV (FFmpeg's libraries, bundled in its wheel).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, cast

import numpy as np

VIDEO_FPS = 30
"""Target frame rate of ``--video`` [frames / s]; every k-th env step is rendered, k = round(1 / (fps * step_dt))."""

MAX_TILES = 4
"""Worlds shown per frame (a 2 x 2 grid at most)."""

TILE_W, TILE_H = 320, 240
"""One world's image [px]."""

CAMERA_OFFSET = (-3.6, -1.4, 0.9)
"""Camera position relative to a world's root body [m]: beside it (Cartpole's rail runs along y), a bit above."""

SKY_ABGR = 0xFFE8D2B4
"""Background colour, packed ``A B G R`` (a pale blue, so the horizon and the dark bodies stand out)."""

FOV_DEG = 45.0
"""Vertical field of view [deg]."""


def look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Camera-to-world rotation (3 x 3) of a camera at ``eye`` looking at ``target``, z up in the world.

    Newton's cameras look along their -z axis with +y up (the OpenGL convention).
    """
    forward = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(forward, (0.0, 0.0, 1.0))
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    return np.stack([right, up, -forward], axis=1)


def tile_grid(n: int) -> tuple[int, int]:
    """``(rows, cols)`` of the frame for ``n`` shown worlds."""
    return (1, n) if n <= 2 else (2, 2)


def show_collision_shapes(model: Any, state: Any) -> bool:
    """Make the shapes of a world visible to the ray tracer when none of them is (a robot described by collision
    geometry only, as the Go1's converted MJCF: Newton flags them collide-only, and the camera saw an empty floor),
    and rebuild the shape BVH the tracer walks from ``state``. Only the ``VISIBLE`` bit changes; collisions do not
    read it. Returns whether anything changed."""
    # heavy: Warp/Newton, imported only once the simulator runs
    from newton import ShapeFlags

    visible = int(ShapeFlags.VISIBLE)
    flags = model.shape_flags.numpy()
    in_world = model.shape_world.numpy() >= 0  # -1: global shapes (the ground)
    if not in_world.any() or (flags[in_world] & visible).any():
        return False
    flags[in_world] |= visible
    model.shape_flags.assign(flags)
    model.bvh_build_shapes(state)
    return True


class NewtonVideoRecorder:
    """Renders the scene Isaac Lab's Newton backend simulates and encodes it into ``path``.

    Args:
        path: the mp4 to write (its folder is created).
        fps: frames per second of the video.
    """

    def __init__(self, path: Path, fps: int) -> None:
        # heavy: Isaac Lab, imported only once the simulator is needed
        import av
        import warp
        from isaaclab_newton.physics.newton_manager import NewtonManager
        from newton.sensors import SensorTiledCamera

        wp: Any = warp  # warp's stubs reject plain floats for its vector types
        self._wp = wp
        self._manager = NewtonManager
        self.model = NewtonManager.get_model()
        self.path = path
        self.frames = 0
        worlds = self.model.world_count
        self.tiles = min(MAX_TILES, worlds)
        self._rows, self._cols = tile_grid(self.tiles)
        show_collision_shapes(self.model, NewtonManager.get_state_0())
        self._sensor = cast(Any, SensorTiledCamera(self.model))  # newton ships partial stubs
        self._sensor.default_render_config.enable_shadows = False  # shadows double the rays traced on the CPU
        self._sensor.utils.create_default_light(enable_shadows=False)
        self._rays = self._sensor.utils.compute_camera_rays_pinhole(TILE_W, TILE_H, camera_fovs=math.radians(FOV_DEG))
        self._color = self._sensor.utils.create_color_image_output(TILE_W, TILE_H, 1)
        body_world = self.model.body_world.numpy()
        self._roots = [int(np.flatnonzero(body_world == w)[0]) for w in range(self.tiles)]  # first body of each world
        # unshown worlds: a camera high above the scene looking straight up (its -z axis turned to +z) sees nothing
        self._sky = wp.transformf(wp.vec3f(0.0, 0.0, 1000.0), wp.quatf(1.0, 0.0, 0.0, 0.0))
        path.parent.mkdir(parents=True, exist_ok=True)
        self._container: Any = av.open(str(path), mode="w")
        self._stream = self._container.add_stream("libx264", rate=fps)
        self._stream.width, self._stream.height = self._cols * TILE_W, self._rows * TILE_H
        self._stream.pix_fmt = "yuv420p"
        self._stream.options = {"crf": "23", "preset": "veryfast"}

    def _camera_transforms(self, body_q: np.ndarray) -> Any:
        wp: Any = self._wp
        transforms = [self._sky] * self.model.world_count
        for world, body in enumerate(self._roots):
            target = body_q[body, :3].astype(np.float64)
            eye = target + np.asarray(CAMERA_OFFSET)
            rotation = wp.mat33f(*look_at(eye, target).flatten())
            transforms[world] = wp.transformf(wp.vec3f(*eye), wp.quat_from_matrix(rotation))
        return wp.array([transforms], dtype=wp.transformf, device=self.model.device)

    def render(self) -> np.ndarray:
        """The current frame, ``(rows * 240, cols * 320, 3)`` uint8 RGB."""
        # heavy: Warp/Newton, imported only once the simulator runs
        from newton.sensors import SensorTiledCamera

        state = self._manager.get_state_0()
        self.model.bvh_refit_shapes(state)
        self._sensor.update(
            state,
            self._camera_transforms(state.body_q.numpy()),
            self._rays,
            color_image=self._color,
            clear_data=SensorTiledCamera.ClearData(clear_color=SKY_ABGR),
        )
        tiles = self._sensor.utils.to_rgba_from_color(self._color).numpy()[: self.tiles, :, :, :3]
        frame = np.zeros((self._rows * TILE_H, self._cols * TILE_W, 3), dtype=np.uint8)
        for i, tile in enumerate(tiles):
            r, c = divmod(i, self._cols)
            frame[r * TILE_H : (r + 1) * TILE_H, c * TILE_W : (c + 1) * TILE_W] = tile
        return frame

    def capture(self) -> None:
        """Render the current state and append it to the video."""
        # optional: PyAV, only to encode a video
        import av

        frame = av.VideoFrame.from_ndarray(self.render(), format="rgb24")
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
        self.frames += 1

    def close(self) -> None:
        """Flush the encoder and close the file."""
        for packet in self._stream.encode():
            self._container.mux(packet)
        self._container.close()

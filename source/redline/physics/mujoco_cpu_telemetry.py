"""The implicit drives' torque telemetry when ``physics=mujoco_cpu`` owns an env step's decimation loop.

Isaac Lab computes an implicit PD drive's applied torque (``data.applied_torque``, read by ``joint_torques_l2``)
from the state before a physics step: its default loop once per physics step (``write_data_to_sim``), its
physics-owned loop too for native actuators (``sync_torque_telemetry`` before every physics step). What a reward
reads after the env step is therefore the torque of the state before the env step's **last** physics step. With
``fuse_decimation`` the env writes its targets once, at the env step's start, where the PD error is largest; so
the manager refreshes the telemetry before the last physics step instead (:class:`TelemetryRefresh`), from the
state the fused C call holds then, copied into Newton's input state (the C trajectory goes on from its own
float64 state, unchanged).

The manager does not see the scene's articulations: an env binds them (:func:`implicit_telemetry` per articulation,
:meth:`TelemetryRefresh.bind`); redline's envs do it when they are built (``RedlineEnvMixin``, and
:func:`redline.envs.simulator.isaaclab_env` for any task).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def implicit_telemetry(articulation: Any) -> Callable[[], None] | None:
    """A call that recomputes ``articulation``'s implicit drives' computed and applied torque from its current
    joint state and targets (Isaac Lab's one fused kernel for them); None if it has no implicit drive."""
    collection: Any = getattr(articulation, "actuators", None)
    if getattr(collection, "_implicit_executor", None) is None:
        return None

    def refresh() -> None:
        executor = collection._implicit_executor  # looked up per call: Isaac Lab may rebuild it
        if executor is not None:
            executor.launch(collection)

    return refresh


class TelemetryRefresh:
    """When, within an env step the manager owns, the telemetry is refreshed, and what refreshes it."""

    def __init__(self) -> None:
        self.refreshers: dict[int, Callable[[], None]] = {}
        """The bound articulations' refreshes, by the articulation's ``id`` (binding twice keeps one)."""
        self.at: int | None = None
        """C steps into the current env step before which to refresh; None: outside an owned env step."""
        self.taken = 0
        """C steps taken so far in the current env step."""
        self.before: Callable[[], None] | None = None
        """The manager's own work before the refreshes (Isaac Lab's post-step republish of user-ordered state)."""

    def bind(self, articulation: Any) -> None:
        """Refresh ``articulation``'s implicit drives' telemetry in owned env steps (a no-op without them)."""
        refresh = implicit_telemetry(articulation)
        if refresh is not None:
            self.refreshers[id(articulation)] = refresh

    def begin(self, decimation: int, num_substeps: int, before: Callable[[], None] | None) -> None:
        """An owned env step of ``decimation`` physics steps of ``num_substeps`` C steps each starts: refresh before
        its last physics step (none with ``decimation`` 1: the env's own write already was from that state)."""
        self.at = (decimation - 1) * num_substeps if decimation > 1 and self.refreshers else None
        self.taken = 0
        self.before = before

    def end(self) -> None:
        """The owned env step is over."""
        self.at = None
        self.before = None

    def due(self) -> bool:
        """Whether the next C step is the one to refresh before."""
        return self.at is not None and self.taken == self.at

    def refresh(self) -> None:
        """Recompute the bound articulations' telemetry from Newton's current state."""
        if self.before is not None:
            self.before()
        for refresh in self.refreshers.values():
            refresh()


def bind_actuator_telemetry(env: Any) -> None:
    """Have ``physics=mujoco_cpu`` refresh the implicit drives' telemetry of the articulations of ``env`` (an Isaac
    Lab env, unwrapped) in the env steps it owns; a no-op on any other physics and when bound already."""
    solver = getattr(getattr(getattr(env, "sim", None), "physics_manager", None), "_solver", None)
    telemetry = getattr(solver, "telemetry", None)
    if not isinstance(telemetry, TelemetryRefresh):
        return
    for articulation in getattr(getattr(env, "scene", None), "articulations", {}).values():
        telemetry.bind(articulation)

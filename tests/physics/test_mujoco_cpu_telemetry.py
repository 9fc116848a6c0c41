"""When a fused env step refreshes the implicit drives' torque telemetry (no simulator: plain pytest)."""

from __future__ import annotations

from types import SimpleNamespace

from redline.physics.mujoco_cpu_telemetry import TelemetryRefresh, bind_actuator_telemetry, implicit_telemetry


class Executor:
    """Stands in for Isaac Lab's implicit-actuator executor: counts its launches."""

    def __init__(self) -> None:
        self.launches = 0

    def launch(self, collection: object) -> None:
        self.launches += 1


def _articulation(executor: Executor | None) -> SimpleNamespace:
    return SimpleNamespace(actuators=SimpleNamespace(_implicit_executor=executor))


def _due_steps(telemetry: TelemetryRefresh, decimation: int, num_substeps: int) -> list[int]:
    """The C steps of one owned env step before which the telemetry is refreshed (as the solver's loop asks)."""
    telemetry.begin(decimation, num_substeps, None)
    due = []
    for step in range(decimation * num_substeps):
        if telemetry.due():
            telemetry.refresh()
            due.append(step)
        telemetry.taken += 1
    telemetry.end()
    return due


def test_refreshed_once_before_the_last_physics_step() -> None:
    executor = Executor()
    telemetry = TelemetryRefresh()
    telemetry.bind(_articulation(executor))
    telemetry.bind(_articulation(None))  # no implicit drive: nothing to refresh
    assert len(telemetry.refreshers) == 1
    assert _due_steps(telemetry, 4, 1) == [3]
    assert _due_steps(telemetry, 4, 2) == [6]  # a physics step of two C steps: before the last two
    assert _due_steps(telemetry, 1, 3) == []  # one physics step: the env's own write was from its start state
    assert executor.launches == 2
    assert not telemetry.due()  # outside an owned env step


def test_nothing_due_without_a_bound_articulation_and_binding_twice_keeps_one() -> None:
    telemetry = TelemetryRefresh()
    assert _due_steps(telemetry, 4, 1) == []
    articulation = _articulation(Executor())
    telemetry.bind(articulation)
    telemetry.bind(articulation)
    assert len(telemetry.refreshers) == 1


def test_the_managers_work_runs_before_the_refreshes() -> None:
    order: list[str] = []
    telemetry = TelemetryRefresh()
    telemetry.refreshers[0] = lambda: order.append("telemetry")
    telemetry.begin(2, 1, lambda: order.append("republish"))
    telemetry.refresh()
    assert order == ["republish", "telemetry"]
    assert implicit_telemetry(SimpleNamespace()) is None  # no actuator collection at all


def test_an_env_binds_its_articulations_only_on_a_solver_that_refreshes() -> None:
    telemetry = TelemetryRefresh()
    scene = SimpleNamespace(articulations={"robot": _articulation(Executor())})
    bind_actuator_telemetry(SimpleNamespace(sim=SimpleNamespace(physics_manager=SimpleNamespace(_solver=None))))
    other = SimpleNamespace(_solver=SimpleNamespace())  # another physics: its solver has no telemetry
    bind_actuator_telemetry(SimpleNamespace(sim=SimpleNamespace(physics_manager=other), scene=scene))
    manager = SimpleNamespace(_solver=SimpleNamespace(telemetry=telemetry))
    bind_actuator_telemetry(SimpleNamespace(sim=SimpleNamespace(physics_manager=manager), scene=scene))
    assert list(telemetry.refreshers) == [id(scene.articulations["robot"])]

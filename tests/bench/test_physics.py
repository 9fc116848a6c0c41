"""``redline.bench.physics``'s table (the timing itself runs the simulator: ``python -m redline.bench.physics``)."""

from __future__ import annotations

from redline.bench.physics import PhysicsBenchRow, format_rows


def test_ratios_are_against_mujoco_warp_of_the_same_task() -> None:
    rows = [
        PhysicsBenchRow("A", "mujoco_warp", 256, 1000.0, 0.7),
        PhysicsBenchRow("A", "mujoco_c x2", 256, 3000.0, 0.3),
        PhysicsBenchRow("B", "mujoco_warp", 256, 50.0, 0.9),
        PhysicsBenchRow("B", "mujoco_c x1", 256, 75.0, 0.5),
    ]
    lines = format_rows(rows).splitlines()
    assert lines[3] == "| A | 256 | mujoco_c x2 | 3,000 | 3.00x | 30 % |"
    assert lines[5] == "| B | 256 | mujoco_c x1 | 75 | 1.50x | 50 % |"

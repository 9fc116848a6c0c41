"""The env layouts the owners of walked state declare (issue 44 item 1): Isaac Lab's real observation history and
the shapes of Newton's contact sensor views, without a simulator."""

from __future__ import annotations

import torch

from redline.run_state import layout as lay
from redline.run_state.env_state import declared_layout


def test_an_observation_history_is_time_major_unless_it_stacks_on_a_later_axis() -> None:
    from isaaclab.utils.buffers import CircularBuffer  # Isaac Lab's own class: its attributes are what is read

    for stack_dim, expected in ((None, "axis:1"), (1, "env")):
        history = CircularBuffer(
            max_len=3, batch_size=5, device="cpu", **({} if stack_dim is None else {"stack_dim": stack_dim})
        )
        history.append(torch.rand(5, 2))
        assert history._buffer.shape[1 if stack_dim is None else 0] == 5
        layout = declared_layout(
            "observation_manager/_group_obs_term_history_buffer/policy/0/_buffer",
            history,
            "_buffer",
            history._buffer,
            5,
        )
        assert layout == expected
        assert lay.check_layout(layout, history._buffer, 5)


class _ContactSensor:
    """The attribute Newton's contact sensor holds: its bodies per env."""

    def __init__(self, sensors: int) -> None:
        self._num_sensors = sensors


def test_a_sensors_flat_view_is_env_major_with_its_bodies_per_env() -> None:
    view = torch.zeros(5 * 13, 3)  # the Go1's 13 bodies in 5 envs
    assert (
        declared_layout(
            "sensor/contact_forces/_newton_total_force_view", _ContactSensor(13), "_newton_total_force_view", view, 5
        )
        == "env:13"
    )
    assert declared_layout("sensor/contact_forces/x", _ContactSensor(13), "x", torch.zeros(5, 13), 5) is None  # leading
    origins = torch.zeros(5, 5, 3)  # a 5 x 5 terrain with 5 envs: the shape alone would say per env
    assert declared_layout("terrain/terrain_origins", object(), "terrain_origins", origins, 5) == lay.SHARED
    assert (
        declared_layout(
            "event_manager/_mode_term_cfgs/startup/0/func/_impl/_shape_indices",
            object(),
            "_shape_indices",
            torch.arange(30),
            5,
        )
        == lay.LOCAL
    )

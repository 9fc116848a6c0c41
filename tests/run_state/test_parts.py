"""The run state in checkpoints without the simulator: parts per rank, regrouped by global env id onto another
process count, and the drop-in class's hooks for rsl_rl's own runner (a stand-in env with the tasks' interface)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from redline.run_state.env_state import StateMismatch
from redline.run_state.parts import RUN_STATE_KEY, RunnerEnvState, gather_run_state, regroup, restore_run_state


class _Env:
    """The tasks' ``env_state()`` interface: per-env rows, a step counter, a per-env dict, a non-per-env tensor."""

    run_state_buffers = ("actions",)

    def __init__(self, first_id: int, count: int) -> None:
        self.num_envs = count
        ids = torch.arange(first_id, first_id + count, dtype=torch.float32)
        self.state: dict[str, Any] = {
            "sim": {"qpos": ids.reshape(-1, 1) * torch.ones(count, 3)},
            "env": {"episode_length_buf": ids.long(), "obs_buf": {"policy": ids.reshape(-1, 1) + 0.5}},
            "counters": {"common_step_counter": 7 + first_id},
            "gains": torch.tensor([1.0, 2.0, 3.0]),  # not per env
            "layout": {"gains": "shared"},  # declared by its owner: the shape cannot tell
        }
        self.loaded: dict[str, Any] | None = None

    @property
    def unwrapped(self) -> _Env:
        return self

    def env_state(self) -> dict[str, Any]:
        return {**self.state, "layout": dict(self.state["layout"])}

    def load_env_state(self, state: dict[str, Any]) -> None:
        self.loaded = state

    def get_observations(self) -> torch.Tensor:
        return torch.full((self.num_envs, 1), 9.0)


class _Comm:
    """One rank of a group whose gather returns just this rank's part (as rank 0 of a group of one would)."""

    def __init__(self, rank: int) -> None:
        self.rank = rank

    def gather_objects(self, obj: Any) -> list[Any]:
        return [obj]


def _live(env: _Env) -> dict[str, Any]:
    state = env.env_state()
    state.pop("layout")
    return state


def test_two_ranks_parts_regroup_onto_one_process_by_global_env_id() -> None:
    parts = [gather_run_state(_Env(r * 4, 4), None, _Comm(r))["parts"][0] for r in range(2)]  # type: ignore[index]
    assert [p["global_ids"].tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    one = _Env(0, 8)
    part = regroup(parts, torch.arange(8), {"env": _live(one)})
    assert part["env"]["sim"]["qpos"][:, 0].tolist() == list(range(8))  # every env's row from the rank that held it
    assert part["env"]["env"]["episode_length_buf"].tolist() == list(range(8))
    assert part["env"]["env"]["obs_buf"]["policy"].reshape(-1).tolist() == [i + 0.5 for i in range(8)]
    assert part["env"]["counters"] == {"common_step_counter": 7}  # rank 0's
    assert part["env"]["gains"].tolist() == [1.0, 2.0, 3.0]
    back = regroup(
        [{**part, "global_ids": torch.arange(8), "layout": parts[0]["layout"]}],
        torch.arange(4, 8),
        {"env": _live(_Env(4, 4))},
    )  # and onto rank 1 of two again
    assert torch.equal(back["env"]["sim"]["qpos"], parts[1]["env"]["sim"]["qpos"])


def test_under_rsl_rls_runner_the_env_state_is_saved_and_restored_at_the_first_action() -> None:
    saved: dict[str, Any] = {}
    RunnerEnvState(_Env(0, 4)).save_into(saved)
    assert saved[RUN_STATE_KEY]["parts"][0]["global_ids"].tolist() == [0, 1, 2, 3]
    assert "episodes" not in saved[RUN_STATE_KEY]["parts"][0]  # rsl_rl's runner keeps its own statistics
    env = _Env(0, 4)
    state = RunnerEnvState(env)
    state.load(saved)
    assert env.loaded is None  # held: play and export load checkpoints too, and never act
    fresh = torch.zeros(4, 1)
    assert torch.equal(state.before_act(fresh), torch.full((4, 1), 9.0))  # the restored env's observation
    assert env.loaded is not None and torch.equal(env.loaded["sim"]["qpos"], _Env(0, 4).state["sim"]["qpos"])
    assert state.before_act(fresh) is fresh  # once
    nothing: dict[str, Any] = {}
    RunnerEnvState(_Env(0, 4), enabled=False).save_into(nothing)  # rsl_rl's multi-GPU mode
    plain = type("Plain", (), {"num_envs": 4})()  # an env that saves no state
    RunnerEnvState(plain).save_into(nothing)
    assert nothing == {}


class _SensorEnv(_Env):
    """A stand-in with a contact sensor's flat ``(num_envs * 2, 3)`` view, declared by its owner as the tasks'
    sensors declare theirs, and a history of ``(2, num_envs)`` steps, time-major."""

    def __init__(self, first_id: int, count: int, declare: bool = True) -> None:
        super().__init__(first_id, count)
        ids = torch.arange(first_id, first_id + count, dtype=torch.float32)
        self.state["scene"] = {"forces": ids.repeat_interleave(2)[:, None].expand(-1, 3).clone()}
        self.state["history"] = torch.stack((ids, ids + 100))
        if declare:
            self.state["layout"] = {**self.state["layout"], "scene/forces": "env:2", "history": "axis:1"}


def _ranks(env_class: type, count: int, **kwargs: Any) -> dict[str, Any]:
    parts = [gather_run_state(env_class(r * count, count, **kwargs), None, _Comm(r))["parts"][0] for r in range(2)]  # type: ignore[index]
    return {RUN_STATE_KEY: {"parts": parts}}


def test_flat_and_time_major_values_regroup_onto_another_process_count() -> None:
    """Two ranks x 3 envs continued on one process x 6 (Go1's contact sensor made main's regroup take rank 0's rows
    for the whole flat array: 'does not fit task')."""
    one = _SensorEnv(0, 6)
    assert restore_run_state(_ranks(_SensorEnv, 3), one, None, _Comm(0))
    assert one.loaded is not None
    assert torch.equal(one.loaded["scene"]["forces"], _SensorEnv(0, 6).state["scene"]["forces"])
    assert torch.equal(one.loaded["history"], _SensorEnv(0, 6).state["history"])


def test_a_value_of_unknown_layout_is_restored_only_onto_its_own_layout(capsys: pytest.CaptureFixture) -> None:
    checkpoint = _ranks(_SensorEnv, 3, declare=False)  # the flat view undeclared: its shape cannot tell
    assert checkpoint[RUN_STATE_KEY]["parts"][0]["layout"]["env/scene/forces"] == "unknown"
    one = _SensorEnv(0, 6, declare=False)
    assert not restore_run_state(checkpoint, one, None, _Comm(0))
    assert one.loaded is None  # nothing guessed
    assert "no known env layout for env/history, env/scene/forces" in capsys.readouterr().err
    same = _SensorEnv(3, 3, declare=False)  # rank 1 of two again: its own part, whole
    assert restore_run_state(checkpoint, same, None, _Comm(1))
    assert same.loaded is not None and torch.equal(same.loaded["scene"]["forces"], same.state["scene"]["forces"])


def test_each_ranks_generators_come_back_on_its_own_layout_only() -> None:
    noise = torch.Generator().manual_seed(5)
    torch.manual_seed(11)
    checkpoint = {RUN_STATE_KEY: gather_run_state(_Env(0, 4), None, None, {"noise": noise})}
    expected = (torch.rand(3), torch.rand(3, generator=noise))  # what the run never interrupted draws next
    torch.manual_seed(0)
    noise.manual_seed(0)
    assert restore_run_state(checkpoint, _Env(0, 4), None, None, {"noise": noise})
    assert torch.equal(torch.rand(3), expected[0]) and torch.equal(torch.rand(3, generator=noise), expected[1])
    noise.manual_seed(0)
    fresh = torch.rand(3, generator=torch.Generator().manual_seed(0))
    assert restore_run_state(_ranks(_Env, 2), _Env(0, 4), None, _Comm(0), {"noise": noise})  # regrouped
    assert torch.equal(torch.rand(3, generator=noise), fresh)  # a rank's generator is not an env's: left as it is


def test_a_state_that_does_not_fit_the_env_warns_and_leaves_fresh_resets(capsys: pytest.CaptureFixture) -> None:
    class Mismatched(_Env):
        def load_env_state(self, state: dict[str, Any]) -> None:
            raise StateMismatch("it holds managers/x, which this env lacks")

    checkpoint = {RUN_STATE_KEY: gather_run_state(_Env(0, 4), None)}
    assert not restore_run_state(checkpoint, Mismatched(0, 4), None)
    assert "does not fit this env, not restored (it holds managers/x" in capsys.readouterr().err


class _Recurrent(torch.nn.Module):
    """rsl_rl's ``RNNModel`` interface for hidden states: ``get_hidden_state``, ``reset(hidden_state=...)``."""

    is_recurrent = True

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.hidden: Any = None

    def get_hidden_state(self) -> Any:
        return self.hidden

    def reset(self, dones: Any = None, hidden_state: Any = None) -> None:
        self.hidden = hidden_state


def test_under_rsl_rls_runner_recurrent_hidden_states_and_generators_continue() -> None:
    actor, critic = _Recurrent(), _Recurrent()
    actor.hidden = (torch.rand(1, 4, 8), torch.rand(1, 4, 8))  # an LSTM's pair
    critic.hidden = torch.rand(1, 4, 8)  # a GRU's
    saved: dict[str, Any] = {}
    RunnerEnvState(_Env(0, 4), models={"actor": actor, "critic": critic}).save_into(saved)
    expected = torch.rand(3)
    assert saved[RUN_STATE_KEY]["parts"][0]["layout"]["memory/actor/1"] == "axis:1"
    again = {"actor": _Recurrent(), "critic": _Recurrent()}
    state = RunnerEnvState(_Env(0, 4), models=again)
    state.load(saved)
    torch.manual_seed(3)
    state.before_act(torch.zeros(4, 1))
    assert torch.equal(torch.rand(3), expected)  # torch's global generator, as at the save
    assert all(torch.equal(a, b) for a, b in zip(again["actor"].hidden, actor.hidden, strict=True))
    assert torch.equal(again["critic"].hidden, critic.hidden)

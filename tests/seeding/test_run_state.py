"""The run state in checkpoints without the simulator: parts per rank, regrouped by global env id onto another
process count, and the drop-in class's hooks for rsl_rl's own runner (a stand-in env with the tasks' interface)."""

from __future__ import annotations

from typing import Any

import torch

from redline.seeding.run_state import RUN_STATE_KEY, RunnerEnvState, gather_run_state, regroup


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
        }
        self.loaded: dict[str, Any] | None = None

    @property
    def unwrapped(self) -> _Env:
        return self

    def env_state(self) -> dict[str, Any]:
        return self.state

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


def test_two_ranks_parts_regroup_onto_one_process_by_global_env_id() -> None:
    parts = [gather_run_state(_Env(r * 4, 4), None, _Comm(r))["parts"][0] for r in range(2)]  # type: ignore[index]
    assert [p["global_ids"].tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    one = _Env(0, 8)
    part = regroup(parts, torch.arange(8), {"env": one.env_state()})
    assert part["env"]["sim"]["qpos"][:, 0].tolist() == list(range(8))  # every env's row from the rank that held it
    assert part["env"]["env"]["episode_length_buf"].tolist() == list(range(8))
    assert part["env"]["env"]["obs_buf"]["policy"].reshape(-1).tolist() == [i + 0.5 for i in range(8)]
    assert part["env"]["counters"] == {"common_step_counter": 7}  # rank 0's
    assert part["env"]["gains"].tolist() == [1.0, 2.0, 3.0]
    back = regroup(
        [{**part, "global_ids": torch.arange(8)}], torch.arange(4, 8), {"env": _Env(4, 4).env_state()}
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

"""``redline play``'s parts that need no simulator: the run's saved agent config over the task's."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from isaaclab.utils import configclass

from redline.commands.play import use_run_agent_cfg


@configclass
class _Model:
    hidden_dims: list[int] = [256, 256]
    activation: str = "elu"


@configclass
class _Agent:
    experiment_name: str = "task"
    actor: _Model = _Model()
    critic: _Model = _Model()


def _run(tmp_path: Path, saved: object) -> Path:
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "agent.yaml").write_text(yaml.dump(saved))
    return tmp_path / "model_3.pt"


def test_the_runs_networks_replace_the_tasks(tmp_path: Path) -> None:
    agent = _Agent()
    saved = {"experiment_name": "other", "actor": {"hidden_dims": [64, 64], "activation": "elu"}, "critic": {}}
    assert use_run_agent_cfg(agent, _run(tmp_path, saved))
    assert agent.actor.hidden_dims == [64, 64] and agent.critic.hidden_dims == [256, 256]
    assert agent.experiment_name == "task"  # only the parts that shape the networks


def test_without_a_saved_config_or_with_a_foreign_one_the_tasks_stands(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    agent = _Agent()
    assert not use_run_agent_cfg(agent, tmp_path / "model_3.pt")  # a checkpoint copied out of its run
    foreign = {"actor": {"hidden_dims": [8]}, "critic": {"widths": [8]}}  # the actor fits, the critic does not
    assert not use_run_agent_cfg(agent, _run(tmp_path, foreign))
    (tmp_path / "params" / "agent.yaml").write_text("actor: {hidden_dims: [8")  # a cut file
    assert not use_run_agent_cfg(agent, tmp_path / "model_3.pt")
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 2 and all(
        line.startswith("[redline] warning: ") and "agent.yaml ignored" in line for line in out
    )
    assert agent.actor.hidden_dims == [256, 256]

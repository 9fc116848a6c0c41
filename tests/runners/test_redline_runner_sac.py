"""The redline runner with the off-policy learner (``redline train --algorithm sac``), simulator-free: the same loop,
records and checkpoints as PPO's, and a resumed run that ends bit for bit as the uninterrupted one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from redline.bench.shapes import negation_mirror
from redline.commands.report import report
from redline.errors import UserError
from redline.learning.sac import SAC
from redline.learning.sac.sac_checkpoint import regroup_parts, whole_part
from redline.outputs.checkpoints import load_checkpoint
from redline.runners.redline_runner import SAC_RANKS_KEY, RedlineRunner
from tests.learning.sac.sac_support import ReachEnv, env_noise, tiny_cfg


def _runner(run_dir: Path, num_envs: int = 8) -> RedlineRunner:
    return RedlineRunner(ReachEnv(num_envs), tiny_cfg(), run_dir, "cpu", seed=3, save_interval=2)


def test_sac_records_and_checkpoints(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    assert isinstance(runner.alg, SAC)
    runner.learn(3)
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [0, 1, 2]
    last = records[-1]
    assert last["env_steps"] == 3 * 2 * 8  # iterations x num_steps_per_env x envs
    for key in ("sps", "collect_s", "learn_s", "env_s", "update_s", "action_std", "alpha", "mean_episode_length"):
        assert key in last, key
    assert last["capture"] == "eager" and last["precision"] == "fp32"  # capture auto: eager without CUDA
    assert all(r["learner_gflops"] > 0 for r in records)  # SAC's FLOP model (no MFU: no GPU peak on the CPU)
    assert last["bottleneck"] == "learner-bound"  # a trivial env: the update is nearly all of an iteration
    assert "agent.algorithm.updates_per_step" in last["next_action"] or "SAC's" in last["next_action"]  # bf16 CPUs
    assert "learner/mean_reward" in last  # the learner's per-step reward does not replace the episodes' mean
    ckpt = load_checkpoint(tmp_path / "model_2.pt")
    assert ckpt["algorithm"] == "sac" and ckpt["iter"] == 2 and "replay" in ckpt["sac"]
    text, paths = report([tmp_path], tmp_path / "report")  # redline report reads the run
    assert "iterations 3, env steps 48," in text
    assert all(p.is_file() for p in paths)


def test_sac_resume_is_bitwise(tmp_path: Path) -> None:
    straight = _runner(tmp_path / "straight")
    straight.learn(4)
    cut = _runner(tmp_path / "cut")
    cut.learn(2)  # saves model_1 (the last)
    resumed = _runner(tmp_path / "resumed")
    resumed.env = cut.env  # the env continues where it was (a redline task restores it from the run state)
    resumed.tracker = cut.tracker
    resumed.load(load_checkpoint(tmp_path / "cut" / "model_1.pt"))
    resumed.learn(2)
    ends = [load_checkpoint(p / "model_3.pt") for p in (tmp_path / "straight", tmp_path / "resumed")]
    for part in ("actor_state_dict", "critic_state_dict"):
        assert all(torch.equal(ends[0][part][k], ends[1][part][k]) for k in ends[0][part])
    assert torch.equal(ends[0]["sac"]["log_alpha"], ends[1]["sac"]["log_alpha"])


def test_a_checkpoint_of_another_rank_count_resumes(tmp_path: Path) -> None:
    """A checkpoint holding 2 ranks' parts (``sac_ranks``: each rank's replay, 4 envs each) resumes on one process
    of 8 envs (was refused: 'resume it on 2 ranks'): the replay is regrouped by global env id, and with exploration
    noise drawn per global env the run ends bit for bit as the uninterrupted one. The parts are cut here from a
    one-process checkpoint; real 2-rank runs resumed on 1 and back are test_train_distributed_sim's (extended)."""

    def runner(name: str, env: ReachEnv | None = None) -> RedlineRunner:
        made = _runner(tmp_path / name)
        made.env = env or made.env
        made.alg.action_noise = env_noise(made.env)  # a pure function of (global env, step): partition-invariant
        return made

    straight = runner("straight")
    straight.learn(4)
    cut = runner("cut")
    cut.learn(2)
    checkpoint = load_checkpoint(tmp_path / "cut" / "model_1.pt")
    whole = whole_part(checkpoint)
    checkpoint[SAC_RANKS_KEY] = [regroup_parts([whole], offset, 4, 8) for offset in (0, 4)]
    checkpoint["sac"]["replay"]["data"] = None  # a multi-rank checkpoint's replay is its parts' only
    for part in checkpoint[SAC_RANKS_KEY]:
        part["noise_generator"] = torch.Generator().get_state()  # a rank's own: not these envs'
    resumed = runner("resumed", cut.env)
    resumed.tracker = cut.tracker
    resumed.load(checkpoint)
    assert torch.equal(resumed.alg.replay.data["obs", "policy"], cut.alg.replay.data["obs", "policy"])
    resumed.learn(2)
    ends = [load_checkpoint(p / "model_3.pt") for p in (tmp_path / "straight", tmp_path / "resumed")]
    for part in ("actor_state_dict", "critic_state_dict"):
        assert all(torch.equal(ends[0][part][k], ends[1][part][k]) for k in ends[0][part])
    assert torch.equal(ends[0]["sac"]["replay"]["data"]["rewards"], ends[1]["sac"]["replay"]["data"]["rewards"])


def test_a_checkpoint_of_other_global_envs_is_refused(tmp_path: Path) -> None:
    cut = _runner(tmp_path / "cut")
    cut.learn(1)
    with pytest.raises(UserError, match=r"^--resume: this SAC checkpoint does not fit this run \(it holds the replay "):
        _runner(tmp_path / "other", num_envs=4).load(load_checkpoint(tmp_path / "cut" / "model_0.pt"))


def test_the_agent_s_symmetry_cfg_reaches_the_learner_as_through_rsl_rl_s_runner(tmp_path: Path) -> None:
    """``redline train --algorithm sac`` reads the agent config's ``algorithm.symmetry_cfg`` as the stock runner's
    drop-in does (not silently dropped); a mirror loss is refused in one line."""
    symmetry = {"use_data_augmentation": True, "data_augmentation_func": "redline.bench.shapes:negation_mirror"}
    env = ReachEnv(8)
    train_cfg = {"algorithm": {"symmetry_cfg": symmetry}}
    runner = RedlineRunner(env, tiny_cfg(), tmp_path, "cpu", seed=3, train_cfg=train_cfg)
    assert runner.alg.symmetry is negation_mirror and runner.alg.symmetry_env is env
    assert _runner(tmp_path / "plain").alg.symmetry is None
    with pytest.raises(UserError, match=r"^algorithm\.symmetry_cfg\.use_mirror_loss: not taken"):
        cfg = {"algorithm": {"symmetry_cfg": symmetry | {"use_mirror_loss": True}}}
        RedlineRunner(ReachEnv(8), tiny_cfg(), tmp_path / "loss", "cpu", seed=3, train_cfg=cfg)

    def wrong_robot(env, obs=None, actions=None):  # type: ignore[no-untyped-def]
        raise ValueError("symmetry: a policy observation of 2 entries; expected 12 + 3 x 12")

    cfg = {"algorithm": {"symmetry_cfg": symmetry | {"data_augmentation_func": wrong_robot}}}
    with pytest.raises(
        UserError,
        match=r"^algorithm\.symmetry_cfg\.data_augmentation_func: wrong_robot cannot mirror "
        r"this task's observations \(ValueError: symmetry: a policy observation of 2 entries",
    ):
        RedlineRunner(ReachEnv(8), tiny_cfg(), tmp_path / "wrong", "cpu", seed=3, train_cfg=cfg)
    for func in ("nope.module:mirror", "redline.bench.shapes:no_such_mirror", None):
        cfg = {"algorithm": {"symmetry_cfg": symmetry | {"data_augmentation_func": func}}}
        with pytest.raises(UserError, match=r"^algorithm\.symmetry_cfg\.data_augmentation_func: expected a function"):
            RedlineRunner(ReachEnv(8), tiny_cfg(), tmp_path / "missing", "cpu", seed=3, train_cfg=cfg)

"""The redline learner's training loop on a synthetic env: metrics, checkpoints rsl_rl can load, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from redline.bench.shapes import DummyVecEnv, rsl_rl_cfg
from redline.learning import PPOConfig
from redline.learning.config import ModelConfig
from redline.outputs.checkpoints import load_checkpoint
from redline.runners.redline_runner import RedlineRunner
from tests.learning.learning_support import HostReads, small_cfg
from tests.runners.test_writers import tensorboard_steps

# the learner benchmark's rsl_rl config (rsl_rl's legged PPO values), at a tiny size
RSL_RL_CFG = rsl_rl_cfg({"steps": 8, "hidden": [16, 16]}, bf16=False)


def _runner(tmp_path: Path | None, seed: int = 0) -> RedlineRunner:
    torch.manual_seed(seed)
    cfg = PPOConfig.from_rsl_rl(RSL_RL_CFG, precision="fp32")
    return RedlineRunner(DummyVecEnv(num_envs=16, seed=seed), cfg, tmp_path, "cpu", seed=seed, save_interval=2)


def test_metrics_and_checkpoints(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    runner.learn(3)
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [0, 1, 2]
    for key in (
        "sps",
        "collect_s",
        "learn_s",
        "update_s",
        "lr",
        "kl",
        "value_loss",
        "surrogate_loss",
        "entropy",
        "skipped_steps",
        "mean_reward",
        "mean_episode_length",
    ):
        assert key in records[-1], key
    assert records[-1]["skipped_steps"] == 0 and records[-1]["env_steps"] == 3 * 8 * 16
    split = {k: records[-1][k] for k in ("env_s", "inference_s", "gae_s", "update_s", "logging_s")}
    assert all(v >= 0 for v in split.values()) and split["update_s"] > 0 and split["env_s"] > 0
    assert records[-1]["collect_s"] == pytest.approx(split["env_s"] + split["inference_s"] + split["gae_s"])
    assert records[-1]["learner_gflops"] > 0 and records[-1]["mfu"] is None  # no peak known for a CPU
    assert records[-1]["gpu_util"] is None and records[-1]["gpu_mem_gb"] is None  # no GPU: the NVML sampler idles
    assert records[-1]["bottleneck"] in {"env-bound", "learner-bound", "host-overhead-bound"}
    assert records[-1]["next_action"]
    assert sorted(p.name for p in tmp_path.glob("model_*.pt")) == ["model_0.pt", "model_2.pt"]
    ckpt = load_checkpoint(tmp_path / "model_2.pt")  # weights_only=True
    assert ckpt["iter"] == 2


def test_rsl_rl_runner_loads_a_redline_checkpoint(tmp_path: Path) -> None:
    """What Isaac Lab's stock ``isaaclab play --rl_library rsl_rl`` does with a checkpoint."""
    from rsl_rl.runners import OnPolicyRunner

    runner = _runner(tmp_path)
    runner.learn(1)
    env = DummyVecEnv(num_envs=16)
    cfg = {**RSL_RL_CFG, "algorithm": dict(RSL_RL_CFG["algorithm"]), "save_interval": 1, "max_iterations": 1}
    stock = OnPolicyRunner(env, cfg, log_dir=None, device="cpu")
    stock.load(str(tmp_path / "model_0.pt"))
    obs = env.get_observations()
    expected = runner.alg.act_inference(obs)
    assert torch.allclose(stock.get_inference_policy()(obs), expected, atol=1e-6)


def test_resume_continues_at_the_next_iteration(tmp_path: Path) -> None:
    first = _runner(tmp_path / "a")
    first.learn(2)  # saves model_0 and model_1 (the last)
    resumed = _runner(tmp_path / "b", seed=1)
    saved = load_checkpoint(tmp_path / "a" / "model_1.pt")
    resumed.load(saved)
    for name, value in resumed.alg.actor.state_dict().items():
        assert torch.equal(value, saved["actor_state_dict"][name])
    assert float(resumed.alg.learning_rate) == float(first.alg.learning_rate)
    resumed.learn(1)
    assert (tmp_path / "b" / "model_2.pt").is_file()  # continues at k + 1 (rsl_rl restarts at k)
    record = json.loads((tmp_path / "b" / "metrics.jsonl").read_text().splitlines()[0])
    assert record["iteration"] == 2 and record["env_steps"] == 3 * 8 * 16  # the resumed run's steps continue
    assert record["wall_time_s"] > saved["wall_time_s"] > 0


HOT_PATH_READS = {
    ("tolist", "redline.learning.guard:end_iteration"): 1,  # the NaN guard's counters (raises on a streak)
    ("tolist", "redline.runners.episodes:read"): 1,  # the finished episodes' statistics, batched
    ("tolist", "redline.runners.iteration_logger:record"): 1,  # the iteration's metrics record, batched
}
"""The host reads of one training iteration, each named: three batched ``tolist`` calls, nothing per env step or
per minibatch (README: "three reads per iteration")."""


def test_training_reads_exactly_its_budget_of_device_values(tmp_path: Path) -> None:
    """``redline train``'s own loop (rollout, episode statistics, update, record) reads device values on the host
    exactly :data:`HOT_PATH_READS` times per iteration: any new ``.item()``, ``float()``, ``bool()``, ``.tolist()``,
    ``.cpu()`` or ``.numpy()`` in the hot path fails it. (Writing a checkpoint reads the learning rate: it is not in
    the hot path, and is left out here.)"""
    cfg = small_cfg(
        micro_batches=2,
        normalize_advantage_per_mini_batch=True,
        value_normalization=True,
        actor=ModelConfig(hidden_dims=(8,), obs_normalization=True),
    )
    runner = RedlineRunner(DummyVecEnv(num_envs=16, seed=1), cfg, tmp_path, "cpu", seed=0, save_interval=1)
    runner.learn(1)  # warm-up
    saved: list[Path | None] = []
    runner.save = saved.append  # type: ignore[method-assign]
    with HostReads() as reads:
        runner.learn(2)
    assert saved == [tmp_path / "model_1.pt", tmp_path / "model_2.pt"]
    assert dict(reads.sites) == {site: 2 * n for site, n in HOT_PATH_READS.items()}
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 3


def test_model_config_reads_rsl_rl_dims() -> None:
    cfg = PPOConfig.from_rsl_rl(RSL_RL_CFG)
    assert cfg.actor == ModelConfig(hidden_dims=(16, 16), activation="elu", obs_groups=("policy",), init_std=1.0)
    assert cfg.num_steps_per_env == 8 and cfg.num_mini_batches == 4 and cfg.num_learning_epochs == 5


def test_a_continued_run_drops_the_events_logged_after_its_checkpoint(tmp_path: Path) -> None:
    """TensorBoard shows each iteration once: the events of iteration 3, logged by an attempt killed before its
    checkpoint, are purged when the run continues from model_2 and does iteration 3 again."""
    _runner(tmp_path).learn(4)  # model_0, model_2, model_3
    (tmp_path / "model_3.pt").unlink()  # as if killed before it was saved
    continued = _runner(tmp_path)
    continued.load(load_checkpoint(tmp_path / "model_2.pt"))
    continued.learn(1)
    steps = tensorboard_steps(tmp_path)
    assert steps["Loss/value"] == [0, 1, 2, 3], steps
    assert all(s == sorted(set(s)) for s in steps.values()), steps

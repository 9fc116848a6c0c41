"""A run's closing lines (``redline.outputs.summary``): rounded reward, best, target, checkpoint and play command."""

from __future__ import annotations

from pathlib import Path

from redline.outputs.summary import latest_checkpoint, summary_lines


def _records() -> list[dict]:
    rewards = [None, 1.23456, 4.91234, 4.987654, 4.95]
    return [
        {"iteration": i, "env_steps": 4096 * (i + 1) * 300, "wall_time_s": 10.0 * (i + 1), "mean_reward": r,
         "mean_episode_length": 299.5}
        for i, r in enumerate(rewards)
    ]  # fmt: skip


def test_the_closing_lines_round_and_say_best_target_checkpoint_and_play(tmp_path: Path) -> None:
    for it in (2, 10, 4):
        (tmp_path / f"model_{it}.pt").write_bytes(b"")
    lines = summary_lines("Redline-Cartpole", tmp_path, _records(), 41.234)
    assert lines == [
        "done in 41.2 s: 5 iterations, 6.14 M env steps; mean reward 4.95 (best 4.99 at iteration 3), "
        "episodes 300 steps",
        "target 4.9: first reached at iteration 2 (3.69 M env steps, 30 s)",
        f"checkpoint {tmp_path / 'model_10.pt'}; play it: redline play --task Redline-Cartpole --checkpoint {tmp_path}",
    ]


def test_a_task_without_a_target_and_a_run_without_episodes_or_checkpoints(tmp_path: Path) -> None:
    records = [{"iteration": 0, "env_steps": 950, "mean_reward": None}]
    assert summary_lines("Redline-Ant", tmp_path, records, 3.0) == [
        "done in 3.0 s: 1 iterations, 950 env steps; no episode finished yet"
    ]
    assert summary_lines("Redline-Ant", tmp_path, _records(), 3.0, target=10.0)[1] == "target 10: not reached"
    assert latest_checkpoint(tmp_path) is None


def test_a_continued_run_pairs_this_attempts_seconds_with_its_iterations(tmp_path: Path) -> None:
    """Resumed after iteration 2: 12.5 s for iterations 3 and 4, the run's 5 iterations (50 s) said apart."""
    head = summary_lines("Redline-Cartpole", tmp_path, _records(), 12.5, first_iteration=3)[0]
    assert head.startswith(
        "done in 12.5 s: 2 iterations (3 to 4); the run: 5 iterations, 6.14 M env steps, 50.0 s; mean reward 4.95"
    ), head

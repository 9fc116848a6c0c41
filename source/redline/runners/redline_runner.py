"""The redline runner: a redline learner over an Isaac Lab env, iteration by iteration, with atomic checkpoints.

The learner is :class:`~redline.learning.PPO` or the off-policy :class:`~redline.learning.sac.SAC` (chosen by its
config's type; a checkpoint names it under ``"algorithm"``). The loop is
:func:`redline.learning.rollout.collect_rollout` then the learner's ``update``; it reads nothing from the device
until the end of each iteration, where the NaN guard's counters, the episode statistics and the record are read
(one ``tolist`` each). Logging lives in :class:`~redline.runners.iteration_logger.IterationLogger`.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict

from redline.errors import UserError
from redline.learning import PPO, PPOConfig
from redline.learning.distributed import Communicator
from redline.learning.rollout import PhaseTimes, collect_rollout
from redline.learning.sac import SAC, SACConfig, sac_checkpoint
from redline.learning.sac.sac import bind_symmetry, request_final_observation
from redline.outputs.checkpoints import save_atomic
from redline.run_state.parts import RUN_STATE_KEY, gather_run_state, restore_run_state, why_not_saved
from redline.runners.episodes import EpisodeTracker, randomize_episode_lengths
from redline.runners.iteration_logger import CommStats, IterationLogger
from redline.runners.stop import SHUTDOWN, TRAINING, Stopped, StopRequest
from redline.runners.writers import Clip
from redline.seeding.plan import bind_action_noise, seed_plan
from redline.seeding.state import SEEDING_KEY, env_streams, gather_seeding_state, restore_seeding_state
from redline.telemetry.profiler import IterationProfiler


def resolve_default_groups(cfg: PPOConfig, train_cfg: dict, obs: TensorDict) -> PPOConfig:
    """``cfg`` with rsl_rl 5.5.1's rule for an observation set that ``train_cfg["obs_groups"]`` leaves out: the
    env's group of the set's name (``critic``) when it has one, else ``policy`` (rsl_rl warns in both cases).

    Raises:
        UserError: a set names a group the env does not have, or an empty set.
    """
    # heavy: rsl_rl's utils load its log writers (seconds)
    from rsl_rl.utils import resolve_obs_groups

    given = copy.deepcopy(dict(train_cfg.get("obs_groups") or {}))
    try:
        groups = resolve_obs_groups(obs, given, ["actor", "critic"])
    except ValueError as exc:
        raise UserError(f"agent.obs_groups: {exc}") from None
    models = {role: dataclasses.replace(getattr(cfg, role), obs_groups=tuple(groups[role])) for role in groups}
    return dataclasses.replace(cfg, **{k: v for k, v in models.items() if k in ("actor", "critic")})


SAC_RANKS_KEY = "sac_ranks"
"""A multi-rank SAC checkpoint's per-rank parts (:meth:`SAC.rank_state_dict`: replay, exploration generator), in
rank order; a single process's are in the learner's own state. Either resumes on any partition of the same global
envs (:meth:`RedlineRunner.load`)."""


class RedlineRunner:
    """Trains :class:`redline.learning.PPO` or :class:`redline.learning.sac.SAC` on an rsl_rl-style vec env (Isaac
    Lab's ``RslRlVecEnvWrapper``).

    Args:
        env: the wrapped env (``get_observations``, ``step``, ``num_envs``, ``num_actions``, ``device``).
        cfg: the learner's hyper-parameters: a :class:`PPOConfig` trains PPO, a :class:`SACConfig` SAC (whose
            time-outs bootstrap from the env's true final observation: the runner switches a redline task's
            ``final_observation`` on).
        run_dir: where checkpoints and ``metrics.jsonl`` go (None: no files, e.g. for play).
        device: where the learner lives.
        seed: seed of the learner's own generator (action noise, minibatch order).
        save_interval: save ``model_<it>.pt`` every this many iterations (and after the last).
        comm: data-parallel communicator (None: one process). Every rank runs a runner; only the one given a
            ``run_dir`` (rank 0) writes files, but all take part in the checkpoints' collectives.
        train_cfg: rsl_rl's runner config (``runner_cfg_dict(agent_cfg)``): its ``logger`` chooses the log writer
            (:func:`~redline.runners.writers.open_writer`); None: TensorBoard.
    """

    def __init__(
        self,
        env: Any,
        cfg: PPOConfig | SACConfig,
        run_dir: Path | None,
        device: str,
        seed: int,
        save_interval: int = 50,
        comm: Communicator | None = None,
        train_cfg: dict | None = None,
    ) -> None:
        self.env = env
        self.train_cfg = train_cfg
        if train_cfg is not None and isinstance(cfg, PPOConfig):
            cfg = resolve_default_groups(cfg, train_cfg, env.get_observations())
        if isinstance(cfg, SACConfig):
            request_final_observation(env)
        self.cfg = cfg
        self.run_dir = run_dir
        self.device = device
        self.save_interval = save_interval
        self.comm = comm if comm is not None else Communicator(device=device)
        cuda = torch.device(device).type == "cuda"
        with torch.random.fork_rng(devices=[torch.device(device)] if cuda else [], device_type="cuda"):
            torch.manual_seed(seed_plan(seed).torch)  # initial weights: the seed only, not what the env drew before
            self.alg: PPO | SAC = (
                SAC.from_env(env, cfg, device=device, seed=seed, comm=self.comm)
                if isinstance(cfg, SACConfig)
                else PPO.from_env(env, cfg, device=device, seed=seed, comm=self.comm)
            )
        if isinstance(self.alg, SAC) and train_cfg is not None:
            bind_symmetry(self.alg, env, train_cfg.get("algorithm") or {})  # PPO's config refuses symmetry_cfg
        self.iteration = -1  # the last finished iteration
        self.tracker = EpisodeTracker(env.num_envs, env.device)
        self._progress = (0, 0.0)  # (env steps, training seconds) so far, continued across a resume
        self._env_restored = False  # a checkpoint's run state was restored: the envs continue, no fresh start
        self._unsaved_warned = False
        streams = env_streams(env)
        if streams is not None and int(streams.global_ids[0]) != self.alg.env_offset:
            raise UserError(
                f"seeding.env_id_offset: {int(streams.global_ids[0])} but this rank's first global env is "
                f"{self.alg.env_offset} (ranks must run the same --num_envs)"
            )
        bind_action_noise(self.alg, env)

    def learn(
        self,
        num_iterations: int,
        profile: bool = False,
        init_at_random_ep_len: bool = False,
        stop: StopRequest | None = None,
        videos: Callable[[], Sequence[Clip]] | None = None,
    ) -> None:
        """Run ``num_iterations`` iterations after :attr:`iteration`.

        Args:
            num_iterations: iterations to run.
            profile: with a run folder, write a torch.profiler Chrome trace of one of them to
                ``<run_dir>/profile/trace.json``.
            init_at_random_ep_len: first start every env at a random step of its episode, as rsl_rl's ``learn``
                (:func:`~redline.runners.episodes.randomize_episode_lengths`).
            stop: polled after every iteration; once a signal set it (on any rank), that iteration is saved and
                :class:`~redline.runners.stop.Stopped` is raised.
            videos: called after every iteration for the training clips finished during it, which go to the log
                writer (e.g. :meth:`redline.media.training_clips.TrainingVideo.take_finished`; None: no videos).
        """
        if init_at_random_ep_len and not self._env_restored:
            randomize_episode_lengths(self.env)
        first, last = self.iteration + 1, self.iteration + num_iterations
        log = IterationLogger(
            self.run_dir,
            self.alg,
            self.env.num_envs,
            num_iterations,
            *self._progress,
            train_cfg=self.train_cfg,
            env_cfg=getattr(self.env, "cfg", None),
            first_iteration=first,
        )
        profiler = None
        if profile and self.run_dir is not None:
            profiler = IterationProfiler.for_run(self.run_dir, first, num_iterations, self.device)
        obs = self.env.get_observations()
        if stop is not None:
            stop.enter(TRAINING)  # from here a signal finishes the iteration in progress and saves it
        try:
            for it in range(first, last + 1):
                log.start_iteration()
                with profiler.trace(it) if profiler is not None else contextlib.nullcontext():
                    obs, times, comm, learner = self._iteration(obs)
                self.iteration = it
                episodes = self.tracker.read(self.comm)  # over all ranks' envs (a collective: every rank reads)
                log.record(it, times, comm, learner, episodes)
                if videos is not None:
                    log.videos(videos(), it)
                self._progress = (log.env_steps, log.wall_time_s)
                signum = self._stop_signal(stop)
                path = None if self.run_dir is None else self.run_dir / f"model_{it}.pt"
                if it % self.save_interval == 0 or it == last or signum:
                    self.save(path)
                    if path is not None:
                        log.saved(path, it)
                if signum:
                    raise Stopped(signum, it, path)
        finally:
            if stop is not None:
                stop.enter(SHUTDOWN)
            log.close()

    def _stop_signal(self, stop: StopRequest | None) -> int:
        """The stop signal any rank received (0: none); in a multi-process run every rank gets the same answer."""
        if stop is None:
            return 0
        if not self.comm.distributed:
            return stop.signum or 0
        flag = torch.tensor([float(stop.signum or 0)], device=self.comm.device)
        return int(self.comm.all_reduce_(flag, op="max").item())  # one small collective per iteration

    def _iteration(self, obs: TensorDict) -> tuple[TensorDict, PhaseTimes, CommStats, dict[str, torch.Tensor]]:
        """One rollout and update through :func:`~redline.learning.rollout.train_iteration`, timed by phase (host
        timers: on CUDA they see launch time, and the update's host read synchronises)."""
        times = PhaseTimes()
        self.comm.take_stats()  # the last iteration's episode-stats and checkpoint collectives count as logging
        with times("collect"):
            obs = collect_rollout(self.alg, self.env, obs, times, self.tracker.step)
        gae_calls, gae_s = self.comm.take_stats()
        with times("update"):
            learner = self.alg.update()  # reads the NaN guard's counters: the iteration's sync point
        update_calls, update_s = self.comm.take_stats()
        return obs, times, CommStats(gae_calls + update_calls, gae_s, update_s), learner

    def save(self, path: Path | None) -> None:
        """Atomically write a checkpoint with rsl_rl's keys (Isaac Lab's stock play loads it) plus redline's.

        In a multi-process run every rank calls this (with ``path=None`` on ranks that write nothing): the ranks'
        parameters are checked to be identical and the per-env seeding counters and run states of all ranks are
        gathered, so the checkpoint resumes on any number of ranks with the same global env count. With an env that
        saves its state (:mod:`~redline.run_state.parts`) the checkpoint holds the run state: a resume then
        continues the envs and the episode statistics exactly where they were.
        """
        self.alg.check_replicas()
        seeding = gather_seeding_state(self.env, self.comm)
        unsaved = why_not_saved(self.env)
        mine = {"noise_generator": self.alg.noise_generator}  # this rank's action noise (without env streams)
        sac_ranks = None  # SAC on several ranks: each rank's replay and generator (a collective: every rank sends)
        if isinstance(self.alg, SAC) and self.comm.distributed:
            sac_ranks = self.comm.gather_objects(self.alg.rank_state_dict())
        run_state = None if unsaved is not None else gather_run_state(self.env, self.tracker, self.comm, mine)
        if path is None:
            return
        if unsaved is not None and not self._unsaved_warned:
            print(f"[redline] warning: checkpoints hold no env state ({unsaved}): a resume starts from fresh resets")
            self._unsaved_warned = True
        if isinstance(self.alg, SAC):  # several ranks: each rank's replay once, in sac_ranks, not rank 0's twice
            state = self.alg.state_dict(replay_data=sac_ranks is None)
        else:
            state = self.alg.state_dict()
        state["iter"] = self.iteration
        state["env_steps"], state["wall_time_s"] = self._progress
        state["infos"] = None
        state["world_size"] = self.comm.world_size
        if sac_ranks is not None:
            state[SAC_RANKS_KEY] = sac_ranks
        if seeding is not None:
            state[SEEDING_KEY] = seeding
        if run_state is not None:
            state[RUN_STATE_KEY] = run_state
        os.makedirs(path.parent, exist_ok=True)
        save_atomic(state, path)

    def load(self, checkpoint: dict[str, Any]) -> None:
        """Restore a checkpoint (from :func:`~redline.outputs.checkpoints.load_checkpoint`); training continues
        at the iteration after the saved one, from the saved env state when the checkpoint holds one (else from
        fresh resets, with a one-line warning)."""
        if isinstance(self.alg, SAC):
            self._load_sac(checkpoint)
        else:
            self.alg.load_state_dict(checkpoint)
        self.iteration = int(checkpoint["iter"])
        self._progress = (int(checkpoint.get("env_steps", 0)), float(checkpoint.get("wall_time_s", 0.0)))
        restore_seeding_state(checkpoint, self.env)
        mine = {"noise_generator": self.alg.noise_generator}
        self._env_restored = restore_run_state(checkpoint, self.env, self.tracker, self.comm, mine)

    def _load_sac(self, checkpoint: dict[str, Any]) -> None:
        """Restore a SAC checkpoint on any partition of its global envs: this rank's replay, running returns and
        (on the saved partition) exploration generator are cut from the saved ranks' parts by global env id
        (:func:`~redline.learning.sac.sac_checkpoint.regroup_parts`); the rest is every rank's."""
        alg = self.alg
        assert isinstance(alg, SAC)
        parts = checkpoint.get(SAC_RANKS_KEY) or [sac_checkpoint.whole_part(checkpoint)]
        try:
            part = sac_checkpoint.regroup_parts(parts, alg.env_offset, alg.num_envs, alg.global_num_envs)
        except ValueError as exc:
            raise UserError(f"--resume: this SAC checkpoint does not fit this run ({exc})") from None
        own_noise = alg.noise_generator.get_state()  # (seed, global rank)'s, kept on another partition
        replay = checkpoint["sac"]["replay"]
        positions = {"pos": replay["pos"], "size": replay["size"], "steps": replay["steps"], "data": None}
        alg.load_state_dict({**checkpoint, "sac": {**checkpoint["sac"], "replay": positions}})
        if part["noise_generator"] is None:
            part["noise_generator"] = own_noise
        alg.load_rank_state_dict(part)

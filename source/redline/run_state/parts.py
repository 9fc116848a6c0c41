"""The run's state beyond the learner in every checkpoint, so a resumed run continues as if never interrupted.

A checkpoint's :data:`RUN_STATE_KEY` holds ``{"parts": [...]}``, one part per rank in rank order (one part in a
one-process run), each:

- ``global_ids``: the part's envs' global ids (rows of everything per env below are in this order);
- ``env``: the env's own state, from its ``env_state()`` (redline's tasks that list their buffers: Redline-Cartpole
  and the manager-based velocity tasks; :mod:`redline.run_state.env_state` — the simulator's state, episode lengths,
  done flags, the last actions and observation, a manager-based env's managers and sensors);
- ``episodes``: the runner's episode statistics (:meth:`~redline.runners.episodes.EpisodeTracker.state_dict`);
- ``rng``: the rank's generators: torch's global CPU (and CUDA, once used) generators — action sampling and
  minibatches under rsl_rl's models, the env's draws under ``shared`` seeding — and the learner's own (its action
  noise: :mod:`redline.run_state.generators`);
- ``layout``: every value's env layout by path (:mod:`redline.run_state.layout`), declared by the objects that own
  the values (:func:`redline.run_state.env_state.declared_layout`) or read from their shape.

Restored on the same layout, each rank loads its own part, generators included: bit for bit. On another process
count with the same global envs, each rank builds its part from the saved ones by global env id (:func:`regroup`):
every per-env value (by its layout: rows, env-major flat rows, or another env axis) is taken from the rank that held
that env; shared values (step counters, the physics clock, the last resets' log means, the episode-statistics
window) from the saved rank 0; a rank's own structure stays live. The envs and their seeding streams then continue
exactly; the generators of a rank do not (they belong to a rank, not to envs: under ``per_env`` seeding no env draws
from them), and the learner's sums run over another grouping (fp32 rounding). A state with a value of unknown layout
is restored only onto the layout it was saved from; elsewhere the envs start from fresh resets (one warning line).

Saved for envs whose ``env_state()`` answers; otherwise a checkpoint holds the learner and the seeding counters
alone and a resumed run starts from fresh resets, as from a checkpoint written before run states existed (both
say so in one warning line). A saved state that does not fit the live env (another task or scene) is not restored
either, with a warning that names the first differing paths.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from redline.run_state import layout as lay
from redline.run_state.generators import capture_generators, restore_generators
from redline.run_state.tree import leaves, put, to_cpu
from redline.seeding.state import SEEDING_KEY, env_streams, restore_seeding_state

RUN_STATE_KEY = "run_state"
"""Extra checkpoint key: :func:`gather_run_state`'s dict."""


def why_not_saved(env: Any) -> str | None:
    """Why ``env``'s run state cannot be saved (None: it can)."""
    base = getattr(env, "unwrapped", env)
    if not callable(getattr(base, "env_state", None)) or getattr(base, "run_state_buffers", None) is None:
        return f"{type(base).__name__} does not save its state yet"
    return None


def _global_ids(env: Any, comm: Any) -> torch.Tensor:
    """This rank's envs' global ids: the seeding streams' where the env has them, else ``rank * num_envs + i``."""
    base = getattr(env, "unwrapped", env)
    streams = getattr(base, "streams", None)
    if streams is not None:
        return streams.global_ids.detach().cpu().clone()
    count = int(base.num_envs)
    return torch.arange(count) + (0 if comm is None else comm.rank * count)


def gather_run_state(
    env: Any, tracker: Any, comm: Any = None, generators: dict[str, torch.Generator] | None = None
) -> dict[str, Any] | None:
    """``env``'s and ``tracker``'s state between two iterations (check :func:`why_not_saved` first) and this rank's
    generators (torch's global ones and ``generators``, e.g. the learner's action noise), on CPU; in a
    multi-process run every rank calls this and rank 0 gets all ranks' parts (None on the others). ``tracker``
    None: no episode statistics (rsl_rl's own runner keeps them)."""
    env_state = dict(to_cpu(env.unwrapped.env_state()))
    declared = {f"env/{k}": v for k, v in env_state.pop("layout", {}).items()}
    part: dict[str, Any] = {"global_ids": _global_ids(env, comm), "env": env_state}
    if tracker is not None:
        part["episodes"] = to_cpu(tracker.state_dict())
        declared.update({f"episodes/{k}": v for k, v in getattr(tracker, "STATE_LAYOUT", {}).items()})
    values = {k: v for k, v in part.items() if k != "global_ids"}
    part["layout"] = lay.describe(values, env.unwrapped.num_envs, declared)
    part["rng"] = capture_generators(generators)
    parts = [part] if comm is None else comm.gather_objects(part)
    return None if parts is None else {"parts": parts}


def restore_run_state(
    checkpoint: dict[str, Any],
    env: Any,
    tracker: Any,
    comm: Any = None,
    generators: dict[str, torch.Generator] | None = None,
) -> bool:
    """Restore :func:`gather_run_state`'s state from ``checkpoint`` (this rank's part with its generators, or one
    regrouped from the saved parts, generators left as they are); False (after a one-line warning) when there is
    none for this rank's envs, or it does not fit them: they then start from the fresh resets they have."""
    state = checkpoint.get(RUN_STATE_KEY)
    reason = why_not_saved(env)
    if state is None or reason is not None:
        detail = "it holds none (saved before run states, or by a task that saves none)"
        _warn(f"the checkpoint's env state is not restored: {reason or detail}; the envs start from fresh resets")
        return False
    parts = state.get("parts", [state])  # one part, as the first run states were written
    mine = _global_ids(env, comm)
    part = next((p for p in parts if torch.equal(p["global_ids"], mine)), None)
    same_layout = part is not None
    if part is None:
        saved = torch.cat([p["global_ids"] for p in parts])
        if not torch.isin(mine, saved).all():
            _warn(
                f"the checkpoint's env state is not restored: it holds {saved.numel()} envs, this run's reach "
                f"global id {int(mine.max())}; the envs start from fresh resets"
            )
            return False
        live: dict[str, Any] = {"env": env.unwrapped.env_state()}
        live["env"].pop("layout", None)
        if tracker is not None and "episodes" in part_keys(parts):
            live["episodes"] = tracker.state_dict()
        try:
            part = regroup(parts, mine, live)
        except ValueError as exc:
            _warn(
                f"the checkpoint's env state is not restored onto {mine.numel()} envs per process ({exc}); "
                "the envs start from fresh resets"
            )
            return False
    try:
        env.unwrapped.load_env_state(part["env"])
    except ValueError as exc:  # the physics' StateMismatch: nothing was written
        _warn(
            f"the checkpoint's env state does not fit this env, not restored ({exc}); the envs start from fresh resets"
        )
        return False
    if tracker is not None and "episodes" in part:
        tracker.load_state_dict(part["episodes"])
    if same_layout and "rng" in part:
        restore_generators(part["rng"], generators)
    return True


def part_keys(parts: list[dict[str, Any]]) -> set[str]:
    """The keys every saved part has."""
    return set.intersection(*(set(p) for p in parts))


def regroup(parts: list[dict[str, Any]], global_ids: torch.Tensor, live: dict[str, Any]) -> dict[str, Any]:
    """The part for envs ``global_ids`` from saved ``parts`` of another layout, with ``live``'s keys (this rank's
    current state): each value regrouped by its saved layout (:func:`redline.run_state.layout.regroup_value`; parts
    saved before layouts were recorded: read from the shapes).

    Raises:
        ValueError: a value's layout is unknown or contradicts its shape, or the parts hold other paths.
    """
    saved = torch.cat([p["global_ids"] for p in parts])
    where = {int(g): i for i, g in enumerate(saved.tolist())}
    rows = torch.tensor([where[int(g)] for g in global_ids.tolist()], dtype=torch.long)
    counts = [p["global_ids"].numel() for p in parts]
    trees = [{k: p[k] for k in live} for p in parts]
    layout = parts[0].get("layout") or lay.describe(trees[0], counts[0])
    values = [dict(leaves(t)) for t in trees]
    live_values = dict(leaves(live))
    unknown = sorted(path for path in values[0] if layout.get(path, lay.UNKNOWN) == lay.UNKNOWN)
    if unknown:
        raise ValueError(f"no known env layout for {', '.join(unknown[:3])}")
    out: dict[str, Any] = {}
    for path in values[0]:  # the saved paths; whether they fit the live env is the env's restore's to check
        if layout[path] == lay.LOCAL and path not in live_values:
            raise ValueError(f"{path}: this process's own value, which this env lacks")
        try:
            value = lay.regroup_value(layout[path], [v[path] for v in values], counts, rows, live_values.get(path))
        except (ValueError, KeyError) as exc:
            raise ValueError(f"{path}: {exc}") from exc
        put(out, path, value, trees[0])
    return out


class RunnerEnvState:
    """The env's part of a checkpoint under rsl_rl's own runner (``isaaclab train`` with redline's drop-in PPO, one
    process): its seeding counters and run state with the process's generators and the recurrent models' hidden
    states — not the episode statistics, which that runner keeps itself.

    rsl_rl's runner loads checkpoints for play and export too, so a loaded state is only held, and restored at the
    first action of training (:meth:`before_act`, after the runner's ``init_at_random_ep_len`` draw, which the saved
    episode lengths then replace); play and export never act through the algorithm.

    Args:
        env: the runner's env (rsl_rl's vec env wrapper), or None: nothing saved or restored.
        enabled: False in rsl_rl's multi-GPU mode (its runner saves on rank 0 alone: other ranks cannot be gathered).
        models: the algorithm's models by name; the hidden states of the recurrent ones (rsl_rl's ``RNNModel``:
            ``(layers, num_envs, hidden)``, a pair for an LSTM) are saved and restored with the envs.
        generators: the algorithm's own generators by name (saved with torch's global ones).
    """

    def __init__(
        self,
        env: Any,
        enabled: bool = True,
        models: dict[str, Any] | None = None,
        generators: dict[str, torch.Generator] | None = None,
    ) -> None:
        self.env: Any = env if enabled else None
        self.models = dict(models or {})
        self.generators = dict(generators or {})
        self._pending: dict[str, Any] | None = None

    def save_into(self, saved: dict[str, Any]) -> None:
        """Add the env's seeding counters and run state to the checkpoint dict ``saved`` (nothing for an env that
        saves no state)."""
        if self.env is None:
            return
        streams = env_streams(self.env)
        if streams is not None:
            saved[SEEDING_KEY] = streams.state_dict()
        if why_not_saved(self.env) is None:
            state = gather_run_state(self.env, None, generators=self.generators)
            assert state is not None  # one process
            part = state["parts"][0]
            part["memory"] = _hidden_states(self.models)
            part["layout"].update({f"memory/{k}": lay.axis(1) for k in part["memory"]})
            saved[RUN_STATE_KEY] = state

    def load(self, loaded: dict[str, Any]) -> None:
        """Hold ``loaded``'s env part until the first action of training."""
        if self.env is not None:
            self._pending = loaded

    def before_act(self, obs: Any) -> Any:
        """``obs``, or — on the first action after :meth:`load` — the restored env's observation (the seeding
        counters, then the run state, generators and hidden states restored; a checkpoint without run state warns
        once and the envs go on)."""
        if self._pending is None:
            return obs
        loaded, self._pending = self._pending, None
        restore_seeding_state(loaded, self.env)
        if why_not_saved(self.env) is None and restore_run_state(loaded, self.env, None, generators=self.generators):
            parts = loaded[RUN_STATE_KEY].get("parts", [])
            _set_hidden_states(self.models, parts[0].get("memory", {}) if len(parts) == 1 else {})
            return self.env.get_observations().to(obs.device)
        return obs


def _hidden_states(models: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The recurrent models' hidden states, ``<model>/<i>`` (``i``: the LSTM pair's index, 0 for a GRU), on CPU."""
    out: dict[str, torch.Tensor] = {}
    for name, model in models.items():
        hidden = model.get_hidden_state() if getattr(model, "is_recurrent", False) else None
        for i, tensor in enumerate(hidden if isinstance(hidden, tuple) else () if hidden is None else (hidden,)):
            out[f"{name}/{i}"] = tensor.detach().cpu().clone()
    return out


def _set_hidden_states(models: dict[str, Any], saved: dict[str, torch.Tensor]) -> None:
    """Give each recurrent model its :func:`_hidden_states` back (a model with none saved keeps a fresh start)."""
    for name, model in models.items():
        tensors = [saved[k] for k in sorted(saved) if k.rpartition("/")[0] == name]
        if tensors and getattr(model, "is_recurrent", False):
            device = next(model.parameters()).device
            moved = tuple(t.to(device) for t in tensors)
            model.reset(hidden_state=moved if len(moved) > 1 else moved[0])


def _warn(message: str) -> None:
    print(f"[redline] warning: {message}", file=sys.stderr, flush=True)

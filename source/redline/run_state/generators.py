"""A rank's generators in a checkpoint: torch's global ones and the learner's own, saved and restored bit for bit.

What draws from them between two checkpoints: torch's global CPU generator (and CUDA's on a GPU) — rsl_rl's models'
action sampling and minibatch permutation (redline's drop-in :class:`~redline.learning.general_ppo.GeneralPPO`
under either runner), the env's draws under ``shared`` seeding (Isaac Lab's); the learner's own generators (redline's
PPO's action noise when the env has no per-env streams). Each rank saves its own (:mod:`redline.run_state.parts`).
"""

from __future__ import annotations

from typing import Any

import torch


def capture_generators(extra: dict[str, torch.Generator] | None = None) -> dict[str, Any]:
    """This process's generators' states (CPU tensors): ``torch`` (global CPU), ``cuda`` (every device's, once CUDA
    is initialised; reading it never initialises CUDA) and each of ``extra`` by name."""
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = [s.cpu() for s in torch.cuda.get_rng_state_all()]
    for name, generator in (extra or {}).items():
        state[name] = generator.get_state().cpu()
    return state


def restore_generators(state: dict[str, Any], extra: dict[str, torch.Generator] | None = None) -> None:
    """Set :func:`capture_generators`'s ``state`` back (CUDA's only where this process sees as many devices; an
    ``extra`` generator absent from ``state`` keeps its state)."""
    torch.set_rng_state(state["torch"])
    cuda = state.get("cuda")
    if cuda is not None and torch.cuda.is_available() and torch.cuda.device_count() == len(cuda):
        torch.cuda.set_rng_state_all(cuda)
    for name, generator in (extra or {}).items():
        if name in state:
            generator.set_state(state[name])

"""Plain helpers for the learner tests (imported by the test modules; fixtures live in conftest.py)."""

from __future__ import annotations

import collections
import dataclasses
import os
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from redline.bench.shapes import DummyVecEnv
from redline.learning import PPO, ModelConfig, PPOConfig
from redline.learning.rollout import collect_rollout

SMALL = ModelConfig(hidden_dims=(16, 16))


def small_cfg(**overrides: object) -> PPOConfig:
    """8 steps x 16 envs, [16, 16] MLPs, 2 epochs x 2 minibatches, fp32, no value normalisation."""
    base = PPOConfig(
        num_steps_per_env=8,
        num_learning_epochs=2,
        num_mini_batches=2,
        precision="fp32",
        value_normalization=False,
        actor=SMALL,
        critic=SMALL,
    )
    return dataclasses.replace(base, **overrides)


def rollout(alg: PPO, env: DummyVecEnv) -> None:
    """Fill the learner's storage with one rollout and compute returns."""
    collect_rollout(alg, env, env.get_observations())


def copy_rollout(src: PPO, dst: PPO) -> None:
    """Give ``dst`` exactly the rollout ``src`` holds (storage data, step, value statistics, guard flag) and the
    state of its generator, so that both draw the same minibatches."""
    dst.storage.data.update_(src.storage.data)
    dst.storage.step = src.storage.step
    dst.value_normalizer.load_state_dict(src.value_normalizer.state_dict())
    dst._rollout_ok = src._rollout_ok.clone()
    dst.generator.set_state(src.generator.get_state())


def flat_params(alg: PPO) -> torch.Tensor:
    """All actor and critic parameters, concatenated (a copy)."""
    return alg.optimizer.flat_param.clone()


READ_METHODS = ("item", "tolist", "cpu", "numpy", "__float__", "__int__", "__bool__", "__index__")
"""Tensor methods that hand a device value to the host (``float(t)``, ``bool(t)`` and ``if t:`` call the dunders)."""


class HostReads(TorchDispatchMode):
    """Counts reads of device values on the host, by method and by the redline function that made them.

    Two nets: the tensor methods of :data:`READ_METHODS` are wrapped while the mode is active (they catch reads that
    never reach the dispatcher: ``.tolist()``, ``.numpy()``, ``.cpu()`` of a CPU tensor), and the dispatcher's
    ``_local_scalar_dense`` (what ``.item()`` runs, also inside torch's C++) counts as ``"item"`` when no wrapped
    method is already on the stack. :attr:`sites` keys each read as ``(method, "module:function")`` of the innermost
    frame in redline's own code (``source/redline`` or ``tasks/redline_tasks``), or the direct caller otherwise.
    """

    def __init__(self) -> None:
        super().__init__()
        self.calls: collections.Counter = collections.Counter()
        """Reads by method name."""
        self.sites: collections.Counter = collections.Counter()
        """Reads by ``(method, "module:function")``."""
        self._depth = 0
        self._saved: dict[str, object] = {}

    def __enter__(self):  # type: ignore[no-untyped-def]
        for name in READ_METHODS:
            original = getattr(torch.Tensor, name)
            self._saved[name] = torch.Tensor.__dict__.get(name, _INHERITED)
            setattr(torch.Tensor, name, self._counting(name, original))
        return super().__enter__()

    def __exit__(self, *exc):  # type: ignore[no-untyped-def]
        for name, saved in self._saved.items():
            if saved is _INHERITED:
                delattr(torch.Tensor, name)
            else:
                setattr(torch.Tensor, name, saved)
        return super().__exit__(*exc)

    def _counting(self, name: str, original):  # type: ignore[no-untyped-def]
        mode = self

        def read(tensor, *args, **kwargs):  # type: ignore[no-untyped-def]
            if mode._depth == 0:
                mode._count(name)
            mode._depth += 1
            try:
                return original(tensor, *args, **kwargs)
            finally:
                mode._depth -= 1

        return read

    def _count(self, name: str) -> None:
        self.calls[name] += 1
        self.sites[(name, _caller())] += 1

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default and self._depth == 0:
            self._count("item")
        return func(*args, **(kwargs or {}))


_INHERITED = object()
"""Marks a read method that ``torch.Tensor`` inherits rather than defines (removed again on exit)."""


def _caller() -> str:
    """``module:function`` of the innermost stack frame in redline's code, else of the first frame outside this file
    and torch."""
    frame = sys._getframe(2)
    fallback = None
    while frame is not None:
        path = frame.f_code.co_filename.replace(os.sep, "/")
        if "/source/redline/" in path or "/redline_tasks/" in path:
            return f"{frame.f_globals.get('__name__')}:{frame.f_code.co_name}"
        if fallback is None and path != __file__ and "/torch/" not in path:
            fallback = f"{frame.f_globals.get('__name__')}:{frame.f_code.co_name}"
        frame = frame.f_back
    return fallback or "?"

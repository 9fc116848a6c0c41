"""NaN/Inf guard: non-finite values skip optimizer steps through a device flag; the host looks once per iteration.

During an iteration every check only updates device tensors: how many steps were skipped, and which quantity was
the first to go non-finite. :meth:`NanGuard.end_iteration` reads both with one host sync, keeps the count of
consecutive iterations that skipped at least one step, and raises :class:`NonFiniteError` naming the first
non-finite quantity of the streak once that count reaches the limit.
"""

from __future__ import annotations

import torch

from redline.errors import ExpectedExit

QUANTITIES = (
    "observations",
    "rewards",
    "values",
    "value normaliser statistics",
    "loss",
    "actor gradient",
    "critic gradient",
    "updated weights",
    "observation normaliser statistics",
)
"""What the guard checks, in the order the learner checks them within an iteration."""


class NonFiniteError(ExpectedExit, RuntimeError):
    """Training stopped: too many consecutive iterations hit NaN/Inf values (the CLI prints the message on one line
    and exits with status 1; the weights were never updated with them, so every checkpoint stays finite)."""

    def __init__(self, quantity: str, iterations: int, skipped_steps: int) -> None:
        self.quantity = quantity
        super().__init__(
            f"training stopped: {iterations} consecutive iterations skipped optimizer steps on non-finite values "
            f"({skipped_steps} steps in all); the first non-finite quantity was the {quantity}"
        )


class NanGuard:
    """Device-side bookkeeping of skipped steps; host-side streak of iterations with skips."""

    def __init__(self, max_consecutive: int, device: torch.device | str) -> None:
        self.max_consecutive = max_consecutive
        self.skipped = torch.zeros((), dtype=torch.long, device=device)
        """Steps skipped in this iteration (device)."""
        self.first_bad = torch.zeros((), dtype=torch.long, device=device)
        """1 + index into :data:`QUANTITIES` of this iteration's first non-finite quantity; 0 when none (device)."""
        self.consecutive = 0
        """Iterations in a row, up to the last one ended, that skipped at least one step."""
        self.streak_quantity: str | None = None
        """The first non-finite quantity of the current streak."""
        self.streak_skipped = 0
        """Steps skipped during the current streak."""
        self.total_skipped = 0
        """Steps skipped over the whole run."""

    def check(self, nonfinite: torch.Tensor, first: str) -> torch.Tensor:
        """Record the first of several consecutive quantities that is non-finite; return "all finite" (device bool).

        Args:
            nonfinite: bool flags, shape ``(K,)``, for the K quantities of :data:`QUANTITIES` starting at ``first``.
            first: name of the quantity ``nonfinite[0]`` is about.
        """
        base = QUANTITIES.index(first) + 1
        bad = nonfinite.any()
        code = base + nonfinite.to(torch.uint8).argmax()  # argmax returns the first True
        self.first_bad.copy_(torch.where((self.first_bad == 0) & bad, code, self.first_bad))
        return ~bad

    def count_step(self, ok: torch.Tensor) -> None:
        """Count one optimizer step that ``ok`` (device bool) says was skipped or taken."""
        self.skipped += (~ok).long()

    def end_iteration(self) -> int:
        """Read the iteration's skip count (one host sync), update the streak, reset the device counters.

        Returns:
            The number of steps skipped in the iteration.

        Raises:
            NonFiniteError: the streak reached ``max_consecutive`` iterations.
        """
        skipped, first_bad = torch.stack((self.skipped, self.first_bad)).tolist()
        self.skipped.zero_()
        self.first_bad.zero_()
        self.total_skipped += skipped
        if skipped == 0:
            self.consecutive, self.streak_quantity, self.streak_skipped = 0, None, 0
            return 0
        self.consecutive += 1
        self.streak_skipped += skipped
        if self.streak_quantity is None:
            self.streak_quantity = QUANTITIES[first_bad - 1] if first_bad > 0 else "unknown"
        if self.consecutive >= self.max_consecutive:
            raise NonFiniteError(self.streak_quantity, self.consecutive, self.streak_skipped)
        return skipped

    def state_dict(self) -> dict:
        """Host counters for a checkpoint (plain ints and str, ``weights_only``-safe)."""
        return {
            "consecutive": self.consecutive,
            "streak_quantity": self.streak_quantity,
            "streak_skipped": self.streak_skipped,
            "total_skipped": self.total_skipped,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`."""
        self.consecutive = int(state["consecutive"])
        self.streak_quantity = state["streak_quantity"]
        self.streak_skipped = int(state["streak_skipped"])
        self.total_skipped = int(state["total_skipped"])

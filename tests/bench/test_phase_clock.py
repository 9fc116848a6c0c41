"""The exclusive phase clock of ``redline bench steps``: nested calls charged once, results passed through."""

from __future__ import annotations

import contextlib
import types

from redline.bench.phase_clock import PhaseClock


class FakeClock:
    """A clock that advances only when told (no timing in the tests)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Env:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def step(self, x: int) -> int:
        self.clock.now += 1.0  # 1 s of its own
        y = self.kernel(x)
        self.clock.now += 2.0  # 2 s more of its own
        return y + 1

    def kernel(self, x: int) -> int:
        self.clock.now += 10.0
        return 2 * x


def test_nested_calls_are_charged_their_exclusive_time() -> None:
    fake = FakeClock()
    env, clock = Env(fake), PhaseClock(fake)
    assert clock.wrap(env, "step", "env") and clock.wrap(env, "kernel", "kernels")
    assert env.step(3) == 7  # the result passes through
    assert env.step(1) == 3
    assert clock.seconds == {"env": 6.0, "kernels": 20.0}
    assert clock.calls == {"env": 2, "kernels": 2}
    assert sum(clock.seconds.values()) == fake.now  # the phases add up to the wall time


def test_restore_gives_back_the_class_method_and_a_module_function() -> None:
    fake = FakeClock()
    env, clock = Env(fake), PhaseClock(fake)
    module = types.ModuleType("m")
    module.f = lambda: 5  # type: ignore[attr-defined]
    original = module.f  # type: ignore[attr-defined]
    clock.wrap(env, "kernel", "kernels")
    clock.wrap(module, "f", "f")
    assert "kernel" in vars(env) and module.f() == 5  # type: ignore[attr-defined]
    clock.restore()
    assert "kernel" not in vars(env) and module.f is original  # type: ignore[attr-defined]
    env.kernel(1)
    assert clock.calls == {"f": 1}


def test_a_missing_attribute_or_owner_wraps_nothing() -> None:
    clock = PhaseClock(FakeClock())
    assert not clock.wrap(None, "compute", "rewards")
    assert not clock.wrap(object(), "compute", "rewards")
    clock.restore()


def test_an_exception_still_charges_and_unwinds() -> None:
    fake = FakeClock()
    clock = PhaseClock(fake)

    def fail() -> None:
        fake.now += 4.0
        raise ValueError("x")

    timed = clock.timed(fail, "f")
    with contextlib.suppress(ValueError):
        timed()
    assert clock.seconds == {"f": 4.0} and not clock._stack

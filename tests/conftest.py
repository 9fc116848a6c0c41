"""Shared fixtures: no network, a private asset root and log folder per test session, one process per run."""

from __future__ import annotations

import socket

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--extended", action="store_true", help="also run the tests marked extended (minutes each)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``extended`` are skipped, with the reason, unless ``--extended`` is given."""
    if config.getoption("--extended"):
        return
    skip = pytest.mark.skip(reason="extended (minutes; outside CI's budget): run with --extended")
    for item in items:
        if "extended" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _session_environment(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Build the assets into a fresh folder, so tests prove they are made offline from installed packages; one
    process per training run."""
    mp = pytest.MonkeyPatch()
    mp.setenv("REDLINE_ASSET_ROOT", str(tmp_path_factory.mktemp("assets")))
    # one process per `redline train` unless a test asks for more (--nproc, or deleting the variable to test the
    # automatic arrangement): two processes per test would double every simulator test's start-up
    mp.setenv("REDLINE_NPROC", "1")
    yield
    mp.undo()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Make every outgoing internet connection fail loudly; returns the addresses that were attempted."""
    attempts: list[object] = []
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            raise OSError(f"test forbids network access (tried {address!r})")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    return attempts

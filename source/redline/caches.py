"""The per-user folders a run writes besides its log root: Warp's kernel cache and redline's asset root.

Both live under ``~/.cache`` unless ``WARP_CACHE_PATH`` / ``REDLINE_ASSET_ROOT`` move them. In a container whose
``HOME`` is read-only (or ``/``, or unset for a uid the user database does not know) Warp failed inside Isaac Lab's
config loading with an ``OSError`` traceback. :func:`check_caches` runs before Isaac Lab is imported and turns that
into one line naming the folder and the variable to set (exit 2). It is an error rather than a fallback to a
temporary folder: Warp would then compile its ~90 kernel modules again on every run (minutes on a CPU), and the
cause would stay hidden.
"""

from __future__ import annotations

import os
from pathlib import Path

from redline.assets import ENV_VAR, asset_root, ensure_asset_root
from redline.errors import UserError, describe
from redline.outputs.folders import check_writable

WARP_ENV = "WARP_CACHE_PATH"
"""Warp's variable for its kernel cache."""


def warp_cache_dir() -> Path:
    """Where Warp keeps compiled kernels (its own rule: ``WARP_CACHE_PATH``, else ``$XDG_CACHE_HOME`` or
    ``~/.cache``, then ``warp``; Warp adds a version folder below)."""
    if os.environ.get(WARP_ENV):
        return Path(os.environ[WARP_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(_home(WARP_ENV) / ".cache")
    return Path(base) / "warp"


def check_caches() -> None:
    """Warp's kernel cache is writable and the asset root holds the current assets (written now if not); else a
    one-line :class:`UserError` naming the folder and the variable that moves it."""
    check_writable(warp_cache_dir(), "Warp's kernel cache", f"set {WARP_ENV} to a writable folder")
    if not os.environ.get(ENV_VAR):
        _home(ENV_VAR)
    build_assets(None)


def build_assets(root: Path | None) -> Path:
    """:func:`redline.assets.ensure_asset_root` whose ``OSError`` is one line: ``--root: cannot write to ...`` for a
    folder given on the command line, else naming ``REDLINE_ASSET_ROOT``."""
    folder = root if root is not None else asset_root()
    try:
        return ensure_asset_root(folder)
    except OSError as exc:
        where = exc.filename if isinstance(exc.filename, str) else folder
        field, hint = ("--root", "") if root is not None else ("asset root", f"; set {ENV_VAR} to a writable folder")
        raise UserError(f"{field}: cannot write to '{where}' ({describe(exc)}){hint}") from None


def _home(variable: str) -> Path:
    """The home folder; a :class:`UserError` when there is none (``HOME`` unset and no user-database entry)."""
    try:
        return Path.home()
    except RuntimeError:
        raise UserError(
            f"HOME is not set and uid {os.getuid()} has no home folder in the user database; set HOME, or {variable}, "
            "to a writable folder"
        ) from None

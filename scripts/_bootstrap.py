"""Make ``redline`` importable from a source checkout that was never installed (``isaaclab.sh -p scripts/...``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("redline") is None:
    root = Path(__file__).resolve().parent.parent
    sys.path[:0] = [str(root / "source"), str(root / "tasks")]

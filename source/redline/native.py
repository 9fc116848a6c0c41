"""Small C files compiled on first use with the system C compiler, cached, loaded with ctypes.

Used where a loop in C replaces many numpy or torch calls on the CPU (:mod:`redline.physics.worlds`' per-world
model patch, :mod:`redline.seeding.philox`'s rounds). A library is built once per source text and build inputs into
``$XDG_CACHE_HOME/redline`` (default ``~/.cache/redline``) and written atomically, so concurrent processes share
it. Without a compiler, with ``<SWITCH>=off`` or if the build fails, :func:`build` returns None and the reason; every
caller keeps a Python path with the same results.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path


def cache_dir() -> Path:
    """Where built libraries are kept."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "redline"


def build(
    source: Path, switch: str, flags: Sequence[str] = (), libs: Sequence[str] = (), salt: str = ""
) -> tuple[ctypes.CDLL | None, str]:
    """The library compiled from ``source`` (``cc -O2 -shared -fPIC [flags] source [libs]``), or ``(None, why not)``.

    Args:
        source: the C file.
        switch: environment variable whose value ``off`` refuses the build (the caller's Python path is taken).
        flags: compiler flags before the source (include paths, ``-pthread``).
        libs: libraries and linker flags after it.
        salt: what else the library depends on (a linked library's version): part of the cache key.
    """
    if os.environ.get(switch, "on") == "off":
        return None, f"{switch}=off"
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        return None, "no C compiler (cc) on PATH"
    key = hashlib.sha256(source.read_bytes() + "\0".join([*flags, *libs, salt]).encode()).hexdigest()[:16]
    cache = cache_dir()
    target = cache / f"{source.stem}-{key}.so"
    if not target.is_file():
        try:
            cache.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=cache) as tmp:
                built = Path(tmp) / target.name
                command = [compiler, "-O2", "-shared", "-fPIC", *flags, str(source), "-o", str(built), *libs]
                proc = subprocess.run(command, capture_output=True, text=True)
                if proc.returncode != 0:
                    return None, f"building {source.name} failed: {(proc.stderr.strip().splitlines() or ['?'])[0]}"
                os.replace(built, target)  # atomic: a concurrent process sees the whole file or none
        except OSError as exc:
            return None, f"cannot build {source.name} in {cache}: {exc}"
    return ctypes.CDLL(str(target)), ""

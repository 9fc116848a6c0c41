"""redline: train Isaac Lab robot policies with the hardware at its limit.

The import stays light (no simulator, no torch): the CLI parses and validates its arguments
before it pays for Isaac Lab's imports.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("redline")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

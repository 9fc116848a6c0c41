"""Offline assets: every USD file a redline task (or Isaac Lab's stock Cartpole/Ant) loads, on local disk.

Isaac Lab's stock tasks fetch their USD files from a remote asset server. redline builds the same files
locally instead, from files inside installed registry packages (Newton's wheel ships a flattened copy of
Isaac Lab's cartpole and the MuJoCo ant) plus a ground plane, a Unitree Go1 and a Unitree G1 shipped in this
package. The folder is laid out like Isaac Lab's asset root, so the same folder also serves the stock tasks:

    export ISAACSIM_ASSET_ROOT=$(redline assets)

Nothing here touches the network.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from redline import __version__
from redline.atomic import write_atomic

ENV_VAR = "REDLINE_ASSET_ROOT"
"""Environment variable that moves the asset root (default: ``~/.cache/redline/assets/<version>``)."""

CARTPOLE_REL = "Isaac/IsaacLab/Robots/Classic/Cartpole/cartpole.usd"
"""Cartpole articulation (joints ``slider_to_cart``, ``cart_to_pole``), where Isaac Lab looks for it."""
ANT_REL = "Isaac/Robots/IsaacSim/Ant/ant_instanceable.usd"
"""MuJoCo ant (joint and body names match Isaac Lab's Ant), where Isaac Lab looks for it."""
GO1_REL = "Redline/Robots/Unitree/Go1/go1.usda"
"""Unitree Go1 (MuJoCo Menagerie's model, collision shapes only; see ``data/unitree_go1/README.md``)."""
G1_REL = "Redline/Robots/Unitree/G1/g1.usda"
"""Unitree G1, 29 joints, no hands (MuJoCo Menagerie's MJX model, collision shapes only; ``data/unitree_g1/``)."""
GROUND_PLANE_REL = "Isaac/IsaacLab/Environments/Grid/default_ground_plane_checker_v1/default_ground_plane.usda"
"""Flat ground: an ``Xform`` with one collision ``Plane`` child, where Isaac Lab looks for its grid plane."""

_DATA = Path(__file__).with_name("data")


def asset_root() -> Path:
    """Return the local asset root (not created; see :func:`ensure_asset_root`)."""
    default = Path.home() / ".cache" / "redline" / "assets" / __version__
    return Path(os.environ.get(ENV_VAR) or default).expanduser().resolve()


def asset_path(rel: str) -> str:
    """Absolute path of one asset under :func:`asset_root` (a string, as Isaac Lab's spawner cfgs expect)."""
    return str(asset_root() / rel)


def _newton_asset(name: str) -> Path:
    spec = importlib.util.find_spec("newton")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("the 'newton' package is not installed; it ships the cartpole and ant models")
    path = Path(spec.origin).parent / "examples" / "assets" / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed 'newton' package")
    return path


def _sources() -> dict[str, str]:
    """Text of each asset, keyed by its path relative to the root."""
    cartpole = _newton_asset("cartpole_single_pendulum.usda").read_text()
    # Newton's flattened copy misspells the default prim; the prim itself is named "cartpole".
    cartpole = cartpole.replace('defaultPrim = "cartPole"', 'defaultPrim = "cartpole"')
    return {
        CARTPOLE_REL: cartpole,
        ANT_REL: _newton_asset("ant.usda").read_text(),
        GROUND_PLANE_REL: (_DATA / "ground_plane.usda").read_text(),
        GO1_REL: (_DATA / "unitree_go1" / "go1.usda").read_text(),
        G1_REL: (_DATA / "unitree_g1" / "g1.usda").read_text(),
    }


def ensure_asset_root(root: str | os.PathLike[str] | None = None) -> Path:
    """Build (or refresh) the asset files under ``root`` (default :func:`asset_root`) and return the root.

    Idempotent and cheap: a file is rewritten only when its content differs. Safe to call from several
    processes at once (each file is replaced atomically).
    """
    root_path = Path(root).expanduser().resolve() if root is not None else asset_root()
    for rel, text in _sources().items():
        path = root_path / rel
        if not path.is_file() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
    return root_path

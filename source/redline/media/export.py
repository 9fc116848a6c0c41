"""Export a trained policy: TorchScript ``policy.pt`` and ONNX ``policy.onnx`` with any batch size.

Both wrap rsl_rl's own export modules of the actor (observation normaliser, MLP, deterministic action mean), so the
files behave like Isaac Lab's exports; unlike rsl_rl's ONNX export (fixed batch of one), the ONNX graph here takes
a ``(batch, obs_dim)`` input.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from redline.errors import OutputError


def export_policy(actor: Any, out_dir: Path) -> tuple[Path, Path]:
    """Write ``out_dir/policy.pt`` and ``out_dir/policy.onnx`` for an rsl_rl ``MLPModel`` actor (on any device).

    Both files are written into a temporary sibling folder that then replaces ``out_dir`` in one rename, so a reader
    never sees one file of a new export beside one of an old one, and a kill leaves the old export whole.

    Returns:
        The two paths.

    Raises:
        OutputError: the files could not be written (a full disk, ...); an earlier export in ``out_dir`` is kept.
    """
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    except OSError as exc:
        raise OutputError.writing("export", out_dir, exc) from None
    try:
        _write(actor, staging / "policy.pt", staging / "policy.onnx")
        if out_dir.exists():
            old = out_dir.with_name(f".{out_dir.name}.old.{os.getpid()}")
            os.replace(out_dir, old)
            os.replace(staging, out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(staging, out_dir)
    except OSError as exc:
        raise OutputError.writing("export", out_dir, exc, "an earlier export there is kept") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir / "policy.pt", out_dir / "policy.onnx"


def _write(actor: Any, jit_path: Path, onnx_path: Path) -> None:
    """The TorchScript and ONNX files of ``actor``."""
    jit_model = actor.as_jit().to("cpu").eval()
    torch.jit.script(jit_model).save(str(jit_path))
    onnx_model = actor.as_onnx(verbose=False).to("cpu").eval()
    (dummy,) = onnx_model.get_dummy_inputs()
    batch = torch.export.Dim("batch", min=1)
    torch.onnx.export(
        onnx_model,
        (dummy.expand(2, -1).contiguous(),),
        str(onnx_path),
        input_names=onnx_model.input_names,
        output_names=onnx_model.output_names,
        dynamic_shapes={"x": {0: batch}},
        opset_version=18,
        external_data=False,
        dynamo=True,
    )

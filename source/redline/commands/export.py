"""Export a trained policy: TorchScript ``policy.pt`` and ONNX ``policy.onnx`` with any batch size.

Both wrap rsl_rl's own export modules of the actor (observation normaliser, MLP, deterministic action mean), so the
files behave like Isaac Lab's exports; unlike rsl_rl's ONNX export (fixed batch of one), the ONNX graph here takes
a ``(batch, obs_dim)`` input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


def export_policy(actor: Any, out_dir: Path) -> tuple[Path, Path]:
    """Write ``out_dir/policy.pt`` and ``out_dir/policy.onnx`` for an rsl_rl ``MLPModel`` actor (on any device).

    Returns:
        The two paths.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    jit_path, onnx_path = out_dir / "policy.pt", out_dir / "policy.onnx"
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
    return jit_path, onnx_path

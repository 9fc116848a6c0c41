"""The legged-shape PPO update at larger env counts: redline's captured bf16 learner vs rsl_rl 5.5.1 fp32.

    python scripts/gpu_scale.py DEVICE NUM_ENVS [NUM_ENVS ...]     # e.g. cuda 16384 65536

Per env count, one line ``SCALE {json}``: both learners timed in alternation for 5 iterations on the bench's synthetic
env (``redline bench gpu``'s legged shape with ``num_envs`` replaced), ms per iteration and MFU as that bench reports
them. Needs only the GPU bundle (``redline bench gpu --pack``) on PYTHONPATH.
"""

from __future__ import annotations

import json
import sys

from redline.bench.gpu import update_row
from redline.bench.learner import redline_loop, rsl_rl_loop, time_interleaved
from redline.bench.shapes import SHAPES


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    device = argv[0]
    if not all(a.isdigit() and int(a) > 0 for a in argv[1:]):
        print(f"gpu_scale.py: error: NUM_ENVS: {' '.join(argv[1:])}: give positive integers", file=sys.stderr)
        return 2
    for num_envs in map(int, argv[1:]):
        shape = {**SHAPES["legged"], "num_envs": num_envs}
        loops = {
            "redline_bf16_captured": redline_loop(shape, "bf16", device, capture="on")[0],
            "rsl_rl_fp32": rsl_rl_loop(shape, False, device),
        }
        timings = time_interleaved(loops, 5, device, count_ops=False)
        rows = {name: update_row(name, t, shape, device) for name, t in timings.items()}
        print("SCALE", json.dumps({"num_envs": num_envs, **rows}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env bash
# The GPU acceptance run on a bare machine that has only torch 2.11 (see `redline bench gpu`).
#
#   here:     .venv/bin/python -m redline.bench.gpu --pack bundle/      # wheels, <= 64 MiB
#   there:    bash gpu_check.sh bundle/ [bench options]                  # prints one JSON, saves gpu_check.json
#
# The venv reuses the system torch (--system-site-packages); the bundle's wheels go in without an index and
# without dependency resolution, so nothing is fetched. numpy must come with the machine's torch stack.
set -euo pipefail
BUNDLE=${1:?usage: gpu_check.sh BUNDLE_DIR [redline bench gpu options]}
shift
PYTHON=${PYTHON:-python3}
VENV=${VENV:-$(mktemp -d)/venv}
"$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'
"$PYTHON" -c 'import numpy' 2>/dev/null || echo "warning: numpy is missing; tensordict and rsl_rl need it" >&2
"$PYTHON" -m venv --system-site-packages "$VENV"
# redline's wheel pins Python 3.12 and Isaac Lab; the learner and the bench need neither
"$VENV/bin/python" -m pip install --quiet --no-index --no-deps --ignore-requires-python "$BUNDLE"/*.whl
timeout 480 "$VENV/bin/python" -m redline.bench.gpu --json "$@" | tee gpu_check.json

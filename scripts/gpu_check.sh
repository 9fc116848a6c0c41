#!/usr/bin/env bash
# The GPU acceptance run on a bare machine that has only torch 2.11 (see `redline bench gpu`).
#
#   here:     .venv/bin/python -m redline.bench.gpu --pack bundle/      # wheels, <= 64 MiB
#   there:    bash gpu_check.sh bundle/ [bench options]     # prints one JSON (last line), saves gpu_check.json
#
# The wheels go into a folder on PYTHONPATH over the machine's own torch (a venv with --system-site-packages would
# miss it where python3 is itself a venv's), without an index and without dependency resolution, so nothing is
# fetched. numpy must come with the machine's torch stack.
set -euo pipefail
BUNDLE=${1:?usage: gpu_check.sh BUNDLE_DIR [redline bench gpu options]}
shift
PYTHON=${PYTHON:-python3}
SITE=${SITE:-$(mktemp -d)/site}
"$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'
"$PYTHON" -c 'import numpy' 2>/dev/null || echo "warning: numpy is missing; tensordict and rsl_rl need it" >&2
# redline's wheel pins Python 3.12 and Isaac Lab; the learner and the bench need neither
"$PYTHON" -m pip install --quiet --no-index --no-deps --ignore-requires-python --target "$SITE" "$BUNDLE"/*.whl
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
timeout "${TIMEOUT:-480}" "$PYTHON" -m redline.bench.gpu --json "$@" | tee gpu_check.json

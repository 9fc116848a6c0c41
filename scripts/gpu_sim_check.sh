#!/usr/bin/env bash
# The simulator on a bare GPU machine: the last call of `python -m redline.bench.bundle plan` (docs/gpu.md).
#
#   here:     .venv/bin/python -m redline.bench.bundle stage        # build/gpu-stage/: parts <= 60 MiB + manifest
#             .venv/bin/python -m redline.bench.bundle plan         # the device calls, each with its carry list
#   there:    bash scripts/gpu_sim_check.sh [gpu_sim options]       # the last call: receive, install, check
#
# Receives the last part, verifies and reassembles every part, installs the wheels with pip --no-index --no-deps
# --target over the machine's torch (skipped when this archive is already installed: a rerun on a warm machine),
# then runs redline.bench.gpu_sim (stages a-d of issue 38) with a deadline. Writes gpu_sim.json, gpu_sim.log and
# install.log under $OUT; prints one verdict line last. Ends inside 8 minutes: install (~1 min) + the deadline.
# CI runs it on the CPU with PYTHON, STAGE, INTO, SITE and OUT pointing at a clean venv and temporary folders.
set -uo pipefail
PYTHON=${PYTHON:-python3}
STAGE=${STAGE:-build/gpu-stage}
INTO=${INTO:-/tmp/redline-stage}
SITE=${SITE:-/tmp/redline-site}
OUT=${OUT:-$PWD/gpu_sim_out}
DEADLINE=${DEADLINE:-390}
mkdir -p "$OUT"
export WARP_CACHE_PATH=${WARP_CACHE_PATH:-/tmp/warp-cache} PYTHONUNBUFFERED=1
{
    date -u +%FT%TZ
    PYTHONPATH=source "$PYTHON" -m redline.bench.bundle receive "$STAGE" -1 --into "$INTO" || exit 1
    mark="$SITE/.installed-$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["archive"]["sha256"])' "$INTO/manifest.json")"
    if [[ -e "$mark" ]]; then
        echo "bundle already installed in $SITE"
    else
        PYTHONPATH=source "$PYTHON" -m redline.bench.bundle install "$INTO" --site "$SITE" || exit 1
        touch "$mark"
    fi
    PYTHONPATH="$SITE" "$PYTHON" -m pip list 2>/dev/null | grep -iE '^(torch|numpy|scipy|warp-lang|newton|mujoco|isaaclab|pillow|protobuf) ' || true
} 2>&1 | tee "$OUT/install.log"
[[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "gpu_sim: install failed (see install.log)"; exit 1; }
export PYTHONPATH="$SITE"
timeout $((${DEADLINE%.*} + 60)) "$PYTHON" -m redline.bench.gpu_sim --out "$OUT" --deadline "$DEADLINE" "$@"

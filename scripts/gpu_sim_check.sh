#!/usr/bin/env bash
# The simulator on a bare GPU machine: the last call of `python -m tools.gpu.bundle plan` (docs/gpu.md).
#
#   here:     .venv/bin/python -m tools.gpu.bundle stage        # build/gpu-stage/: parts <= 60 MiB + manifest
#             .venv/bin/python -m tools.gpu.bundle plan         # the device calls, each with its carry list
#   there:    bash scripts/gpu_sim_check.sh [gpu_sim options]       # the last call: receive, install, check
#
# Receives the last part, verifies and reassembles every part, installs the wheels with pip --no-index --no-deps
# --target over the machine's torch (skipped when this archive is already installed: a rerun on a warm machine,
# which carries no part and uses the ones already received), then runs tools.gpu.gpu_sim with a deadline: by
# default stages a-b (the first pass); the rerun names its own (`--stages rsl_rl_ratio,learning`, or the failed
# ones). Writes gpu_sim.json, gpu_sim.log and install.log under $OUT and nothing else (the runs' folders go under
# $RUNS); prints one verdict line last. Ends inside 6 minutes: install (~1 min) + the deadline (240 s) + 20 s.
# CI runs it on the CPU with PYTHON, STAGE, INTO, SITE, OUT and RUNS pointing at a clean venv and temporary folders.
set -uo pipefail
PYTHON=${PYTHON:-python3}
STAGE=${STAGE:-build/gpu-stage}
INTO=${INTO:-/tmp/redline-stage}
SITE=${SITE:-/tmp/redline-site}
OUT=${OUT:-$PWD/gpu_sim_out}
RUNS=${RUNS:-/tmp/redline-runs}
DEADLINE=${DEADLINE:-240}
STAGES=${STAGES:-cuda_tests,throughput}
mkdir -p "$OUT"
export WARP_CACHE_PATH=${WARP_CACHE_PATH:-/tmp/warp-cache} PYTHONUNBUFFERED=1
{
    date -u +%FT%TZ
    if [[ -e "$STAGE/manifest.json" ]]; then
        PYTHONPATH=source "$PYTHON" -m tools.gpu.bundle receive "$STAGE" -1 --into "$INTO" || exit 1
    else
        echo "no part carried: the parts already in $INTO"
    fi
    mark="$SITE/.installed-$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["archive"]["sha256"])' "$INTO/manifest.json")"
    if [[ -e "$mark" ]]; then
        echo "bundle already installed in $SITE"
    else
        PYTHONPATH=source "$PYTHON" -m tools.gpu.bundle install "$INTO" --site "$SITE" || exit 1
        touch "$mark"
    fi
    PYTHONPATH="$SITE" "$PYTHON" -m pip list 2>/dev/null | grep -iE '^(torch|numpy|scipy|warp-lang|newton|mujoco|isaaclab|pillow|protobuf) ' || true
} 2>&1 | tee "$OUT/install.log"
[[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "gpu_sim: install failed (see install.log)"; exit 1; }
export PYTHONPATH="$SITE"
timeout $((${DEADLINE%.*} + 60)) "$PYTHON" -m tools.gpu.gpu_sim --out "$OUT" --runs "$RUNS" --deadline "$DEADLINE" \
    --stages "$STAGES" "$@"

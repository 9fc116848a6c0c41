#!/usr/bin/env bash
# redline.sh: set redline up on first use (Python 3.12 venv in .venv from uv.lock), then run it.
#
#   ./redline.sh train --task Redline-Cartpole      # any `redline` command (train, play, list, assets)
#   ./redline.sh test [pytest args]                 # the test suite (installs the optional wandb extra)
#
# Needs a Python 3.12 interpreter (python3.12 on PATH, pyenv's, or REDLINE_PYTHON) and the package registry;
# uv is installed with pip when missing. Everything else comes from uv.lock.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

find_python() {
    local cand check
    # a virtual env's python3.12 found on PATH (an activated venv, this checkout's own .venv) has no pip to install
    # uv with: only an interpreter named by REDLINE_PYTHON may be one
    for cand in "${REDLINE_PYTHON:-}" "$(command -v python3.12 || true)" \
        "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.12*/bin/python3.12; do
        check='import sys; assert sys.version_info[:2] == (3, 12)'
        [[ "$cand" == "${REDLINE_PYTHON:-}" ]] || check+=' and sys.prefix == sys.base_prefix'
        if [[ -n "$cand" && -x "$cand" ]] && "$cand" -c "$check" 2>/dev/null; then
            echo "$cand"
            return 0
        fi
    done
    echo "redline.sh: error: Python 3.12 not found (install it, or set REDLINE_PYTHON=/path/to/python3.12)" >&2
    return 1
}

python312="$(find_python)"
if command -v uv >/dev/null 2>&1; then
    uv=(uv)
else
    "$python312" -m uv --version >/dev/null 2>&1 || "$python312" -m pip install --quiet --user uv
    uv=("$python312" -m uv)
fi

export UV_PYTHON_DOWNLOADS=never
export WARP_CACHE_PATH="${WARP_CACHE_PATH:-$HOME/.cache/warp}"  # Warp's compiled kernels: ~40 s saved per process
# The tests also cover the optional W&B logger (offline), so `test` installs the `wandb` extra; --inexact keeps
# packages installed beside the lock (the extra, neptune for --logger neptune) instead of removing them on every run.
extras=()
if [[ "${1:-}" == "test" ]]; then
    extras=(--extra wandb)
fi
"${uv[@]}" sync --frozen --quiet --inexact "${extras[@]}" --python "$python312"

if [[ "${1:-}" == "test" ]]; then
    shift
    exec .venv/bin/python -m pytest "$@"
fi
exec .venv/bin/redline "$@"

#!/usr/bin/env bash
# One seed of the Go1 walk study (docs/go1.md): the default command under a 10-minute wall-clock limit from launch.
#
#   scripts/walk_study.sh OUT_DIR SEED [extra redline train arguments]
#   python scripts/walk_time.py OUT_DIR/*/*      # when it walked: training time and time from launch
#
# The time from launch, start-up included, is the run's own: metrics.jsonl's since_launch_s (since 2026-12-06,
# session 19; before it, this script polled for the first record's arrival into OUT_DIR/launch.json).
set -euo pipefail
out=$1; seed=$2; shift 2
mkdir -p "$out"
timeout -s INT 600 redline train --task Redline-Velocity-Flat-Go1 --seed "$seed" --log_root "$out" "$@" \
  > "$out/train.log" 2>&1 || [ $? -eq 124 ]  # 124: timeout's limit reached (SIGINT: the run saved and stopped)

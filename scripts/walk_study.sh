#!/usr/bin/env bash
# One seed of the Go1 walk study (docs/go1.md): the default command under a 10-minute wall-clock limit from launch,
# and the start-up it paid (launch to the first iteration's start), for the "10 minutes, start-up included" target.
#
#   scripts/walk_study.sh OUT_DIR SEED [extra redline train arguments]
#   python scripts/walk_time.py OUT_DIR/*/*      # when it walked, in training time
#
# OUT_DIR/launch.json holds the launch time and the first metrics record's arrival (polled every second); start-up
# = first_record - t0 - that record's wall_time_s.
set -euo pipefail
out=$1; seed=$2; shift 2
mkdir -p "$out"
t0=$(date +%s.%N)
timeout -s INT 600 redline train --task Redline-Velocity-Flat-Go1 --seed "$seed" --log_root "$out" "$@" \
  > "$out/train.log" 2>&1 &
pid=$!
first=null
while kill -0 "$pid" 2>/dev/null; do
  if [ "$first" = null ] && compgen -G "$out/*/*/metrics.jsonl" > /dev/null && [ -s "$(ls "$out"/*/*/metrics.jsonl | head -1)" ]; then
    first=$(date +%s.%N)
  fi
  sleep 1
done
echo "{\"t0\": $t0, \"first_record\": $first}" > "$out/launch.json"

#!/usr/bin/env bash
# Train both detectors one after the other (2-core machine: never concurrently), in the
# background, so that both finish by a wall-clock deadline.
#
# Usage:  nohup scripts/train_bg.sh [DEADLINE_HH:MM] [PIP_HOURS] > runs/train/bg.log 2>&1 &
#   DEADLINE  local time by which both runs must be done (default 14:45)
#   PIP_HOURS training budget of the pip model (default 0.45); the tile model gets the rest
#             minus MARGIN_MIN minutes (default 8) for final validation and ONNX export.
# Each run writes models/<name>.{pt,onnx,json} itself when it ends (vision/synth/train.py);
# logs: runs/train/<name>.log (+ .stdout), per-epoch metrics runs/train/<name>/results.csv.
# If a run must be cut short: scripts/finish_training.sh (copies/exports what exists).
set -u
cd "$(dirname "$0")/.."
DEADLINE=${1:-14:45}
PIP_HOURS=${2:-0.45}
MARGIN_MIN=${MARGIN_MIN:-8}
PY=.venv/bin/python
mkdir -p runs/train
# the renderer writes datasets/pips/data.yaml last: wait for a complete data set
while [ ! -e datasets/pips/data.yaml ] && [ "${NO_WAIT:-0}" != 1 ]; do sleep 20; done
echo "[$(date)] pips: start, ${PIP_HOURS} h"
$PY -m vision.synth.train datasets/train_pips.yaml --hours "$PIP_HOURS" >> runs/train/pips.stdout 2>&1
echo "[$(date)] pips: exit $?"
now=$(date +%s)
end=$(date -d "$DEADLINE" +%s)
hours=$($PY -c "print(round(max(0.1, ($end - $now - $MARGIN_MIN * 60) / 3600), 3))")
echo "[$(date)] tiles: start, ${hours} h"
$PY -m vision.synth.train datasets/train_tiles.yaml --hours "$hours" >> runs/train/tiles.stdout 2>&1
echo "[$(date)] tiles: exit $?"

#!/usr/bin/env bash
# Turn the training runs as they stand into the product files, without training:
# runs/train/<name>/weights/best.pt -> models/<name>.pt (optimizer stripped), models/<name>.onnx
# (NMS in graph), models/<name>.json (metrics from validating best.pt on the synthetic val set),
# models/checkpoints/<name>_last.pt (when < 10 MiB).
# Safe while a run is still going (it reads the latest best.pt); stop the run first if the
# CPU is needed: kill the PID printed in runs/train/bg.log / `pgrep -f "vision.synth.train"`.
#
# Usage: scripts/finish_training.sh [--export-only] [tiles] [pips]     (default: both)
#   --export-only: no validation; re-export models/<name>.pt with the config's current export
#                  settings (e.g. after a run that finished with older settings), then check
#                  ONNX vs .pt parity on 8 val images (result in models/<name>.json).
set -u
cd "$(dirname "$0")/.."
mode=(--finalize)
if [ "${1:-}" = "--export-only" ]; then mode=(--export-only --parity 8); shift; fi
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(pips tiles)
rc=0
for n in "${names[@]}"; do
  if [ "${mode[0]}" = --finalize ] && [ ! -e "runs/train/$n/weights/best.pt" ] && [ ! -e "runs/train/$n/weights/last.pt" ]; then
    echo "$n: no weights in runs/train/$n/weights (not started or first epoch not done)"; rc=1; continue
  fi
  .venv/bin/python -m vision.synth.train "datasets/train_$n.yaml" "${mode[@]}" || rc=1
done
ls -la models/
exit $rc

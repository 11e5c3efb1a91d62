#!/usr/bin/env bash
# One device call (a GPU lent through the device tool): render the training frames, fine-tune the
# tile model on the GPU for a fixed number of minutes, export it, and leave the product files in
# OUT. Nothing is evaluated here (../shared does not travel to the device): bring the files back
# and run scripts/compare_models.sh on them. models/MODEL_CARD.md ("Retraining on a lent GPU")
# gives the whole procedure, the wheels to carry included.
#
# Usage:  bash scripts/gpu_retrain.sh OUT [FRAMES] [MINUTES] [DEVICE]
#   OUT      folder for tiles_gpu.{pt,onnx,json} and the logs (on the device: $OUT)
#   FRAMES   rendered frames in all (default 6000): half flush-heavy (hands laid flush and
#            level, square blocks of four halves), a quarter the touching-hands recipe of the
#            shipped model's fine-tunes (datasets/tiles_ft4.yaml) and a quarter the same with
#            every hand gap-separated (--touching 0; from session 23: before, the other half
#            was all touching-hands recipe); in half the table frames
#            of each every 3 runs one way, as a real set draws them (render --threes-one-way,
#            from session 21: the runs before drew each 3 either way)
#   MINUTES  training budget (default 6); ultralytics sets the epoch count from the first
#            epoch's time
#   DEVICE   a CUDA index (default 0), or cpu (the smoke run of the script itself)
# Environment: PY (default python3), SHARDS (render processes, default the CPU count),
#   CONFIG (the training config, default datasets/train_tiles_gpu.yaml; the CPU variant:
#   datasets/train_tiles_flush_cpu.yaml),
#   SEED0 (first render seed, default 30000: seeds not used by any earlier dataset; all
#   below the held-out 1 000 000; a continued run takes seeds no earlier run used),
#   CAMERA (per-frame probability, in every shard, of a table frame seen through a dim,
#   compressed surveillance camera: render --camera, vision/synth/camera.py; default 0, as
#   every run before session 36),
#   RESUME (1: continue the CPU campaign's weights instead of the shipped model: the config's
#   run in runs/train if this machine has it, else models/checkpoints/<name>_last.pt;
#   models/MODEL_CARD.md, "The CPU campaign").
# Carried wheels (.whl/*.whl, git-ignored) are installed to /tmp/site first when present.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: gpu_retrain.sh OUT [FRAMES] [MINUTES] [DEVICE]}
FRAMES=${2:-6000}
MINUTES=${3:-6}
DEVICE=${4:-0}
PY=${PY:-python3}
CONFIG=${CONFIG:-datasets/train_tiles_gpu.yaml}
SHARDS=${SHARDS:-$(nproc)}
SEED0=${SEED0:-30000}
RESUME=${RESUME:-0}
CAMERA=${CAMERA:-0}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export YOLO_OFFLINE=1 YOLO_AUTOINSTALL=false YOLO_CONFIG_DIR=$PWD/.yolo_config PYTHONUNBUFFERED=1
echo "[$(date +%T)] render $FRAMES frames in $SHARDS shards (seeds from $SEED0)"
rm -rf datasets/gpu && mkdir -p datasets/gpu
per=$(( (FRAMES + SHARDS - 1) / SHARDS ))
pids=()
for k in $(seq 0 $((SHARDS - 1))); do
  if [ $((k % 2)) -eq 0 ]; then
    recipe=(--touching 0.8 --square-blocks 0.4 --closeup-fraction 0.15 --threes-one-way 0.5)
    kind=flush
  elif [ $((k % 4)) -eq 1 ]; then
    recipe=(--touching 0.5 --closeup-fraction 0.3 --catalogue 0.4 --threes-one-way 0.5)
    kind=touch
  else  # gap-separated hands only, so the regular tables keep what they read now
    recipe=(--touching 0 --closeup-fraction 0.3 --catalogue 0.4 --threes-one-way 0.5)
    kind=gap
  fi
  $PY -m vision.cli render --n "$per" --n-pips 0 --val-fraction 0.05 --seed $((SEED0 + k)) \
    --out "datasets/gpu/${kind}_$k" "${recipe[@]}" --camera "$CAMERA" --no-progress \
    > "datasets/gpu/render_$k.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
$PY - <<'EOF'
from pathlib import Path
import yaml
from vision.synth.render import TILE_CLASSES
root = Path("datasets/gpu")
shards = sorted(p.name for p in root.iterdir() if (p / "tiles/images/train").is_dir())
data = {"path": ".", "train": [f"{s}/tiles/images/train" for s in shards],
        "val": [f"{s}/tiles/images/val" for s in shards], "names": dict(enumerate(TILE_CLASSES))}
(root / "data.yaml").write_text("# written by scripts/gpu_retrain.sh\n" + yaml.safe_dump(data))
n = sum(len(list((root / s / "tiles/images/train").iterdir())) for s in shards)
print(f"{len(shards)} shards, {n} training frames")
EOF
echo "[$(date +%T)] train on $DEVICE for $MINUTES min"
hours=$($PY -c "print(round($MINUTES / 60, 4))")
name=$($PY -c "import yaml, sys; print(yaml.safe_load(open(sys.argv[1]))['name'])" "$CONFIG")
# the whole log in runs/ (progress bars as lines); OUT and the terminal get it without them
mkdir -p runs
resume=()
[ "$RESUME" = 1 ] && resume=(--resume)  # vision/synth/train.py finds the checkpoint
set +e
$PY -m vision.synth.train "$CONFIG" --device "$DEVICE" --hours "$hours" --out "$OUT" \
  "${resume[@]}" 2>&1 \
  | tr '\r' '\n' | tee "runs/$name.train.log" | grep -v -e '━' -e '─' -e '^\s*$' \
  | tee "$OUT/train.log"
rc=${PIPESTATUS[0]}
set -e
cp "runs/train/$name/results.csv" "$OUT/results.csv" 2>/dev/null || true
echo "[$(date +%T)] done: training exit code $rc"
ls -la "$OUT"
[ "$rc" -eq 0 ] && test -s "$OUT/$name.onnx"

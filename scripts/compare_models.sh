#!/usr/bin/env bash
# A retrained tile model (scripts/gpu_retrain.sh) against the shipped one, on the shared
# validation data read at run time (never copied, never trained on): ../shared/scenes and
# ../shared/scenes_flush (eval_scenes, per style), the composed tables (eval_composed, per
# folder) and the single-tile photos and drawings (eval_realdata, per folder). The candidate
# runs with the shipped spot model, second tile model and crop classifier, in a models folder
# of its own.
#
# Usage:  bash scripts/compare_models.sh CANDIDATE_DIR [OUT_DIR] [-- EVAL_SCENES_ARGS...]
#   CANDIDATE_DIR  holds one tile model: NAME.{pt,onnx,json} (gpu_retrain.sh's OUT)
#   OUT_DIR        default runs/compare: models/ (the candidate's folder) and one JSON per
#                  evaluation and model (shipped_*.json, candidate_*.json); last, a table per
#                  folder and style of both
#   after --       passed to eval_scenes.py (e.g. --limit 2 for a quick look)
# Environment: PY (default .venv/bin/python), SHARED (default ../shared), SKIP_SHIPPED=1 to
#   evaluate the candidate only (the shipped figures are in models/MODEL_CARD.md).
# Ship the candidate only with 0 wrong everywhere and no folder or style worse (MODEL_CARD.md).
set -euo pipefail
cd "$(dirname "$0")/.."
CAND=${1:?usage: compare_models.sh CANDIDATE_DIR [OUT_DIR] [-- EVAL_SCENES_ARGS...]}
shift
OUT=runs/compare
if [ $# -gt 0 ] && [ "$1" != "--" ]; then OUT=$1; shift; fi
[ "${1:-}" = "--" ] && shift
EXTRA=("$@")
PY=${PY:-.venv/bin/python}
SHARED=${SHARED:-../shared}
export YOLO_OFFLINE=1 YOLO_AUTOINSTALL=false YOLO_CONFIG_DIR=$PWD/.yolo_config PYTHONPATH=$PWD
m=$OUT/models
rm -rf "$m" && mkdir -p "$m"
cp models/pips.* models/tiles_touch.* models/crops.* "$m/"
shopt -s nullglob
onnx=("$CAND"/*.onnx)
shopt -u nullglob
if [ ${#onnx[@]} -ne 1 ]; then
  echo "compare_models: $CAND must hold exactly one .onnx, got ${#onnx[@]}" >&2; exit 2
fi
stem=${onnx[0]%.onnx}
for ext in pt onnx json; do cp "$stem.$ext" "$m/tiles.$ext"; done
$PY -m vision.recognition.modelcheck "$m" >/dev/null
which=(candidate)
[ "${SKIP_SHIPPED:-0}" = 1 ] || which=(shipped candidate)
for w in "${which[@]}"; do
  dir=models
  [ "$w" = candidate ] && dir=$m
  for f in scenes scenes_flush; do
    echo "[$(date +%T)] $w: eval_scenes $f"
    PAIGOW_MODELS=$dir $PY scripts/eval_scenes.py "$SHARED/$f" --json "${EXTRA[@]}" > "$OUT/${w}_$f.json"
  done
  echo "[$(date +%T)] $w: eval_composed, eval_realdata"
  PAIGOW_MODELS=$dir $PY scripts/eval_composed.py --json > "$OUT/${w}_composed.json"
  $PY scripts/eval_realdata.py --realdata "$SHARED/realdata" --models "$dir" --json \
    > "$OUT/${w}_realdata.json"
done
$PY - "$OUT" "${which[@]}" <<'EOF'
import json, sys
from pathlib import Path
out, which = Path(sys.argv[1]), sys.argv[2:]
def row(d):
    t = d.get("tiles", {})
    s = d.get("seats", {})
    seats = f"{s.get('settled')}/{s.get('seats')} ({s.get('wrong')} wrong)" if s else "-"
    return (f"{t.get('right')}/{t.get('true')} right, {t.get('unknown')} unknown, "
            f"{t.get('wrong')} wrong, {t.get('wrong_extra')} wrong extra; seats {seats}")
for kind in ("scenes", "scenes_flush", "composed"):
    print(f"== {kind}")
    res = {w: json.loads((out / f"{w}_{kind}.json").read_text()) for w in which}
    for key in res[which[-1]]:
        for w in which:
            v = res[w].get(key)
            if isinstance(v, dict) and "tiles" in v:
                print(f"{key:28s} {w:9s} {row(v)}")
print("== realdata (labelled single tiles; folders of partial labels: halves right)")
res = {w: json.loads((out / f"{w}_realdata.json").read_text())["folders"] for w in which}
for key, v0 in res[which[-1]].items():
    for w in which:
        v = res[w].get(key, {})
        got = (f"{v.get('correct')}/{v.get('labelled_tiles')} right, {v.get('wrong')} wrong"
               if "correct" in v else f"halves right {v.get('halves_correct')}, "
               f"found {v.get('found_tiles')}/{v.get('labelled_tiles')}")
        print(f"{key:28s} {w:9s} {got}")
EOF

#!/usr/bin/env bash
# Set up a fresh machine: a virtual environment in .venv with everything the project needs.
# torch and torchvision are pinned exactly: those wheels lie on the project's machines' disks.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q torch==2.14.1 torchvision==0.29.1
.venv/bin/python -m pip install -q -e '.[train,test]'
echo "set up: $(.venv/bin/python -c 'import torch, ultralytics, onnxruntime; print("torch", torch.__version__, "ultralytics", ultralytics.__version__, "onnxruntime", onnxruntime.__version__)')"

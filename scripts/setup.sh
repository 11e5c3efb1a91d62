#!/usr/bin/env bash
# Set up a fresh machine: a virtual environment in .venv with everything the project needs.
# torch and torchvision are pinned exactly: those wheels lie on the project's machines' disks.
# Every package is installed at the version scripts/lock.txt names (the set the tests passed on).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -c scripts/lock.txt torch==2.14.1 torchvision==0.29.1
# postgres: psycopg 3 for the audit store on PostgreSQL; ray: `paigow reaudit` (Ray tasks);
# openvino: `--backend openvino`. scripts/constraints.txt pins the packages whose numerics reach
# a reading to the versions the models' figures were measured with (see there why).
.venv/bin/python -m pip install -q -c scripts/constraints.txt -c scripts/lock.txt -e '.[train,test,postgres,ray,openvino]'
# The labelling tools' own validators for tests/test_exports.py, without their dependency pins:
# label-studio-sdk 2.1 pins opencv-python-headless<4.13 (and numpy<2.3 through it), datumaro 1.13
# opencv-python-headless<5 and pillow~=12; either would replace the OpenCV 5 / Pillow 13 the
# project runs on (ultralytics pulls opencv-python 5, and two OpenCV versions would share one cv2
# folder). The modules the tests use need only the light dependencies in the `test` extra.
.venv/bin/python -m pip install -q -c scripts/lock.txt --no-deps label-studio-sdk==2.1.2 datumaro==1.13.12
# CVAT's SDK and command line (the auto-annotation function vision/exports/cvat_function.py and
# tests/test_cvat_function.py): light dependencies only, installed under the pins.
.venv/bin/python -m pip install -q -c scripts/constraints.txt -c scripts/lock.txt cvat-sdk==2.80.0 \
  cvat-cli==2.80.0
# Label Studio itself, for tests/test_label_server.py (a real server that `paigow label-server`
# connects to; docs/labelling.md), in a venv of its own: it pins Django and many packages that
# would clash with .venv's (about 70 s and 1 GB), under the pins of
# scripts/labelstudio-constraints.txt (a new sentry-sdk once broke every fresh install). A
# failure here does not stop the set-up; the test then skips, unless
# PAIGOW_REQUIRE_LABEL_STUDIO=1 (set by .ci/run) makes it fail.
if [ ! -x .venv-labelstudio/bin/label-studio ]; then
  ( "$PY" -m venv .venv-labelstudio && .venv-labelstudio/bin/python -m pip install -q -c scripts/labelstudio-constraints.txt label-studio==1.23.2 ) \
    || { echo "Label Studio not installed in .venv-labelstudio: tests/test_label_server.py will skip" >&2; rm -rf .venv-labelstudio; }
fi
# Its database migrated once, here, while nothing else runs (about 40 s of CPU): the test
# starts each Label Studio on a copy of this folder instead of migrating a new database.
LS_TEMPLATE=.venv-labelstudio/data-template
if [ -x .venv-labelstudio/bin/label-studio ] && [ ! -f "$LS_TEMPLATE/label_studio.sqlite3" ]; then
  rm -rf "$LS_TEMPLATE.part"
  if LABEL_STUDIO_BASE_DATA_DIR="$PWD/$LS_TEMPLATE.part" LATEST_VERSION_CHECK=false \
       .venv-labelstudio/bin/label-studio version >/dev/null 2>"$LS_TEMPLATE.log"; then
    rm -rf "$LS_TEMPLATE" && mv "$LS_TEMPLATE.part" "$LS_TEMPLATE"
  else
    echo "Label Studio's database not migrated (see $LS_TEMPLATE.log): the test will migrate its own" >&2
  fi
fi
echo "set up: $(.venv/bin/python -c 'import torch, ultralytics, onnxruntime, psycopg, ray; print("torch", torch.__version__, "ultralytics", ultralytics.__version__, "onnxruntime", onnxruntime.__version__, "psycopg", psycopg.__version__, "ray", ray.__version__)')"

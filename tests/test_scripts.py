"""The vision benchmark and evaluation scripts run and report what they promise (structure and
counts only: speed is measured by running them, never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
pytestmark = pytest.mark.skipif(
    not ((MODELS / "tiles.onnx").is_file() and (MODELS / "pips.onnx").is_file()),
    reason="needs the trained models")


def _script(name, *args):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / name), *args], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    return r


def test_bench_run_reports_changing_and_still_frames():
    r = _script("bench_run.py", "--deal", "3", "--still", "2", "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["video"]["frames"] == 5 and res["video"]["face_up_tiles"] == 32
    assert res["process_changing"]["frames"] == 3 and res["process_still"]["frames"] == 2
    assert set(res["ms_per_frame"]) == {"capture", "detect", "decode", "score", "draw"}
    assert res["fps_end_to_end"] > 0


def test_bench_run_rejects_bad_arguments():
    r = _script("bench_run.py", "--deal", "0")
    assert r.returncode == 2 and "--deal" in r.stderr


def test_eval_tables_counts_every_true_tile_once():
    r = _script("eval_tables.py", "--n", "1", "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    t = res["total"]
    assert t["true"] == 32
    assert t["found"] + t["missed"] == t["true"]
    assert t["ok"] + t["unknown"] + t["wrong"] == t["found"]
    assert t["wrong"] == 0, res["confusions"]
    r = _script("eval_tables.py", "--seed", "5")
    assert r.returncode == 2 and "held out" in r.stderr

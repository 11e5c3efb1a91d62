"""Fault: ``--out`` naming an existing file or a place that cannot be written. It was a
traceback (exit 1) after the models had loaded; now one line naming the path, exit 2, before
any work, with nothing created."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from vision.cli import main


@pytest.fixture()
def frame(tmp_path):
    p = tmp_path / "frame.png"
    cv2.imwrite(str(p), np.full((48, 64, 3), 90, np.uint8))
    return p


def _cases(tmp_path):
    existing = tmp_path / "report.txt"
    existing.write_text("keep me")
    return {
        "existing file": (existing, "is an existing file"),
        "under a file": (existing / "out", "is a file"),
        "unwritable place": (tmp_path.root + "proc/paigow-out", "not writable"),
        "events.jsonl is a folder": (tmp_path / "o", "events.jsonl inside it is a folder"),
    }


@pytest.mark.faults
@pytest.mark.parametrize("case", ["existing file", "under a file", "unwritable place",
                                  "events.jsonl is a folder"])
@pytest.mark.parametrize("command", ["run", "demo"])
def test_bad_out(tmp_path, capsys, frame, case, command):
    out, why = _cases(tmp_path)[case]
    if case == "events.jsonl is a folder":
        (tmp_path / "o" / "events.jsonl").mkdir(parents=True)
    argv = (["run", str(frame), "--no-progress"] if command == "run" else ["demo"])
    rc = main(argv + ["--out", str(out), "--json"])
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert rc == 2 and len(lines) == 1, cap.err[-500:]
    assert str(out) in lines[0] and why in lines[0]
    assert json.loads(cap.out.strip().splitlines()[-1])["exit_code"] == 2
    assert (tmp_path / "report.txt").read_text() == "keep me"
    if command == "run" and case == "existing file":  # and a good --out still works
        good = tmp_path / "new" / "deeper"
        assert main(["run", str(frame), "--no-progress", "--out", str(good)]) == 0
        assert (good / "events.jsonl").is_file()
        assert not [p for p in good.parent.iterdir() if p.name.startswith(".paigow-write")]



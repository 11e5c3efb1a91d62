"""Fault (issue 42 item 5): outputs never follow a symbolic link. ``ln -s ../v1
out/annotated.mp4; ln -s ../v2 out/events.jsonl; paigow run V --out out`` overwrote both
targets; now it is refused with one line naming the link, exit 2, before any work, and the
targets are untouched."""

from __future__ import annotations

import json
import os

import cv2
import numpy as np
import pytest

from vision.cli import main

pytestmark = [pytest.mark.faults]


@pytest.mark.parametrize("name", ["events.jsonl", "annotated.mp4"])
def test_an_output_that_is_a_link_is_refused(tmp_path, capsys, name):
    img = tmp_path / "table.png"
    cv2.imwrite(str(img), np.zeros((64, 64, 3), np.uint8))
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(target, out / name)
    assert main(["run", str(img), "--out", str(out), "--json"]) == 2
    err = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert err["exit_code"] == 2 and name in err["error"] and "symbolic link" in err["error"]
    assert target.read_text() == "keep me"


def test_the_events_writer_never_follows_a_link(tmp_path):
    from vision.table.events import EventWriter

    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    os.symlink(target, tmp_path / "events.jsonl")
    with pytest.raises(OSError):
        EventWriter(tmp_path / "events.jsonl")
    assert target.read_text() == "keep me"

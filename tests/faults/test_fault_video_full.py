"""Fault: the disk fills while the annotated video is written (issue 23, item 5). OpenCV's
video writer reports nothing: the run ended with exit 0 and a named ``annotated.mp4`` that
could not be opened (66 FFmpeg warnings with 300 KB left). Now each write is checked
(:class:`vision.io.sinks.AnnotatedOutput`): ``disk full: .../annotated.mp4``, exit 2, the rounds
committed before kept, and no summary naming the broken file as written."""

from __future__ import annotations

import json
import pickle

import pytest
from faultkit import N_STABLE, make_video

import vision.recognition.engine
import vision.io.sinks
from vision.audit import AuditStore, verify
from vision.cli import main

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return make_video(tmp_path_factory.mktemp("vfull"))


def _run(video, tmp_path, monkeypatch, capsys, *extra):
    with open(video["fake"], "rb") as f:
        fake = pickle.load(f)
    monkeypatch.setattr(vision.recognition.engine, "load_detectors", lambda *a, **k: (fake, fake))
    db, out = tmp_path / "audit.db", tmp_path / "out"
    rc = main(["run", str(video["path"]), "--audit", str(db), "--out", str(out), "--json",
               "--stable", str(N_STABLE), "--no-progress", *extra])
    cap = capsys.readouterr()
    return rc, db, out, [json.loads(x) for x in cap.out.splitlines() if x.startswith("{")], \
        cap.err


def test_the_disk_filling_under_the_video_ends_the_run_with_disk_full(video, tmp_path,
                                                                        monkeypatch, capsys):
    calls = [0]

    def free(path):  # plenty of room for 60 frames, then the disk is full
        calls[0] += 1
        return 10 << 30 if calls[0] <= 60 else 100_000

    monkeypatch.setattr(vision.io.sinks, "free_bytes", free)
    rc, db, out, lines, err = _run(video, tmp_path, monkeypatch, capsys)
    assert rc == 2, err[-2000:]
    assert lines[-1]["exit_code"] == 2
    msg = lines[-1]["error"]
    assert msg.startswith(f"disk full: {out / 'annotated.mp4'}"), msg
    printed = [x for x in lines[:-1] if "round_id" in x]
    assert printed, "some rounds were reported before the disk filled"
    assert not any("output" in x for x in lines[:-1])  # no summary naming the video
    assert verify(db).ok
    with AuditStore(db, create=False) as st:
        stored = [r.payload["round_id"] for r in st.rounds()]
    assert stored[:len(printed)] == [x["round_id"] for x in printed]


def test_an_image_that_cannot_be_written_is_disk_full(tmp_path, monkeypatch):
    import cv2
    import numpy as np

    from vision.io.capture import Frame

    sink = vision.io.sinks.AnnotatedOutput(tmp_path, "images", None)
    monkeypatch.setattr(cv2, "imwrite", lambda *a, **k: False)
    img = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(OSError) as e:
        sink.frame(img, Frame(img, 0.0, 0, "x", str(tmp_path / "a.png")), None)
    assert e.value.filename.endswith("a.jpg") and sink.output is None

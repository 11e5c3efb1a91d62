"""Fault: exactly-once lost when the same file is named by another path (issue 23, item 3).
The store's round key took the typed path: ``run v.mp4`` then ``run /abs/v.mp4`` stored every
round twice (the shift report doubled the house net). Now a round's source is its
``source_id`` -- the file's resolved path, size and modification time
(:func:`vision.sources.source_id`) -- so one video named four ways stores its rounds once."""

from __future__ import annotations

import os
import pickle
import shutil

import pytest
from faultkit import N_STABLE, SEEDS, make_video

from vision.audit import AuditStore, verify
from vision.session import run

pytestmark = [pytest.mark.faults, pytest.mark.timeout(300)]


def test_one_video_named_four_ways_stores_its_rounds_once(tmp_path, monkeypatch):
    v = make_video(tmp_path / "v")
    with open(v["fake"], "rb") as f:
        fake = pickle.load(f)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(v["path"], work / "rounds.mp4")
    (work / "link.mp4").symlink_to(work / "rounds.mp4")
    monkeypatch.chdir(work)
    db = tmp_path / "audit.db"
    kw = dict(n_stable=N_STABLE, audit=db, table_id="t1", progress=False, tile_detector=fake,
              pip_detector=fake)
    names = ["rounds.mp4", str(work / "rounds.mp4"), "link.mp4", "./rounds.mp4"]
    first = run(names[0], **kw)
    assert first["audit"]["appended"] == len(SEEDS)
    for name in names[1:]:
        again = run(name, **kw)
        assert again["audit"]["appended"] == 0, name
        assert again["audit"]["already_recorded"] == len(SEEDS), name
    with AuditStore(db, create=False) as st:
        recs = list(st.rounds())
    assert len(recs) == len(SEEDS)
    assert len({r.payload["source_id"] for r in recs}) == 1
    assert verify(db).ok
    os.utime(work / "rounds.mp4", ns=(1, 1))  # touched: another file as far as it knows
    assert run("rounds.mp4", **kw)["audit"]["appended"] == len(SEEDS)

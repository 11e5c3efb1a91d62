"""Fault: a round recorded twice (issue 10, item 2). Restarting ``paigow run --audit`` on the
same store recorded the settled round still in view again; two processes writing one store
recorded r000001 three times. Now each round is stored exactly once: the store keeps one record
per table and round content (``round_key``: source, tiles, settlement; the frame for file
sources), and round ids are numbered inside the write transaction."""

from __future__ import annotations

import sqlite3
import subprocess

import pytest
from faultkit import N_STABLE, SEEDS, cli_child, make_video
from helpers.videos import empty_table

from vision.audit import AuditStore, verify
from vision.io.capture import Frame
from vision.session import run

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return make_video(tmp_path_factory.mktemp("once"))


def _fake(video, delay=0.0):
    import pickle

    with open(video["fake"], "rb") as f:
        fake = pickle.load(f)
    fake.delay = delay
    return fake


def _stored(db):
    with AuditStore(db, create=False) as st:
        return list(st.rounds())


def _camera_frames(video, scene_index: int, n: int, start: int = 0):
    """``n`` frames of one deal as a camera delivers them (no file: ``path`` None), indices
    from ``start`` (a restarted process counts from 0 again)."""
    img = video["scenes"][scene_index].image
    return [Frame(img.copy(), float(i) / 30, i, "0", None) for i in range(start, start + n)]


def test_restart_with_the_settled_round_still_in_view_is_not_stored_again(video, tmp_path):
    db = tmp_path / "audit.db"
    fake = _fake(video)
    first = run("0", n_stable=N_STABLE, audit=db, table_id="t1", progress=False,
                tile_detector=fake, pip_detector=fake, frames=_camera_frames(video, 0, 12))
    assert first["audit"]["appended"] == 1
    # the process restarts; the same round is still on the table (frame numbers start over),
    # then it is cleared and the next deal comes
    empty = empty_table(video["scenes"][0])
    frames = (_camera_frames(video, 0, 12)
              + [Frame(empty.copy(), 0.0, 0, "0", None) for _ in range(4)]
              + _camera_frames(video, 1, 12, start=16))
    again = run("0", n_stable=N_STABLE, audit=db, table_id="t1", progress=False,
                tile_detector=fake, pip_detector=fake, frames=frames)
    assert again["audit"]["already_recorded"] == 1 and again["audit"]["appended"] == 1
    # the round in view is neither stored nor reported again; the next one follows it
    assert [e["round_id"] for e in again["events"]] == ["r000002"]
    recs = _stored(db)
    assert [r.round_id for r in recs] == ["r000001", "r000002"]
    assert sorted(recs[1].payload["positions"]["dealer"]["tiles"]) == \
        sorted(video["scenes"][1].deal["dealer"])
    assert verify(db).ok
    # and once more: nothing new on the table, nothing stored
    last = run("0", n_stable=N_STABLE, audit=db, table_id="t1", progress=False,
               tile_detector=fake, pip_detector=fake, frames=_camera_frames(video, 1, 12))
    assert last["audit"] == {"store": str(db), "appended": 0, "already_recorded": 1,
                             "head_hash": None}
    assert last["events"] == []


def test_the_same_file_read_again_adds_nothing(video, tmp_path):
    db = tmp_path / "audit.db"
    fake = _fake(video)
    kw = dict(n_stable=N_STABLE, audit=db, table_id="t1", progress=False, tile_detector=fake,
              pip_detector=fake)
    s1 = run(str(video["path"]), **kw)
    assert s1["audit"]["appended"] == len(SEEDS)
    s2 = run(str(video["path"]), **kw)
    assert s2["audit"]["appended"] == 0 and s2["audit"]["already_recorded"] == len(SEEDS)
    assert len(_stored(db)) == len(SEEDS)


def test_two_writers_on_one_store_record_each_round_once(video, tmp_path):
    """Two ``paigow run --audit`` processes on the same video, table and store at the same
    time (the reproduction stored r000001 three times)."""
    db = tmp_path / "audit.db"
    procs = [cli_child(video["fake"], ["run", video["path"], "--audit", db, "--table-id", "t1",
                                       "--stable", N_STABLE, "--no-progress", "--json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=200) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
    recs = _stored(db)
    assert len(recs) == len(SEEDS)  # each deal once
    assert [r.round_id for r in recs] == [f"r{i:06d}" for i in range(1, len(SEEDS) + 1)]
    dealers = [sorted(r.payload["positions"]["dealer"]["tiles"]) for r in recs]
    assert dealers == [sorted(sc.deal["dealer"]) for sc in video["scenes"]]
    printed = sum(len(out.splitlines()) for out, _ in outs)
    assert printed == len(SEEDS)  # what was reported, by either process, was reported once
    assert verify(db).ok


def test_two_writers_of_different_rounds_get_distinct_ids(video, tmp_path):
    """Two writers of one table that see different rounds: ids are given inside the write
    transaction, so neither reuses the other's (before: both wrote r000001)."""
    db = tmp_path / "audit.db"
    fake = _fake(video)
    a = AuditStore(db)
    b = AuditStore(db)
    try:
        from vision.config import OutputConfig, PipelineConfig, RunConfig
        from vision.session import Session

        def session(store, scene):
            cfg = RunConfig("0", PipelineConfig.build(n_stable=N_STABLE, table_id="t1",
                                                      source="0"),
                            OutputConfig(audit=store, progress=False))
            return Session(cfg, frames=_camera_frames(video, scene, 12), tile_detector=fake,
                           pip_detector=fake)

        s1, s2 = session(a, 0), session(b, 1)  # both attached before either wrote: both
        # pipelines number their round 1
        ids = [e["round_id"] for e in s1.run()["events"] + s2.run()["events"]]
    finally:
        a.close()
        b.close()
    assert ids == ["r000001", "r000002"]
    assert [r.round_id for r in _stored(db)] == ids


def test_the_store_itself_refuses_a_second_copy(video, tmp_path):
    """The rule is in the database: a raw insert of a stored round's key is refused."""
    db = tmp_path / "audit.db"
    fake = _fake(video)
    run("0", n_stable=N_STABLE, audit=db, table_id="t1", progress=False, tile_detector=fake,
        pip_detector=fake, frames=_camera_frames(video, 0, 12))
    con = sqlite3.connect(str(db))
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        con.execute("INSERT INTO paigow_rounds SELECT seq + 1, 'r000009', table_id, time, "
                    "rules, model_version, alert_kinds, frame_file, frame_sha256, round_key, "
                    "payload, prev_hash, hash || 'x', mac FROM paigow_rounds WHERE seq = 1")
    con.close()
    assert len(_stored(db)) == 1


def test_two_processes_creating_one_new_store(tmp_path, monkeypatch):
    """The second of two writers starting on a new store at once looked before the first had
    created the schema, then failed with "table paigow_audit_meta already exists" once it got
    the write lock. Now it finds the schema inside its transaction and opens the store."""
    from vision.audit.backends import _SQLiteBackend

    db = tmp_path / "audit.db"
    AuditStore(db).close()  # the first process created it ...
    real = _SQLiteBackend.table_names
    looks = [0]

    def first_look_before_it(self):  # ... after the second one's first look
        looks[0] += 1
        return set() if looks[0] == 1 else real(self)

    monkeypatch.setattr(_SQLiteBackend, "table_names", first_look_before_it)
    with AuditStore(db) as st:
        assert st.schema_version == 2 and len(st) == 0
    assert looks[0] >= 2
    assert verify(db).ok


def test_a_recording_looped_on_purpose_is_new_rounds_each_pass(video, tmp_path):
    """``serve --loop`` / a pit table's demo video: each pass settles and stores its rounds
    again (the display goes on settling); a file read once is kept once (above)."""
    from vision.config import OutputConfig, PipelineConfig, RunConfig
    from vision.session import Session

    db = tmp_path / "audit.db"
    fake = _fake(video)
    n = len(SEEDS) * (4 + 12) + 4  # the video's frames (tests/test_run_audit.py): one pass
    cfg = RunConfig(str(video["path"]),
                    PipelineConfig.build(n_stable=N_STABLE, table_id="t1",
                                         source=str(video["path"])),
                    OutputConfig(audit=db, progress=False, max_frames=2 * n))
    s = Session(cfg, tile_detector=fake, pip_detector=fake, loop=True).run()
    assert s["audit"]["appended"] == 2 * len(SEEDS) and s["audit"]["already_recorded"] == 0
    assert [e["round_id"] for e in s["events"]] == [f"r{i:06d}" for i in range(1, 9)]
    assert verify(db).ok

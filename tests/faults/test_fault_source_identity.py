"""Fault: exactly-once lost when the same recording is named another way (issue 23, item 3;
issue 42, item 4). The store's round key took the typed path: ``run v.mp4`` then
``run /abs/v.mp4`` stored every round twice (the shift report doubled the house net); then it
took the resolved path, size and modification time, and a hard link or a byte copy of the
recording (another inode's path, another folder, another mtime) stored every round again
(4 -> 16 rounds, the house net x4). Now a file's ``source_id`` is its content -- its size and
its first and last MiB (:func:`vision.sources.source_id`) -- so one recording named six ways
stores its rounds once, and a file with another byte at either end or another size is another
source."""

from __future__ import annotations

import os
import pickle
import shutil

import pytest
from faultkit import N_STABLE, SEEDS, make_video

from vision.audit import AuditStore, verify
from vision.session import run
from vision.sources import IDENTITY_SPAN, source_id

pytestmark = [pytest.mark.faults, pytest.mark.timeout(300)]


@pytest.mark.slow  # seven runs of the four-deal video: about 20 s
def test_one_video_named_six_ways_stores_its_rounds_once(tmp_path, monkeypatch):
    (tmp_path / "v").mkdir()  # (the folder was missing: the video was never written and
    v = make_video(tmp_path / "v")  # this test skipped itself)
    with open(v["fake"], "rb") as f:
        fake = pickle.load(f)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(v["path"], work / "rounds.avi")
    (work / "link.avi").symlink_to(work / "rounds.avi")
    other = tmp_path / "elsewhere"
    other.mkdir()
    os.link(work / "rounds.avi", other / "hard.avi")          # another name, same inode
    shutil.copyfile(work / "rounds.avi", other / "copy.avi")  # another inode, same bytes
    os.utime(other / "copy.avi", ns=(1, 1))                   # ... and another mtime
    monkeypatch.chdir(work)
    db = tmp_path / "audit.db"
    kw = dict(n_stable=N_STABLE, audit=db, table_id="t1", progress=False, tile_detector=fake,
              pip_detector=fake)
    names = ["rounds.avi", str(work / "rounds.avi"), "link.avi", "./rounds.avi",
             str(other / "hard.avi"), str(other / "copy.avi")]
    first = run(names[0], **kw)
    assert first["audit"]["appended"] == len(SEEDS)
    for name in names[1:]:
        again = run(name, **kw)
        assert again["audit"]["appended"] == 0, name
        assert again["audit"]["already_recorded"] == len(SEEDS), name
    os.utime(work / "rounds.avi", ns=(5, 5))  # touched: still the same recording
    assert run("rounds.avi", **kw)["audit"]["appended"] == 0
    with AuditStore(db, create=False) as st:
        recs = list(st.rounds())
    assert len(recs) == len(SEEDS)
    assert len({r.payload["source_id"] for r in recs}) == 1
    assert verify(db).ok


def _ids(paths):
    return [source_id(str(p)) for p in paths]


def test_links_and_copies_share_an_id_other_content_does_not(tmp_path):
    """A 3 MiB file: a hard link, a copy in another folder with another mtime and a symlink
    have its id; a byte changed in the first MiB or in the last MiB, a byte appended or
    removed, give four other ids."""
    data = bytearray(os.urandom(3 * IDENTITY_SPAN + 12345))
    a = tmp_path / "a.mp4"
    a.write_bytes(data)
    (tmp_path / "d").mkdir()
    os.link(a, tmp_path / "d" / "hard.mp4")
    shutil.copyfile(a, tmp_path / "d" / "copy.mp4")
    os.utime(tmp_path / "d" / "copy.mp4", ns=(10**9, 10**9))
    (tmp_path / "sym.mp4").symlink_to(a)
    same = _ids([a, tmp_path / "d" / "hard.mp4", tmp_path / "d" / "copy.mp4",
                 tmp_path / "sym.mp4"])
    assert len(set(same)) == 1 and same[0].startswith("file-") and len(same[0]) == 21

    variants = {}
    for name, at in (("head", 100), ("tail", len(data) - 100)):
        b = bytearray(data)
        b[at] ^= 0xFF
        variants[name] = bytes(b)
    variants["longer"] = bytes(data) + b"\0"
    variants["shorter"] = bytes(data[:-1])
    paths = []
    for name, blob in variants.items():
        p = tmp_path / f"{name}.mp4"
        p.write_bytes(blob)
        os.utime(p, ns=(a.stat().st_atime_ns, a.stat().st_mtime_ns))  # same mtime as a
        paths.append(p)
    ids = _ids(paths)
    assert len(set(ids)) == len(ids) and same[0] not in ids, dict(zip(variants, ids))


def test_small_file_and_live_sources(tmp_path):
    """A file shorter than one span is hashed whole (a byte anywhere tells); a camera or a
    stream keeps its id of the redacted URL (the password never changes it)."""
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    a.write_bytes(b"x" * 5000)
    b.write_bytes(b"x" * 2500 + b"y" + b"x" * 2499)
    assert source_id(str(a)) != source_id(str(b))
    cam1 = source_id("rtsp://admin:one@cam7/live")
    assert cam1 == source_id("rtsp://admin:two@cam7/live") != source_id("rtsp://admin@cam8/live")
    assert cam1.startswith("live-") and source_id("0").startswith("live-")
    assert source_id("0") != source_id("1")

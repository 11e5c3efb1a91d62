"""Fault: the disk fills during a run (issue 10, item 4): the run died with a traceback, exit 1.
Now it ends with one line naming the cause and the file, exit code 2, and nothing committed is
lost: the store verifies and holds every round that was reported.

A real full disk where the machine allows it (a small tmpfs; needs root and mount), and
ENOSPC / SQLite's "database or disk is full" injected at each writer: the key frame, the
database commit, ``events.jsonl``."""

from __future__ import annotations

import errno
import json
import sqlite3
import subprocess

import pytest
from faultkit import N_STABLE, cli_child, make_video

import vision.recognition.engine
from vision.audit import AuditStore, verify
from vision.cli import main

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return make_video(tmp_path_factory.mktemp("full"))


def _check(db, printed, err, *, at_least=1):
    lines = [x for x in err.splitlines() if "paigow run: error:" in x]
    assert len(lines) == 1 and "disk full" in lines[0], err[-2000:]
    assert err.rstrip().splitlines()[-1] == lines[0]
    res = verify(db)
    assert res.ok, str(res)
    with AuditStore(db, create=False) as st:
        stored = [r.payload for r in st.rounds()]
    assert len(stored) >= at_least
    assert stored[:len(printed)] == printed  # every reported round is stored
    assert len(stored) <= len(printed) + 1   # at most the round whose report failed
    return stored


@pytest.fixture
def tmpfs(tmp_path):
    """A 300 KB tmpfs (skips where mounting is not allowed)."""
    m = tmp_path / "small"
    m.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(m)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()}); simulated below")
    yield m
    subprocess.run(["umount", "-l", str(m)], check=False)


def test_a_real_full_disk_ends_the_run_with_one_line(video, tmpfs):
    db, out = tmpfs / "audit.db", tmpfs / "out"
    proc = cli_child(video["fake"], ["run", video["path"], "--audit", db, "--out", out,
                                     "--json", "--stable", N_STABLE, "--no-progress"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    o, err = proc.communicate(timeout=200)
    assert proc.returncode == 2, err[-2000:]
    lines = [json.loads(x) for x in o.splitlines() if x.startswith("{")]
    printed = [x for x in lines if "error" not in x]
    assert lines[-1]["error"].startswith("disk full") and lines[-1]["exit_code"] == 2
    _check(db, printed, err)


def _run_in_process(video, tmp_path, monkeypatch, capsys):
    with open(video["fake"], "rb") as f:
        import pickle

        fake = pickle.load(f)
    monkeypatch.setattr(vision.recognition.engine, "load_detectors", lambda *a, **k: (fake, fake))
    db, out = tmp_path / "audit.db", tmp_path / "out"
    rc = main(["run", str(video["path"]), "--audit", str(db), "--out", str(out), "--json",
               "--stable", str(N_STABLE), "--no-progress"])
    cap = capsys.readouterr()
    lines = [json.loads(x) for x in cap.out.splitlines()]
    if rc == 2:  # under --json the error is the last line, as JSON
        assert lines[-1]["error"].startswith("disk full") and lines[-1]["exit_code"] == 2
        lines = lines[:-1]
    return rc, db, lines, cap.err


def _nth_call_fails(monkeypatch, owner, name, n, exc):
    real = getattr(owner, name)
    calls = [0]

    def wrapped(*a, **k):
        calls[0] += 1
        if calls[0] == n:
            raise exc
        return real(*a, **k)

    monkeypatch.setattr(owner, name, wrapped)


def test_enospc_writing_a_key_frame(video, tmp_path, monkeypatch, capsys):
    from vision.audit.store import AuditStore as Store

    _nth_call_fails(monkeypatch, Store, "_write_frame", 3,
                    OSError(errno.ENOSPC, "No space left on device", "frame.jpg"))
    rc, db, printed, err = _run_in_process(video, tmp_path, monkeypatch, capsys)
    assert rc == 2
    assert "frame.jpg" in err
    assert len(_check(db, printed, err)) == len(printed) == 2


def test_sqlite_full_at_commit(video, tmp_path, monkeypatch, capsys):
    from vision.audit.backends import _SQLiteBackend

    # commit 1 creates the schema; 2, 3 store rounds; the 4th (round 3) finds the disk full
    _nth_call_fails(monkeypatch, _SQLiteBackend, "commit", 4,
                    sqlite3.OperationalError("database or disk is full"))
    rc, db, printed, err = _run_in_process(video, tmp_path, monkeypatch, capsys)
    assert rc == 2
    assert str(db) in err
    assert len(_check(db, printed, err)) == len(printed) == 2
    assert not list((tmp_path / "audit.db.frames").glob("00000003_*.jpg"))  # rolled back


def test_enospc_writing_events_jsonl(video, tmp_path, monkeypatch, capsys):
    from vision.table.events import EventWriter

    real = EventWriter.write

    def write(self, event):  # the file of --out fills at its 3rd line; stdout goes on
        if self.path is not None and self.count == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, event)

    monkeypatch.setattr(EventWriter, "write", write)
    rc, db, printed, err = _run_in_process(video, tmp_path, monkeypatch, capsys)
    assert rc == 2
    assert "events.jsonl" in err
    stored = _check(db, printed, err)
    assert len(stored) == 3 and len(printed) == 2  # round 3 stored, its report failed
    lines = (tmp_path / "out" / "events.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == printed

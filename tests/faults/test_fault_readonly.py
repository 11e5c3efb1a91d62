"""Fault: ``paigow audit verify`` on read-only media said "is not an audit store (unable to
open database file)" (issue 10, item 6). Now verify opens the store read-only (SQLite
``mode=ro``; ``immutable=1`` where even the ``-shm`` index cannot be created) and never writes.

A real read-only bind mount where the machine allows it (root and mount); everywhere, the
connection is checked to be read-only and the file left byte for byte as it was."""

from __future__ import annotations

import os
import sqlite3
import subprocess

import pytest

from vision.audit import AuditStore, verify
from vision.cli import main

pytestmark = pytest.mark.faults


def _store(folder):
    import helpers.audit_events as audit_events

    db = folder / "audit.db"
    with AuditStore(db) as s:
        for i in range(1, 4):
            s.append(audit_events.make_event(i), frame=audit_events.jpeg(i))
    return db


@pytest.fixture
def read_only_copy(tmp_path):
    """The folder of a store, bind-mounted read-only (skips where mounting is not allowed)."""
    src, ro = tmp_path / "src", tmp_path / "ro"
    src.mkdir()
    ro.mkdir()
    _store(src)
    r = subprocess.run(["mount", "--bind", str(src), str(ro)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot bind-mount here ({r.stderr.strip()}); simulated below")
    try:
        r = subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], capture_output=True,
                           text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot remount read-only here ({r.stderr.strip()})")
        with pytest.raises(OSError):  # truly read-only, even for root
            (ro / "probe").write_text("x")
        yield ro / "audit.db"
    finally:
        subprocess.run(["umount", "-l", str(ro)], check=False)


def test_verify_on_a_read_only_mount(read_only_copy, capsys):
    assert main(["audit", "verify", str(read_only_copy)]) == 0
    assert "ok: 3 rounds" in capsys.readouterr().out
    assert main(["audit", "anchor", str(read_only_copy)]) == 0
    assert capsys.readouterr().out.strip().endswith(":3")


def test_verify_on_read_only_media_with_a_pending_wal_is_named(read_only_copy, tmp_path):
    """Commits still in a ``-wal`` file cannot be read where no ``-shm`` can be made: an error
    naming the file, never a silently shorter chain."""
    from scoring.errors import InputError

    # a copy whose WAL holds a commit (a writer killed before its checkpoint)
    src = tmp_path / "walsrc"
    src.mkdir()
    db = _store(src)
    import helpers.audit_events as audit_events

    with AuditStore(db) as s:
        s._db.conn.execute("PRAGMA wal_autocheckpoint=0")
        s.append(audit_events.make_event(9))
        # keep the WAL: copy the files while the writer is still open
        import shutil

        dst = tmp_path / "walcopy"
        dst.mkdir()
        for name in ("audit.db", "audit.db-wal"):
            shutil.copy(src / name, dst / name)
    assert (dst / "audit.db-wal").stat().st_size > 0
    ro = tmp_path / "walro"
    ro.mkdir()
    if subprocess.run(["mount", "--bind", str(dst), str(ro)]).returncode != 0:
        pytest.skip("cannot bind-mount here")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], check=True)
        try:
            res = verify(ro / "audit.db")  # SQLite may read the WAL without an index
            assert res.ok and res.rounds == 4  # ... and then it sees the 4th round
        except InputError as exc:
            assert "write-ahead log" in str(exc) and "audit.db-wal" in str(exc)
    finally:
        subprocess.run(["umount", "-l", str(ro)], check=False)


def test_verify_opens_read_only_and_writes_nothing(tmp_path, monkeypatch):
    """Wherever mounting is not allowed: a 0444 file in a 0555 folder (root ignores the modes,
    so ``os.access`` is made to answer as for another user), the connection opened with
    ``mode=ro``, and the file unchanged."""
    db = _store(tmp_path)
    before = db.read_bytes()
    os.chmod(db, 0o444)
    opened = []
    real = sqlite3.connect

    def connect(database, *a, **k):
        opened.append((str(database), bool(k.get("uri"))))
        return real(database, *a, **k)

    monkeypatch.setattr(sqlite3, "connect", connect)
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: not (mode & os.W_OK))
    try:
        res = verify(db)
    finally:
        os.chmod(db, 0o644)
    assert res.ok and res.rounds == 3
    assert opened and all(uri and "mode=ro" in name for name, uri in opened), opened
    assert db.read_bytes() == before
    assert not os.path.exists(str(db) + "-wal") or os.path.getsize(str(db) + "-wal") == 0

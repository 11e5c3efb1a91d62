"""Verifying an audit store: recompute the chain and name the first broken record."""

from __future__ import annotations

import hashlib
import json
import os

from scoring.errors import InputError

from .chain import GENESIS_HASH, VerifyResult, canonical_json
from .store import AuditStore



def verify(path_or_url: str | os.PathLike, *, check_frames: bool = True,
           frames_dir: str | os.PathLike | None = None, deep: bool = False) -> VerifyResult:
    """Recompute the hash chain of an audit store and name the first broken record.

    Checks per record, in chain order: the ids run 1, 2, 3... (a gap means a record was
    removed), ``prev_hash`` equals the previous record's ``hash``, the key frame exists and its
    SHA-256 matches (``check_frames``), ``hash`` equals :func:`record_hash` of the stored
    payload, and the indexed columns (round id, table id, time) agree with the payload: by
    default each column value must appear in the canonical payload as ``"key":value`` (a text
    search, fast); ``deep=True`` parses every payload, compares the top-level keys and checks the
    text is canonical (about 3x slower).

    Returns:
        :class:`VerifyResult` (``ok`` False names ``broken_seq`` and ``reason``).

    Raises:
        InputError: when the file does not exist, is not SQLite, is not an audit store, or the
            database itself is corrupt (SQLite cannot read its pages).

    Speed: about 100,000 rounds in a few seconds without frames (scripts/bench_audit.py).
    """
    with AuditStore(path_or_url, create=False, frames_dir=frames_dir) as store:
        try:
            return _verify_store(store, check_frames, deep)
        except store._db.errors as exc:
            raise InputError(f"audit store {store.label!r} is corrupt: {exc}") from None


def _verify_store(store: AuditStore, check_frames: bool, deep: bool = False) -> VerifyResult:
    db = store._db
    db.begin_read()  # one consistent snapshot while the writer goes on
    try:
        cur = db.execute(
            "SELECT seq, round_id, table_id, time, frame_file, frame_sha256, payload, "
            "prev_hash, hash FROM paigow_rounds ORDER BY seq")
        prev = GENESIS_HASH
        expected = 1
        n = 0
        frames_checked = 0
        named: set[str] = set()
        sha256 = hashlib.sha256
        loads = json.loads

        def broken(seq, rid, why):
            return VerifyResult(False, _count(db), prev, seq, rid, why, frames_checked)

        while True:
            rows = cur.fetchmany(2000)
            if not rows:
                break
            for seq, rid, tid, t, ffile, fsha, payload, prev_hash, h in rows:
                n += 1
                if seq != expected:
                    why = (f"record missing: expected id {expected}, found {seq} "
                           f"({seq - expected} record(s) removed)")
                    return broken(seq, rid, why)
                if prev_hash != prev:
                    why = (f"prev link broken: prev_hash {prev_hash[:16]}... does not match the "
                           f"hash {prev[:16]}... of record {seq - 1} (that record's hash or "
                           "this link was changed)")
                    return broken(seq, rid, why)
                if fsha or ffile:
                    if ffile:
                        named.add(ffile)
                    if check_frames:
                        fpath = (store.frames_dir / ffile) if store.frames_dir else None
                        if fpath is None or not ffile or not fpath.is_file():
                            return broken(seq, rid, f"frame missing: {fpath or ffile!s}")
                        with open(fpath, "rb") as f:
                            got = sha256(f.read()).hexdigest()
                        frames_checked += 1
                        if got != fsha:
                            return broken(seq, rid, f"frame changed: {fpath} has SHA-256 "
                                                    f"{got[:16]}..., record says {fsha[:16]}...")
                want = sha256((prev_hash + payload + fsha).encode("utf-8")).hexdigest()
                if want != h:
                    return broken(seq, rid, f"payload changed: recomputed hash {want[:16]}... "
                                            f"!= stored {h[:16]}...")
                if deep:
                    try:
                        obj = loads(payload)
                        ok_cols = [obj["round_id"] == rid, obj["table_id"] == tid,
                                   obj["time"] == t, canonical_json(obj) == payload]
                    except (ValueError, KeyError, TypeError, InputError):
                        return broken(seq, rid, "payload is not a round event")
                else:  # the canonical payload holds each column as "key":value (fast check)
                    ok_cols = [f'"{k}":{_json_str(v)}' in payload
                               for k, v in (("round_id", rid), ("table_id", tid), ("time", t))]
                if not all(ok_cols):
                    name = ("round_id", "table_id", "time", "canonical form")[ok_cols.index(False)]
                    return broken(seq, rid, f"column {name} differs from the payload")
                prev = h
                expected += 1
        orphans: list[str] = []
        if store.frames_dir is not None and store.frames_dir.is_dir():
            orphans = sorted(p.name for p in store.frames_dir.glob("*.jpg")
                             if p.name not in named)
        return VerifyResult(True, n, prev, frames_checked=frames_checked, orphan_frames=orphans)
    finally:
        db.rollback()


def _json_str(v) -> str:
    if isinstance(v, str) and v.isprintable() and '"' not in v and "\\" not in v:
        return '"' + v + '"'
    return json.dumps(v, ensure_ascii=False)


def _count(db) -> int:
    return int(db.execute("SELECT COUNT(*) FROM paigow_rounds").fetchone()[0])

"""Verifying an audit store: recompute the chain and name the first broken record (used by
:meth:`vision.audit.store.AuditStore.verify` and :func:`vision.audit.store.verify`)."""

from __future__ import annotations

import hashlib
import json

from scoring.errors import InputError

from .chain import CHAIN_PER_TABLE, GENESIS_HASH, VerifyResult, canonical_json

def verify_chain(store, check_frames: bool = True, deep: bool = False) -> VerifyResult:
    """Recompute the hash chain of an open :class:`vision.audit.store.AuditStore` (the checks
    of :func:`vision.audit.store.verify`) in one read snapshot."""
    db = store._db
    db.begin_read()  # one consistent snapshot while the writer goes on
    try:
        cur = db.stream(
            "SELECT seq, round_id, table_id, time, frame_file, frame_sha256, payload, "
            "prev_hash, hash FROM paigow_rounds ORDER BY seq")
        per_table = getattr(store, "chain", None) == CHAIN_PER_TABLE
        heads: dict[str, tuple[str, int]] = {}  # chain -> (hash, id) of its newest record
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
                link, link_seq = heads.get(tid if per_table else "", (GENESIS_HASH, 0))
                if prev_hash != link:
                    of = (f"of record {link_seq}" if link_seq else
                          "of the chain's start (genesis)")
                    why = (f"prev link broken: prev_hash {prev_hash[:16]}... does not match the "
                           f"hash {link[:16]}... {of} (that record's hash or this link was "
                           "changed)")
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
                heads[tid if per_table else ""] = (h, seq)
                expected += 1
        orphans: list[str] = []
        if store.frames_dir is not None and store.frames_dir.is_dir():
            orphans = sorted(p.name for p in store.frames_dir.glob("*.jpg")
                             if p.name not in named)
        return VerifyResult(True, n, prev, frames_checked=frames_checked, orphan_frames=orphans)
    finally:
        try:
            cur.close()
        except (*db.errors, NameError):
            pass
        db.rollback()


def _json_str(v) -> str:
    if isinstance(v, str) and v.isprintable() and '"' not in v and "\\" not in v:
        return '"' + v + '"'
    return json.dumps(v, ensure_ascii=False)


def _count(db) -> int:
    return int(db.execute("SELECT COUNT(*) FROM paigow_rounds").fetchone()[0])

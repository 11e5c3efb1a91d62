"""Verifying an audit store: recompute the chain and name the first broken record (used by
:meth:`vision.audit.store.AuditStore.verify` and :func:`vision.audit.store.verify`), and the
anchors kept outside the store (``paigow audit anchor``; docs/audit.md)."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from pathlib import Path

from scoring.errors import InputError

from vision.audit.chain import (CHAIN_PER_TABLE, HASHED_COLUMNS, VerifyResult, anchor_hash,
                    canonical_json, key_id, record_hash_v2, record_mac)

__all__ = ["verify_chain", "parse_anchors", "format_anchor"]

_ANCHOR = re.compile(r"^\s*([0-9a-f]{64}):(\d+)\s*$")
_FRAME_NAME = re.compile(r"^(\d{8})_[0-9a-f]{16}\.jpg$")
_KIND = re.compile(r'"kind":"([^"\\]*)"')


def format_anchor(head_hash: str, rounds: int) -> str:
    """The text form of an anchor, ``<head hash>:<record count>`` (what ``paigow audit
    anchor`` prints and ``verify --anchor`` reads)."""
    return f"{head_hash}:{int(rounds)}"


def parse_anchors(text: str) -> list[tuple[str, int]]:
    """Anchors from ``HASH:COUNT`` text, or from a file of them: one a line, either
    ``HASH:COUNT`` or the JSON object ``paigow audit anchor --json`` prints (``head_hash``,
    ``rounds``); blank lines and ``#`` comments skipped.

    Raises:
        InputError: naming the value or the file line that is neither.
    """
    m = _ANCHOR.match(text)
    if m:
        return [(m.group(1), int(m.group(2)))]
    p = Path(text)
    if not p.is_file():
        raise InputError(f"--anchor {text!r} is neither HASH:COUNT (64 hex digits, a colon, a "
                         "record count) nor an anchor file")
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read anchor file {text!r}: {exc}") from None
    out: list[tuple[str, int]] = []
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        m = _ANCHOR.match(s)
        if m:
            out.append((m.group(1), int(m.group(2))))
            continue
        try:
            obj = json.loads(s)
            h, c = obj["head_hash"], obj["rounds"]
            if not (isinstance(h, str) and re.fullmatch(r"[0-9a-f]{64}", h)
                    and isinstance(c, int) and not isinstance(c, bool) and c >= 0):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            raise InputError(f"anchor file {text!r} line {n}: neither HASH:COUNT nor an "
                             "anchor JSON object") from None
        out.append((h, c))
    if not out:
        raise InputError(f"anchor file {text!r} holds no anchor")
    return out


def verify_chain(store, check_frames: bool = True, deep: bool = False, *,
                 key: bytes | None = None, anchor=None,
                 allow_after: bool = False) -> VerifyResult:
    """Recompute the hash chain of an open :class:`vision.audit.store.AuditStore` (the checks
    of :func:`vision.audit.store.verify`) in one read snapshot."""
    db = store._db
    v2 = store.schema_version >= 2
    anchors: dict[int, str] = {}
    for h, c in ([anchor] if isinstance(anchor, tuple) else list(anchor or [])):
        if anchors.get(int(c), h) != h:
            raise InputError(f"two anchors for record {c} disagree")
        anchors[int(c)] = h
    notes: list[str] = []
    keyed = store.keyed
    if keyed and key is None:
        from vision.audit.keys import KEY_ENV

        notes.append(f"the store is keyed (key id {store.meta.get('key_id')}); without its key "
                     f"(${KEY_ENV} or --key-file) the MACs were not checked")
    db.begin_read()  # one consistent snapshot while the writer goes on
    try:
        genesis = store._genesis()
        cur = db.stream(f"SELECT {store._cols} FROM paigow_rounds ORDER BY seq")
        per_table = getattr(store, "chain", None) == CHAIN_PER_TABLE
        heads: dict[str, tuple[str, int]] = {}  # chain -> (hash, id) of its newest record
        prev = genesis
        anchored_at = {0: anchor_hash({}, genesis)} if 0 in anchors else {}
        expected = 1
        n = 0
        frames_checked = 0
        named: set[str] = set()
        sha256 = hashlib.sha256
        loads = json.loads

        def broken(seq, rid, why, suspect=None):
            return VerifyResult(False, _count(db), prev, seq, rid, why, frames_checked,
                                keyed=keyed, macs_checked=False, notes=notes,
                                suspect_seq=suspect or seq)

        while True:
            rows = cur.fetchmany(2000)
            if not rows:
                break
            for row in rows:
                (seq, rid, tid, t, rules, mv, kinds, ffile, fsha, rkey, payload, prev_hash, h,
                 mac) = row
                n += 1
                if seq != expected:
                    why = (f"record missing: expected id {expected}, found {seq} "
                           f"({seq - expected} record(s) removed)")
                    return broken(seq, rid, why)
                link, link_seq = heads.get(tid if per_table else "", (genesis, 0))
                if prev_hash != link:
                    if link_seq == 0 and v2:
                        why = (f"meta changed: the chain's first record is chained to "
                               f"{prev_hash[:16]}..., the meta tables now hash to "
                               f"{link[:16]}... (paigow_audit_meta or paigow_audit_schema was "
                               "edited, or the link was changed)")
                    else:
                        of = (f"of record {link_seq}" if link_seq else
                              "of the chain's start (genesis)")
                        why = (f"prev link broken: prev_hash {prev_hash[:16]}... does not match "
                               f"the hash {link[:16]}... {of} (that record's hash or this link "
                               "was changed)")
                    # record link_seq may have been edited and rehashed: not trusted either
                    return broken(seq, rid, why, suspect=link_seq or None)
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
                bad = _column_mismatch(payload, rid, tid, t, rules, mv, kinds, rkey, v2, deep,
                                       loads)
                if bad:
                    return broken(seq, rid, bad)
                if v2:
                    want = _hash_v2(seq, rid, tid, t, rules, mv, kinds, ffile, fsha, rkey,
                                    payload, prev_hash)
                else:
                    want = sha256((prev_hash + payload + fsha).encode("utf-8")).hexdigest()
                if want != h:
                    what = "record changed (payload or a column)" if v2 else "payload changed"
                    return broken(seq, rid, f"{what}: recomputed hash {want[:16]}... "
                                            f"!= stored {h[:16]}...")
                if key is not None and not hmac.compare_digest(mac or "", record_mac(key, h)):
                    why = ("MAC missing" if not mac else "MAC mismatch") + \
                        ": the record was written or changed without the store's key"
                    if store.meta.get("key_id") not in (None, key_id(key)):
                        why += (f" (or the key given, id {key_id(key)}, is not the store's, "
                                f"id {store.meta['key_id']})")
                    return broken(seq, rid, why)
                prev = h
                heads[tid if per_table else ""] = (h, seq)
                if seq in anchors:
                    anchored_at[seq] = anchor_hash({c: v[0] for c, v in heads.items()},
                                                   genesis)
                expected += 1
        orphans: list[str] = []
        if store.frames_dir is not None and store.frames_dir.is_dir():
            orphans = sorted(p.name for p in store.frames_dir.glob("*.jpg")
                             if p.name not in named)
        beyond = sorted({int(m.group(1)) for m in map(_FRAME_NAME.match, orphans)
                         if m and int(m.group(1)) > n + 1})
        if beyond:
            return VerifyResult(
                False, n, prev, beyond[0], None,
                f"records removed from the end: key frames of record(s) "
                f"{', '.join(map(str, beyond[:5]))} exist, the store ends at record {n} (or an "
                "import of several rounds at once was interrupted)", frames_checked,
                orphans, keyed=keyed, notes=notes)
        checked = None
        for c in sorted(anchors):
            want = anchors[c]
            checked = {"head_hash": want, "rounds": c}
            if c > n:
                return VerifyResult(
                    False, n, prev, n + 1, None,
                    f"shorter than the anchor: the store holds {n} record(s), the anchor "
                    f"{want[:16]}...:{c} names {c} (records removed from the end)",
                    frames_checked, orphans, keyed=keyed, anchor=checked, notes=notes)
            if anchored_at[c] != want:
                return VerifyResult(
                    False, n, prev, c, None,
                    f"differs from the anchor: up to record {c} the chains' heads hash to "
                    f"{anchored_at[c][:16]}..., the anchor says {want[:16]}... (the store was "
                    "rewritten, or is another one)",
                    frames_checked, orphans, keyed=keyed, anchor=checked, notes=notes,
                    suspect_seq=1)  # the rewrite may lie anywhere up to record c
        if anchors and n > max(anchors):
            after = n - max(anchors)
            if not allow_after:
                return VerifyResult(
                    False, n, prev, max(anchors) + 1, None,
                    f"longer than the anchor: {after} record(s) after anchored record "
                    f"{max(anchors)} (appended since the anchor was taken; --allow-after "
                    "accepts them)", frames_checked, orphans, keyed=keyed, anchor=checked,
                    notes=notes)
            notes.append(f"{after} record(s) after the anchor are covered by the chain only")
        return VerifyResult(True, n, prev, frames_checked=frames_checked, orphan_frames=orphans,
                            keyed=keyed, macs_checked=key is not None, anchor=checked,
                            notes=notes)
    finally:
        try:
            cur.close()
        except (*db.errors, NameError):
            pass
        db.rollback()


def _hash_v2(*values) -> str:
    return record_hash_v2(dict(zip(HASHED_COLUMNS, values)))


def _column_mismatch(payload, rid, tid, t, rules, mv, kinds, rkey, v2, deep, loads) -> str | None:
    """Why the indexed columns disagree with the payload, or None."""
    cols = [("round_id", rid), ("table_id", tid), ("time", t)]
    if v2:
        cols += [("rules", rules), ("model_version", mv)]
    if deep:
        try:
            obj = loads(payload)
            if canonical_json(obj) != payload:
                return "column canonical form differs from the payload"
            for k, v in cols:
                got = obj.get(k)
                if (str(got) if got is not None else None) != v:
                    return f"column {k} differs from the payload"
            got_kinds = ",".join(sorted({a["kind"] for a in obj.get("alerts") or []}))
            # (a looped replay's key also names its pass: not recomputable from the payload)
        except (ValueError, KeyError, TypeError, AttributeError, InputError):
            return "payload is not a round event"
    else:  # the canonical payload holds each column as "key":value (fast check)
        for k, v in cols:
            if v is None and f'"{k}":' not in payload:
                continue  # an absent key is stored as NULL
            if f'"{k}":{_json_str(v)}' not in payload:
                return f"column {k} differs from the payload"
        got_kinds = ",".join(sorted(set(_KIND.findall(payload))))
        if got_kinds != kinds:  # "kind" is also an entry's own key: look closer
            try:
                obj = loads(payload)
                got_kinds = ",".join(sorted({a["kind"] for a in obj.get("alerts") or []}))
            except (ValueError, KeyError, TypeError, AttributeError):
                return "payload is not a round event"
    if got_kinds != kinds:
        return "column alert_kinds differs from the payload"
    return None


def _json_str(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, str) and v.isprintable() and '"' not in v and "\\" not in v:
        return '"' + v + '"'
    return json.dumps(v, ensure_ascii=False)


def _count(db) -> int:
    return int(db.execute("SELECT COUNT(*) FROM paigow_rounds").fetchone()[0])

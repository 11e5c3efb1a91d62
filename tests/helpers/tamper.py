"""What an insider can do to an SQLite audit store file (drop its guards, run any SQL,
recompute the hash chain without the key, append a forged record): shared by
tests/test_audit_tamper.py and tests/faults/test_fault_tamper.py."""

from __future__ import annotations

import json
import sqlite3

from helpers.audit_events import make_event

from vision.audit import canonical_json
from vision.audit.chain import HASHED_COLUMNS, meta_hash, record_hash_v2, round_key

#: The store's guards against UPDATE and DELETE.
TRIGGERS = ("paigow_rounds_no_update", "paigow_rounds_no_delete",
            "paigow_audit_meta_no_update", "paigow_audit_meta_no_delete")


def sql(path, *statements) -> None:
    """Drop the guards and run each statement (text, or ``(text, parameters)``)."""
    con = sqlite3.connect(str(path), isolation_level=None)
    for t in TRIGGERS:
        con.execute(f"DROP TRIGGER IF EXISTS {t}")
    for st in statements:
        con.execute(*st) if isinstance(st, tuple) else con.execute(st)
    con.close()


def rows(path) -> tuple[list[dict], str]:
    """``(every record as a dict by seq, the hash record 1 chains to: the meta table's)``."""
    con = sqlite3.connect(str(path))
    con.row_factory = sqlite3.Row
    out = [dict(r) for r in con.execute("SELECT * FROM paigow_rounds ORDER BY seq")]
    meta = dict(con.execute("SELECT key, value FROM paigow_audit_meta").fetchall())
    schema = con.execute("SELECT version, applied_at FROM paigow_audit_schema").fetchall()
    con.close()
    return out, meta_hash(meta, schema)


def rechain(path, from_seq: int = 1) -> None:
    """Every hash and link from ``from_seq`` on recomputed, as an insider without the key can
    (the MACs stay as they were)."""
    records, prev = rows(path)
    statements = []
    for r in records:
        if r["seq"] >= from_seq:
            r["prev_hash"] = prev
            r["hash"] = record_hash_v2({c: r[c] for c in HASHED_COLUMNS})
            statements.append(("UPDATE paigow_rounds SET prev_hash = ?, hash = ? WHERE seq = ?",
                               (r["prev_hash"], r["hash"], r["seq"])))
        prev = r["hash"]
    sql(path, *statements)


def edited_payload(path, seq: int, change) -> str:
    """Record ``seq``'s payload after ``change(payload dict)``, as canonical JSON."""
    records, _ = rows(path)
    p = json.loads(next(r for r in records if r["seq"] == seq)["payload"])
    change(p)
    return canonical_json(p)


def forge(path, seq: int, **event) -> None:
    """Append a well-formed record ``seq`` (``make_event(seq, **event)``, consistent columns,
    linked to the head by :func:`rechain`)."""
    ev = dict(make_event(seq, **event), alerts=[])
    sql(path, ("INSERT INTO paigow_rounds (seq, round_id, table_id, time, rules, model_version, "
               "alert_kinds, frame_file, frame_sha256, round_key, payload, prev_hash, hash, mac) "
               "VALUES (?, ?, ?, ?, ?, ?, '', '', '', ?, ?, '', ?, ?)",
               (seq, ev["round_id"], ev["table_id"], ev["time"], ev["rules"],
                ev["model_version"], round_key(ev), canonical_json(ev), f"forged{seq}",
                "f" * 64)))
    rechain(path, seq)

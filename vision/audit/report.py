"""The shift report for the surveillance room: every stored round of a period (settled or not,
with the reasons), the alerts and whether they were acknowledged, the dealer's house-way
deviations and the house net, each round's key frame, and the game pace per table
(:mod:`~vision.audit.pace`) -- as a dict (this module), CSV (:mod:`~vision.audit.report_csv`)
or a printable HTML page (:mod:`~vision.audit.report_html`, its pictures
:mod:`~vision.audit.report_media`) (``paigow audit report``; docs/payouts.md, shift report).

:func:`stored_rounds` is the one reading of the store's records as rounds that this module and
:mod:`vision.audit.payouts` share: a round is its camera record, plus the newest manual record
of it (a supervisor's entry, :mod:`vision.audit.entries`; then the round's settlement is the
manual one, marked as such; every earlier entry and correction is kept for the report, who and
when) and its acknowledgements (of the camera's alerts too, which stay after an entry). Money
is exact decimal text. ``paigow audit report`` verifies the store first
(:mod:`vision.audit.integrity`) and passes the result in (``verified``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from scoring.settle import POSITIONS

from vision.audit.chain import AuditRecord, VerifyResult, parse_time
from vision.audit.entries import KIND_ACK, KIND_MANUAL, record_kind
from vision.audit.store import AuditStore

__all__ = ["StoredRound", "stored_rounds", "shift_report", "seat_text", "alert_text",
           "manual_text", "REPORT_FORMATS"]

REPORT_FORMATS = ("csv", "html")


@dataclass
class StoredRound:
    """One round of one table as the store holds it.

    Attributes:
        camera: the camera's record (the round event as the pipeline produced it).
        manual: the newest manual record of the round (a supervisor's entry), or None.
        acks: acknowledgement records of its alerts, in store order.
        manuals: every manual record of the round (entries and corrections), in store order
            (the last is ``manual``).
    """

    camera: AuditRecord
    manual: AuditRecord | None = None
    acks: list[AuditRecord] = field(default_factory=list)
    manuals: list[AuditRecord] = field(default_factory=list)

    @property
    def event(self) -> dict:
        """The round's settlement: the manual record's event when there is one."""
        return (self.manual or self.camera).payload

    @property
    def table_id(self) -> str:
        """The round's table."""
        return self.camera.table_id

    @property
    def round_id(self) -> str:
        """The round's id (unique per table)."""
        return self.camera.round_id

    @property
    def time(self) -> str:
        """The round's time (the camera's), ISO-8601."""
        return self.camera.time

    @property
    def seq(self) -> int:
        """The camera record's id (store order)."""
        return self.camera.seq

    @property
    def last_seq(self) -> int:
        """The newest record id the round draws on (camera, manual and ack records)."""
        return max([self.camera.seq] + [r.seq for r in self.manuals + self.acks])

    @property
    def alerts(self) -> list[dict]:
        """The round's alerts: the camera record's, then those the manual records added (one
        per ``(kind, position)`` not already there). An alert the camera raised stays after a
        supervisor's entry cleared it (an unread tile entered by hand): its acknowledgement
        is evidence too."""
        out = [dict(a) for a in self.camera.payload.get("alerts") or []]
        seen = {(a.get("kind"), a.get("position")) for a in out}
        for m in self.manuals:
            for a in m.payload.get("alerts") or []:
                k = (a.get("kind"), a.get("position"))
                if k not in seen:
                    seen.add(k)
                    out.append(dict(a))
        return out

    def acknowledged(self, kind: str, position) -> list[dict]:
        """The acknowledgements (``ack`` blocks) of the alert ``(kind, position)``."""
        return [a.payload["ack"] for a in self.acks
                if (a.payload["ack"]["alert"].get("kind"),
                    a.payload["ack"]["alert"].get("position")) == (kind, position)]


def _open(db, frames_dir=None) -> tuple[AuditStore, bool]:
    if isinstance(db, AuditStore):
        return db, False
    return AuditStore(db, create=False, read_only=True, frames_dir=frames_dir), True


def stored_rounds(db: "AuditStore | str | os.PathLike", *, table: str | None = None,
                  start: str | datetime | None = None, end: str | datetime | None = None,
                  upto: int | None = None) -> list[StoredRound]:
    """The store's rounds in store order (camera record order), manual entries and
    acknowledgements attached to their rounds.

    Args:
        db: an open store or its path / URL (opened read-only).
        table: only this table's rounds.
        start, end: only rounds with ``start <= time < end`` (ISO-8601 text or aware
            datetimes; compared as instants).
        upto: only records with id ``<= upto`` (the records a verification covered,
            :attr:`vision.audit.VerifyResult.rounds`; None: every record).

    Raises:
        InputError: the store cannot be opened; a bad ``start`` / ``end``.
    """
    t0 = parse_time(start, "--from") if isinstance(start, str) else start
    t1 = parse_time(end, "--to") if isinstance(end, str) else end
    store, own = _open(db)
    try:
        records = [r for r in store.rounds(table_id=table) if upto is None or r.seq <= upto]
    finally:
        if own:
            store.close()
    rounds: dict[tuple[str, str, datetime], StoredRound] = {}
    later: list[tuple[AuditRecord, str, datetime]] = []
    for r in records:
        kind = record_kind(r.payload)
        if kind == "round":
            key = (r.table_id, r.round_id, parse_time(r.time, f"time of record {r.seq}"))
            rounds.setdefault(key, StoredRound(r))
        else:
            block = r.payload.get("manual" if kind == KIND_MANUAL else "ack") or {}
            later.append((r, kind, parse_time(block.get("round_time") or r.time,
                                              f"round time of record {r.seq}")))
    for r, kind, t in later:
        sr = rounds.get((r.table_id, r.round_id, t))
        if sr is None:  # names a round the store does not hold: shown by verify, not here
            continue
        if kind == KIND_MANUAL:
            sr.manual = r  # store order: the newest wins
            sr.manuals.append(r)
        elif kind == KIND_ACK:
            sr.acks.append(r)
    out = []
    for (_, _, t), sr in rounds.items():
        if (t0 is not None and t < t0) or (t1 is not None and t >= t1):
            continue
        out.append(sr)
    return out


def _manual_history(sr: StoredRound) -> list[dict]:
    """Each manual record of the round: who, when, and the faces it entered or changed."""
    out, before = [], {}
    for m in sr.manuals:
        block = m.payload.get("manual") or {}
        entries = [dict(e) for e in block.get("entries") or []]
        new = [e for e in entries if before.get(int(e["tile"])) != e.get("face")]
        out.append({"record": m.seq, "time": m.time, "by": block.get("by"),
                    "correction": bool(block.get("correction")),
                    "supersedes": block.get("supersedes"), "entries": new,
                    "superseded": list(block.get("superseded") or [])})
        before = {int(e["tile"]): e.get("face") for e in entries}
    return out


def _round_row(sr: StoredRound) -> dict:
    ev = sr.event
    positions = ev.get("positions") or {}
    seats = {}
    for pos in sorted(positions, key=lambda p: POSITIONS.index(p) if p in POSITIONS else 99):
        p = positions[pos] or {}
        seats[pos] = {"role": p.get("role"), "result": p.get("result"), "bet": p.get("bet"),
                      "net": p.get("net"), "high": p.get("high"), "low": p.get("low"),
                      "is_house_way": p.get("is_house_way"), "reason": p.get("reason")}
    alerts = []
    for a in sr.alerts:
        acks = sr.acknowledged(a.get("kind"), a.get("position"))
        alerts.append({"kind": a.get("kind"), "position": a.get("position"),
                       "detail": a.get("detail"), "acknowledged": bool(acks),
                       "acknowledged_at": None,
                       "acknowledged_by": acks[0].get("by") if acks else None})
    for ack in sr.acks:  # when: the ack record's own time
        al = ack.payload["ack"]["alert"]
        for a in alerts:
            if (a["kind"], a["position"]) == (al.get("kind"), al.get("position")) and \
                    a["acknowledged_at"] is None:
                a["acknowledged_at"] = ack.time
    deviations = [a for a in alerts if a["kind"] == "house_way_deviation"]
    bank = ev.get("bank") or {}
    manual = ev.get("manual") if sr.manual is not None else None
    frame = sr.camera.frame_path
    key_frame = ({"record": sr.seq, "path": str(frame), "sha256": sr.camera.frame_sha256}
                 if frame is not None else None)
    return {"table_id": sr.table_id, "round_id": sr.round_id, "time": sr.time,
            "record": sr.seq, "key_frame": key_frame,
            "settled": bool(ev.get("settled", bool(bank))),
            "settled_by": "manual" if sr.manual is not None else "camera",
            "manual_entries": list((manual or {}).get("entries") or []),
            "manual_history": _manual_history(sr),
            "camera_reason": sr.camera.payload.get("reason") if sr.manual is not None else None,
            "reason": ev.get("reason"), "house_net": bank.get("house_net"),
            "commission_total": bank.get("commission_total"), "positions": seats,
            "alerts": alerts, "house_way_deviations": deviations}


def shift_report(db: "AuditStore | str | os.PathLike", *, start: str | None = None,
                 end: str | None = None, table: str | None = None,
                 verified: VerifyResult | None = None,
                 frames_dir: "str | os.PathLike | None" = None) -> dict:
    """The shift report of ``start <= time < end`` (optionally one table).

    Args:
        db: an open store or its path / URL.
        start, end, table: the period and table (see :func:`stored_rounds`).
        verified: the store's verification made just before
            (:func:`vision.audit.integrity.verify_before_read`): when ok, only the records
            it covered are read; when broken (read with ``--force``), the report carries
            ``store_broken`` and marks every row that draws on a record from
            :attr:`~vision.audit.VerifyResult.marked_from` on. None: not verified here.
        frames_dir: the store's key-frame folder (default ``<db>.frames``; a path or URL
            ``db`` only).

    Returns:
        ``{"store", "from", "to", "table", "rounds": [row], "totals": {"rounds", "settled",
        "not_settled", "manual", "alerts", "acknowledged", "house_way_deviations",
        "house_net", "commission_total"}, "pace": game pace}`` (the pace:
        :func:`vision.audit.pace.game_pace` of the rows); a row is ``{"table_id", "round_id",
        "time", "record", "key_frame" (the camera record's key frame: ``{"record", "path"
        (absolute), "sha256"}``, or None), "settled", "settled_by" ("camera" | "manual"),
        "manual_entries",
        "manual_history": [{"record", "time", "by", "correction", "supersedes", "entries"
        (those this record entered or changed), "superseded"}], "camera_reason" (why the
        camera's record did not settle, when settled by hand), "reason", "house_net",
        "commission_total", "positions": {pos: {"role", "result", "bet", "net", "high", "low",
        "is_house_way", "reason"}}, "alerts": [{"kind", "position", "detail", "acknowledged",
        "acknowledged_at", "acknowledged_by"}] (the camera's alerts and those the manual
        records added), "house_way_deviations": [alerts]}``, store order. A broken store read
        anyway adds ``"store_broken": {"record", "round_id", "reason", "marked_from",
        "header"}`` and to every row ``"after_break"`` (True when a record the row draws on --
        camera, manual or ack -- is ``marked_from`` or later).

    Raises:
        InputError: the store cannot be opened; bad times.
    """
    broken = verified is not None and not verified.ok
    upto = verified.rounds if verified is not None and verified.ok else None
    store, own = _open(db, frames_dir)
    try:
        label = store.label
        srs = stored_rounds(store, table=table, start=start, end=end, upto=upto)
        rows = [_round_row(sr) for sr in srs]
    finally:
        if own:
            store.close()
    house = sum((Decimal(r["house_net"]) for r in rows if r["house_net"] is not None),
                Decimal(0))
    comm = sum((Decimal(r["commission_total"]) for r in rows
                if r["commission_total"] is not None), Decimal(0))
    totals = {"rounds": len(rows), "settled": sum(r["settled"] for r in rows),
              "not_settled": sum(not r["settled"] for r in rows),
              "manual": sum(r["settled_by"] == "manual" for r in rows),
              "alerts": sum(len(r["alerts"]) for r in rows),
              "acknowledged": sum(a["acknowledged"] for r in rows for a in r["alerts"]),
              "house_way_deviations": sum(len(r["house_way_deviations"]) for r in rows),
              "house_net": str(house), "commission_total": str(comm)}
    from vision.audit.pace import game_pace

    rep = {"store": label, "from": start, "to": end, "table": table, "rounds": rows,
           "totals": totals, "pace": game_pace(rows)}
    if broken:
        from vision.audit.integrity import broken_block

        rep["store_broken"] = broken_block(verified)
        for r, sr in zip(rows, srs):
            r["after_break"] = sr.last_seq >= verified.marked_from
    return rep


def seat_text(pos: str, p: dict) -> str:
    """One position of a report row as text, e.g. ``"seat 1 win 0.95"``, ``"dealer bank -1"``."""
    name = "dealer" if pos == "dealer" else f"seat {pos}"
    res = p.get("result") or ("bank" if p.get("role") == "banker" else "-")
    net = p.get("net")
    return f"{name} {res}" + (f" {net}" if net is not None else "")


def alert_text(a: dict) -> str:
    """One alert of a report row as text, e.g. ``"mis_set at 3 (acknowledged by badge 4411
    at 2026-11-30T22:41:00.000Z)"``."""
    where = f" at {a['position']}" if a.get("position") else ""
    if not a["acknowledged"]:
        return f"{a['kind']}{where}"
    who = "".join(f" {w} {v}" for w, v in (("by", a.get("acknowledged_by")),
                                           ("at", a.get("acknowledged_at"))) if v)
    return f"{a['kind']}{where} (acknowledged{who})"


def manual_text(h: dict, camera: bool = False) -> str:
    """One manual record of a report row (``manual_history``) as text, e.g. ``"tile 0 at
    dealer: 6-6 (entered by sup-7 at 2026-...Z)"`` or, for a correction, ``"tile 0 at dealer:
    5-5 (corrected by sup-9 at 2026-...Z; was 6-6)"``; ``camera``: also what the camera had
    read (``"; camera: unknown"``)."""
    was = {int(e["tile"]): e.get("face") for e in h.get("superseded") or []}
    what = "corrected" if h.get("correction") else "entered"
    who = "".join(f" {w} {v}" for w, v in (("by", h.get("by")), ("at", h.get("time"))) if v)
    parts = []
    for e in h.get("entries") or []:
        prev = was.get(int(e["tile"]))
        cam = (e.get("camera") or {}).get("state") if camera else None
        parts.append(f"tile {e['tile']} at {e['position']}: {e['face']} ({what}{who}"
                     + (f"; was {prev}" if prev else "") + (f"; camera: {cam}" if cam else "")
                     + ")")
    return "; ".join(parts)

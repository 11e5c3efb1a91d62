"""The shift report for the surveillance room: every stored round of a period (settled or not,
with the reasons), the alerts and whether they were acknowledged, the dealer's house-way
deviations and the house net -- as a dict (this module), CSV (:mod:`~vision.audit.report_csv`)
or a printable HTML page (:mod:`~vision.audit.report_html`) (``paigow audit report``;
docs/payouts.md, shift report).

:func:`stored_rounds` is the one reading of the store's records as rounds that this module and
:mod:`vision.audit.payouts` share: a round is its camera record, plus the newest manual record
of it (a supervisor's entry, :mod:`vision.audit.entries`; then the round's settlement is the
manual one, marked as such) and its acknowledgements. Money is exact decimal text.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from scoring.settle import POSITIONS

from vision.audit.chain import AuditRecord, parse_time
from vision.audit.entries import KIND_ACK, KIND_MANUAL, record_kind
from vision.audit.store import AuditStore

__all__ = ["StoredRound", "stored_rounds", "shift_report", "seat_text", "alert_text",
           "REPORT_FORMATS"]

REPORT_FORMATS = ("csv", "html")


@dataclass
class StoredRound:
    """One round of one table as the store holds it.

    Attributes:
        camera: the camera's record (the round event as the pipeline produced it).
        manual: the newest manual record of the round (a supervisor's entry), or None.
        acks: acknowledgement records of its alerts, in store order.
    """

    camera: AuditRecord
    manual: AuditRecord | None = None
    acks: list[AuditRecord] = field(default_factory=list)

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

    def acknowledged(self, kind: str, position) -> list[dict]:
        """The acknowledgements (``ack`` blocks) of the alert ``(kind, position)``."""
        return [a.payload["ack"] for a in self.acks
                if (a.payload["ack"]["alert"].get("kind"),
                    a.payload["ack"]["alert"].get("position")) == (kind, position)]


def _open(db) -> tuple[AuditStore, bool]:
    if isinstance(db, AuditStore):
        return db, False
    return AuditStore(db, create=False), True


def stored_rounds(db: "AuditStore | str | os.PathLike", *, table: str | None = None,
                  start: str | datetime | None = None, end: str | datetime | None = None
                  ) -> list[StoredRound]:
    """The store's rounds in store order (camera record order), manual entries and
    acknowledgements attached to their rounds.

    Args:
        db: an open store or its path / URL.
        table: only this table's rounds.
        start, end: only rounds with ``start <= time < end`` (ISO-8601 text or aware
            datetimes; compared as instants).

    Raises:
        InputError: the store cannot be opened; a bad ``start`` / ``end``.
    """
    t0 = parse_time(start, "--from") if isinstance(start, str) else start
    t1 = parse_time(end, "--to") if isinstance(end, str) else end
    store, own = _open(db)
    try:
        records = list(store.rounds(table_id=table))
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
        elif kind == KIND_ACK:
            sr.acks.append(r)
    out = []
    for (_, _, t), sr in rounds.items():
        if (t0 is not None and t < t0) or (t1 is not None and t >= t1):
            continue
        out.append(sr)
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
    for a in ev.get("alerts") or []:
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
    return {"table_id": sr.table_id, "round_id": sr.round_id, "time": sr.time,
            "record": sr.seq, "settled": bool(ev.get("settled", bool(bank))),
            "settled_by": "manual" if sr.manual is not None else "camera",
            "manual_entries": list((manual or {}).get("entries") or []),
            "camera_reason": sr.camera.payload.get("reason") if sr.manual is not None else None,
            "reason": ev.get("reason"), "house_net": bank.get("house_net"),
            "commission_total": bank.get("commission_total"), "positions": seats,
            "alerts": alerts, "house_way_deviations": deviations}


def shift_report(db: "AuditStore | str | os.PathLike", *, start: str | None = None,
                 end: str | None = None, table: str | None = None) -> dict:
    """The shift report of ``start <= time < end`` (optionally one table).

    Returns:
        ``{"store", "from", "to", "table", "rounds": [row], "totals": {"rounds", "settled",
        "not_settled", "manual", "alerts", "acknowledged", "house_way_deviations",
        "house_net", "commission_total"}}``; a row is ``{"table_id", "round_id", "time",
        "record", "settled", "settled_by" ("camera" | "manual"), "manual_entries",
        "camera_reason" (why the camera's record did not settle, when settled by hand),
        "reason", "house_net", "commission_total", "positions": {pos: {"role", "result",
        "bet", "net", "high", "low", "is_house_way", "reason"}}, "alerts": [{"kind",
        "position", "detail", "acknowledged", "acknowledged_at", "acknowledged_by"}],
        "house_way_deviations": [alerts]}``, store order.

    Raises:
        InputError: the store cannot be opened; bad times.
    """
    store, own = _open(db)
    try:
        label = store.label
        rows = [_round_row(sr) for sr in stored_rounds(store, table=table, start=start,
                                                       end=end)]
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
    return {"store": label, "from": start, "to": end, "table": table, "rounds": rows,
            "totals": totals}


def seat_text(pos: str, p: dict) -> str:
    """One position of a report row as text, e.g. ``"seat 1 win 0.95"``, ``"dealer bank -1"``."""
    name = "dealer" if pos == "dealer" else f"seat {pos}"
    res = p.get("result") or ("bank" if p.get("role") == "banker" else "-")
    net = p.get("net")
    return f"{name} {res}" + (f" {net}" if net is not None else "")


def alert_text(a: dict) -> str:
    """One alert of a report row as text, e.g. ``"mis_set at 3 (acknowledged)"``."""
    where = f" at {a['position']}" if a.get("position") else ""
    return f"{a['kind']}{where}" + (" (acknowledged)" if a["acknowledged"] else "")

"""Game pace of a shift report (``paigow audit report``; docs/payouts.md, game pace): per
table, the rounds per hour, the median time of a round, and the share of rounds settled by
the camera, by hand (a supervisor's manual entry, :mod:`vision.audit.entries`) and not at
all -- computed from the report's rows (:func:`vision.audit.report.shift_report`), i.e. from
the times stored in the audit store.

What the stored times allow: a round event carries one time, when the round's frame was
processed (the settlement, or the moment the round closed unsettled); it carries neither the
time the tiles were dealt nor a dealer id (docs/round-event.md). So

* a round's length (``median_round_s``) is measured from the table's previous round to this
  one (settlement to settlement: the table cleared, the next deal dealt, set and settled) --
  the deal-to-settlement time plus the clearing; a table's first round of the period has
  none;
* the pace is per table only (no figure per dealer; the report says so).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from datetime import datetime, timedelta

from vision.audit.chain import parse_time

__all__ = ["game_pace", "PER_DEALER_NOTE"]

PER_DEALER_NOTE = ("the round events carry no dealer id (docs/round-event.md): pace is given "
                   "per table only")
"""Why the report has no per-dealer pace."""


def _hour(t: datetime) -> datetime:
    return t.replace(minute=0, second=0, microsecond=0)


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="seconds").replace("+00:00", "Z")


def game_pace(rows: list[dict]) -> dict:
    """The game pace of a report's rows.

    Args:
        rows: :func:`vision.audit.report.shift_report` rows (``table_id``, ``time`` ISO-8601,
            ``settled``, ``settled_by``, ``manual_history`` with each manual record's
            ``time``), any order.

    Returns:
        ``{"tables": {table_id: {"rounds", "first", "last" (ISO-8601 UTC), "span_s",
        "rounds_per_hour" (float: ``3600 * (rounds - 1) / span_s``, the rate of rounds
        between the table's first and last round; None under two rounds or a zero span),
        "median_round_s" (float: median seconds from the table's previous round to each round,
        settlement to settlement; None under two rounds), "settled_camera",
        "settled_manual", "not_settled" (counts), "share_camera", "share_manual",
        "share_not_settled" (fractions of ``rounds``, summing to 1), "median_manual_delay_s"
        (float: median seconds from the camera's record to the first manual record of each
        round settled by hand; None when none)}}, "hourly": {table_id: [[hour start
        ISO-8601 UTC, rounds whose time falls in that clock hour], ...] (every hour from the
        table's first to its last, zeros included)}, "per_dealer": None, "note":
        PER_DEALER_NOTE}``; tables sorted by id. Seconds are floats (milliseconds exact).

    Raises:
        InputError: a row whose time is not ISO-8601 (the store's own times always are).
    """
    by_table: dict[str, list[tuple[datetime, dict]]] = defaultdict(list)
    for r in rows:
        by_table[str(r["table_id"])].append((parse_time(r["time"], "round time"), r))
    tables, hourly = {}, {}
    for tid in sorted(by_table):
        rs = sorted(by_table[tid], key=lambda x: x[0])
        times = [t for t, _ in rs]
        n = len(rs)
        span = (times[-1] - times[0]).total_seconds()
        gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
        cam = sum(bool(r["settled"]) and r["settled_by"] == "camera" for _, r in rs)
        man = sum(bool(r["settled"]) and r["settled_by"] == "manual" for _, r in rs)
        delays = []
        for t, r in rs:
            hist = r.get("manual_history") or []
            if r["settled"] and r["settled_by"] == "manual" and hist:
                delays.append((parse_time(hist[0]["time"], "manual entry time") - t)
                              .total_seconds())
        tables[tid] = {
            "rounds": n, "first": _iso(times[0]), "last": _iso(times[-1]), "span_s": span,
            "rounds_per_hour": 3600.0 * (n - 1) / span if n >= 2 and span > 0 else None,
            "median_round_s": float(statistics.median(gaps)) if gaps else None,
            "settled_camera": cam, "settled_manual": man, "not_settled": n - cam - man,
            "share_camera": cam / n, "share_manual": man / n,
            "share_not_settled": (n - cam - man) / n,
            "median_manual_delay_s": float(statistics.median(delays)) if delays else None}
        counts: dict[datetime, int] = defaultdict(int)
        for t in times:
            counts[_hour(t)] += 1
        h, last, series = _hour(times[0]), _hour(times[-1]), []
        while h <= last:
            series.append([_iso(h), counts.get(h, 0)])
            h += timedelta(hours=1)
        hourly[tid] = series
    return {"tables": tables, "hourly": hourly, "per_dealer": None, "note": PER_DEALER_NOTE}

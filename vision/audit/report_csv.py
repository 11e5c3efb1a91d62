"""The shift report (:func:`vision.audit.report.shift_report`) as CSV."""

from __future__ import annotations

import csv
import io

from vision.audit.report import alert_text, manual_text, seat_text

__all__ = ["CSV_COLUMNS", "BROKEN_COLUMN", "report_csv"]

CSV_COLUMNS = ("table_id", "round_id", "time", "settled", "settled_by", "reason", "house_net",
               "seats", "alerts", "unacknowledged_alerts", "house_way_deviation",
               "manual_entries")
BROKEN_COLUMN = "integrity"
"""The column added (last) when a broken store is read anyway (``--force``)."""


def report_csv(report: dict) -> str:
    """The report as CSV: a header (:data:`CSV_COLUMNS`), one row per round, then a ``TOTAL``
    row whose values stand under their own headers: ``round_id`` ``TOTAL``, ``settled``
    ``"<settled> of <rounds>"``, ``settled_by`` ``"<n> camera, <n> manual"`` (of the settled
    rounds), ``reason`` ``"<n> not settled"``, ``house_net`` the sum, ``alerts`` their count,
    ``unacknowledged_alerts`` those not acknowledged, ``house_way_deviation`` the rounds with
    one. Acknowledgements and manual entries (corrections too) name who and when.

    A broken store read anyway (``report["store_broken"]``): the first line is its
    :func:`~vision.audit.integrity.broken_header` (``STORE BROKEN AT record N ...``), the
    column :data:`BROKEN_COLUMN` is added, ``BROKEN (record M on)`` on every row drawing on a
    record from ``marked_from`` on (``verified`` on the others) and ``STORE BROKEN AT record
    N`` on the TOTAL row."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    broken = report.get("store_broken")
    if broken:
        w.writerow([broken["header"]])
    w.writerow(CSV_COLUMNS + ((BROKEN_COLUMN,) if broken else ()))
    for r in report["rounds"]:
        row = [r["table_id"], r["round_id"], r["time"], "yes" if r["settled"] else "no",
               r["settled_by"], r["reason"] or "", r["house_net"] or "",
               "; ".join(seat_text(p, v) for p, v in r["positions"].items()),
               "; ".join(alert_text(a) for a in r["alerts"]),
               sum(not a["acknowledged"] for a in r["alerts"]),
               "yes" if r["house_way_deviations"] else "no",
               "; ".join(filter(None, (manual_text(h) for h in r.get("manual_history") or [])))]
        if broken:
            row.append(f"BROKEN (record {broken['marked_from']} on)" if r.get("after_break")
                       else "verified")
        w.writerow(row)
    t = report["totals"]
    by = {k: sum(r["settled"] and r["settled_by"] == k for r in report["rounds"])
          for k in ("camera", "manual")}
    total = [report.get("table") or "", "TOTAL", "", f"{t['settled']} of {t['rounds']}",
             f"{by['camera']} camera, {by['manual']} manual",
             f"{t['not_settled']} not settled", t["house_net"], "", t["alerts"],
             t["alerts"] - t["acknowledged"],
             sum(bool(r["house_way_deviations"]) for r in report["rounds"]), ""]
    if broken:
        total.append(f"STORE BROKEN AT record {broken['record']}")
    w.writerow(total)
    return buf.getvalue()

"""The shift report (:func:`vision.audit.report.shift_report`) as CSV."""

from __future__ import annotations

import csv
import io

from vision.audit.report import alert_text, seat_text

__all__ = ["CSV_COLUMNS", "report_csv"]

CSV_COLUMNS = ("table_id", "round_id", "time", "settled", "settled_by", "reason", "house_net",
               "seats", "alerts", "unacknowledged_alerts", "house_way_deviation",
               "manual_entries")


def report_csv(report: dict) -> str:
    """The report as CSV: a header (:data:`CSV_COLUMNS`), one row per round, then a ``TOTAL``
    row (``round_id`` ``TOTAL``: rounds, settled / not settled counts, house net)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in report["rounds"]:
        w.writerow([r["table_id"], r["round_id"], r["time"], "yes" if r["settled"] else "no",
                    r["settled_by"], r["reason"] or "", r["house_net"] or "",
                    "; ".join(seat_text(p, v) for p, v in r["positions"].items()),
                    "; ".join(alert_text(a) for a in r["alerts"]),
                    sum(not a["acknowledged"] for a in r["alerts"]),
                    "yes" if r["house_way_deviations"] else "no",
                    "; ".join(f"tile {e['tile']} at {e['position']}: {e['face']}"
                              for e in r["manual_entries"])])
    t = report["totals"]
    w.writerow([report.get("table") or "", "TOTAL", "", f"{t['settled']} settled",
                f"{t['manual']} manual", f"{t['not_settled']} not settled", t["house_net"],
                f"{t['rounds']} rounds", f"{t['alerts']} alerts",
                t["alerts"] - t["acknowledged"], t["house_way_deviations"], ""])
    return buf.getvalue()

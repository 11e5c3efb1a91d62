"""The shift report (:func:`vision.audit.report.shift_report`) as one printable HTML page."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Mapping

from vision.audit.report import alert_text, manual_text, seat_text

__all__ = ["report_html"]

_CSS = """
body { font: 11pt/1.35 "DejaVu Sans", Arial, sans-serif; margin: 1.5cm; color: #000; }
h1 { font-size: 16pt; margin: 0 0 .2em; } h2 { font-size: 13pt; margin: 1.2em 0 .3em; }
table { border-collapse: collapse; width: 100%; margin-bottom: .8em; }
th, td { border: 1px solid #888; padding: .15em .4em; text-align: left; vertical-align: top; }
th { background: #eee; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.no { color: #a00; font-weight: bold; } .manual { color: #05a; font-weight: bold; }
.meta { color: #333; } .totals td { font-weight: bold; }
img.keyframe { display: block; max-width: 160px; height: auto; border: 1px solid #888; }
img.pace-plot { display: block; max-width: 100%; height: auto; }
td.frame { width: 164px; } .missing { color: #a00; }
@media print { body { margin: 0; } tr { page-break-inside: avoid; } a { color: #000; } }
@page { size: A4 landscape; margin: 1.2cm; }
"""
_BROKEN_CSS = """
p.store-broken { border: 3px solid #a00; color: #a00; font-weight: bold; padding: .4em; }
tr.after-break td { background: #fdd; } td.integrity { color: #a00; font-weight: bold; }
"""


def _fmt(v, digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _pct(v) -> str:
    return f"{100 * v:.0f}%"


def _pace_html(pace: dict | None) -> list[str]:
    """The game-pace section: one row per table, the note, the plot."""
    from vision.audit.report_media import pace_plot_uri

    e = html.escape
    out = ["<h2>Game pace</h2>"]
    tables = (pace or {}).get("tables") or {}
    if not tables:
        return out + ["<p>No rounds.</p>"]
    out.append("<table class='pace'><tr><th>Table</th><th>Rounds</th><th>First (UTC)</th>"
               "<th>Last (UTC)</th><th>Rounds per hour</th><th>Median round (s)</th>"
               "<th>Settled by camera</th><th>Settled by hand</th><th>Not settled</th>"
               "<th>Median hand-entry delay (s)</th></tr>")
    for tid, p in tables.items():
        out.append(
            f"<tr><td>{e(tid)}</td><td class='num'>{p['rounds']}</td><td>{e(p['first'])}</td>"
            f"<td>{e(p['last'])}</td><td class='num'>{_fmt(p['rounds_per_hour'])}</td>"
            f"<td class='num'>{_fmt(p['median_round_s'])}</td>"
            f"<td class='num'>{p['settled_camera']} ({_pct(p['share_camera'])})</td>"
            f"<td class='num'>{p['settled_manual']} ({_pct(p['share_manual'])})</td>"
            f"<td class='num'>{p['not_settled']} ({_pct(p['share_not_settled'])})</td>"
            f"<td class='num'>{_fmt(p['median_manual_delay_s'])}</td></tr>")
    out.append("</table>")
    out.append("<p class='meta'>Rounds per hour: rounds between a table's first and last "
               "round of the period. Median round: from the table's previous round to each "
               "round, settlement to settlement (the round event records no deal time). "
               "Hand-entry delay: from the camera's record to the first manual entry. "
               f"{e(pace['note'][:1].upper() + pace['note'][1:])}.</p>")
    uri = pace_plot_uri(pace)
    if uri:
        out.append(f"<img class='pace-plot' src='{uri}' alt='rounds per hour over the shift'>")
    return out


def _frame_cell(r: dict, frame_links: Mapping[int, str] | None) -> str:
    """A round's key-frame cell: the thumbnail linking to the full frame."""
    from vision.audit.report_media import thumbnail_uri

    kf = r.get("key_frame")
    if not kf:
        return "<td class='frame'>-</td>"
    uri = thumbnail_uri(kf["path"])
    if uri is None:
        return "<td class='frame missing'>frame missing</td>"
    href = (frame_links or {}).get(int(kf["record"])) or Path(kf["path"]).resolve().as_uri()
    alt = html.escape(f"key frame of {r['table_id']} {r['round_id']}", quote=True)
    return (f"<td class='frame'><a href='{html.escape(href, quote=True)}'><img "
            f"class='keyframe' src='{uri}' alt='{alt}'></a></td>")


def report_html(report: dict, frame_links: Mapping[int, str] | None = None) -> str:
    """The report as one printable HTML page (no script, nothing loaded from elsewhere: the
    pictures are ``data:`` URIs; A4 landscape when printed): totals, the game pace per table
    (:func:`vision.audit.pace.game_pace`: a table and the plot of rounds per hour over the
    shift), every round with its key frame (a JPEG thumbnail, :data:`~vision.audit.
    report_media.THUMB_WIDTH` pixels wide, linking to the full frame), the rounds not settled
    and why (with the manual entries and corrections, who and when), the alerts and their
    acknowledgement (who and when), the dealer's house-way deviations.

    Args:
        report: :func:`vision.audit.report.shift_report`'s result.
        frame_links: camera record id -> the link of its full key frame (the copies beside
            the page, :func:`vision.audit.report_media.copy_key_frames`); a frame not given
            links to the store's own file (a ``file:`` URI of its absolute path).

    A round without a key frame shows ``-``; one whose frame file is missing or unreadable
    ``frame missing``.

    A broken store read anyway (``report["store_broken"]``): the title and a boxed first
    paragraph (class ``store-broken``) say ``STORE BROKEN AT record N ...``; every table gets a
    column "Chain", and each row drawing on a record from ``marked_from`` on has the class
    ``after-break`` and the text ``BROKEN (record M on)`` (``verified`` on the others)."""
    e = html.escape
    t = report["totals"]
    broken = report.get("store_broken")
    period = f"{report.get('from') or 'start of the store'} to {report.get('to') or 'now'}"

    def tr(r) -> str:  # a row's opening tag, marked after a break
        return "<tr class='after-break'>" if broken and r.get("after_break") else "<tr>"

    def chain(r) -> str:  # the row's Chain cell (a broken store only)
        if not broken:
            return ""
        if r.get("after_break"):
            return f"<td class='integrity'>BROKEN (record {broken['marked_from']} on)</td>"
        return "<td>verified</td>"

    th_chain = "<th>Chain</th>" if broken else ""
    title = f"STORE BROKEN AT record {broken['record']}: " if broken else ""
    css = _CSS + (_BROKEN_CSS if broken else "")
    out = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
           f"<title>{title}Shift report {e(period)}</title><style>{css}</style></head><body>",
           "<h1>Pai gow shift report</h1>"]
    if broken:
        out.append(f"<p class='store-broken'>{e(broken['header'])}</p>")
    out += [f"<p class='meta'>Period {e(period)}; table {e(report.get('table') or 'all')}; "
            f"audit store {e(str(report['store']))}</p>",
            "<h2>Totals</h2><table class='totals'><tr><th>Rounds</th><th>Settled</th>"
            "<th>Not settled</th><th>Settled by manual entry</th><th>Alerts</th>"
            "<th>Acknowledged</th><th>House-way deviations</th><th>House net</th></tr>",
            f"<tr><td class='num'>{t['rounds']}</td><td class='num'>{t['settled']}</td>"
            f"<td class='num'>{t['not_settled']}</td><td class='num'>{t['manual']}</td>"
            f"<td class='num'>{t['alerts']}</td><td class='num'>{t['acknowledged']}</td>"
            f"<td class='num'>{t['house_way_deviations']}</td>"
            f"<td class='num'>{e(t['house_net'])}</td></tr></table>",
            *_pace_html(report.get("pace")),
            "<h2>Rounds</h2><table><tr><th>Table</th><th>Round</th><th>Time (UTC)</th>"
            f"<th>Settled</th><th>Positions</th><th>House net</th><th>Alerts</th>"
            f"<th>Key frame</th>{th_chain}</tr>"]
    for r in report["rounds"]:
        settled = ("<span class='manual'>yes (manual entry)</span>" if r["settled"] and
                   r["settled_by"] == "manual" else "yes" if r["settled"] else
                   "<span class='no'>no</span>")
        seats = "<br>".join(e(seat_text(p, v)) for p, v in r["positions"].items())
        alerts = "<br>".join(e(alert_text(a)) for a in r["alerts"]) or "-"
        out.append(f"{tr(r)}<td>{e(r['table_id'])}</td><td>{e(r['round_id'])}</td>"
                   f"<td>{e(r['time'])}</td><td>{settled}</td><td>{seats}</td>"
                   f"<td class='num'>{e(r['house_net'] or '-')}</td><td>{alerts}</td>"
                   f"{_frame_cell(r, frame_links)}{chain(r)}</tr>")
    out.append("</table>")
    ns = [r for r in report["rounds"] if not r["settled"] or r["settled_by"] == "manual"]
    out.append("<h2>Rounds not settled by the camera, and why</h2>")
    if ns:
        out.append("<table><tr><th>Table</th><th>Round</th><th>Time (UTC)</th><th>Reason</th>"
                   f"<th>Manual entry</th>{th_chain}</tr>")
        for r in ns:
            why = r["camera_reason"] if r["settled_by"] == "manual" else r["reason"]
            entries = "<br>".join(e(manual_text(h, camera=True))
                                  for h in r.get("manual_history") or []
                                  if h.get("entries")) or "-"
            out.append(f"{tr(r)}<td>{e(r['table_id'])}</td><td>{e(r['round_id'])}</td>"
                       f"<td>{e(r['time'])}</td><td>{e(why or '')}</td><td>{entries}</td>"
                       f"{chain(r)}</tr>")
        out.append("</table>")
    else:
        out.append("<p>None.</p>")
    out.append("<h2>Alerts</h2>")
    al = [(r, a) for r in report["rounds"] for a in r["alerts"]]
    if al:
        out.append("<table><tr><th>Table</th><th>Round</th><th>Kind</th><th>Position</th>"
                   f"<th>Detail</th><th>Acknowledged</th>{th_chain}</tr>")
        for r, a in al:
            if a["acknowledged"]:
                ack = e(f"yes, {a['acknowledged_at'] or ''}" + (
                    f" by {a['acknowledged_by']}" if a["acknowledged_by"] else ""))
            else:
                ack = "<span class='no'>no</span>"
            out.append(f"{tr(r)}<td>{e(r['table_id'])}</td><td>{e(r['round_id'])}</td>"
                       f"<td>{e(a['kind'])}</td><td>{e(str(a['position'] or '-'))}</td>"
                       f"<td>{e(a['detail'] or '')}</td><td>{ack}</td>{chain(r)}</tr>")
        out.append("</table>")
    else:
        out.append("<p>None.</p>")
    out.append("<h2>Dealer house-way deviations</h2>")
    dv = [(r, a) for r in report["rounds"] for a in r["house_way_deviations"]]
    if dv:
        out.append("<table><tr><th>Table</th><th>Round</th><th>Time (UTC)</th><th>Detail</th>"
                   f"{th_chain}</tr>")
        for r, a in dv:
            out.append(f"{tr(r)}<td>{e(r['table_id'])}</td><td>{e(r['round_id'])}</td>"
                       f"<td>{e(r['time'])}</td><td>{e(a['detail'] or '')}</td>{chain(r)}</tr>")
        out.append("</table>")
    else:
        out.append("<p>None.</p>")
    out.append("</body></html>\n")
    return "\n".join(out)

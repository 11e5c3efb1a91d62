"""Surveillance: payout checks per table, manual entries beside the camera's records, and the
shift report (vision.audit.payouts, vision.audit.entries, vision.audit.report)."""

from __future__ import annotations

import csv
import html
import io
import json

import pytest
from fakes import assert_valid_event

from scoring.errors import InputError
from vision.audit import AuditStore, check_payouts, verify
from vision.audit.entries import append_ack, append_manual, manual_round
from vision.audit.report import shift_report
from vision.audit.report_csv import report_csv
from vision.audit.report_html import report_html
from vision.cli import main
from fakes import event_from_deal

from helpers.audit_events import DEALS, _event, _unread_round  # noqa: E402,F401


@pytest.fixture
def two_tables(tmp_path):
    """Tables A and B, rounds r000001..r000003 each (the same ids), interleaved in time."""
    db = tmp_path / "audit.db"
    events = {"A": [], "B": []}
    with AuditStore(db) as st:
        for i, deal in enumerate(DEALS, 1):
            for k, t in enumerate("AB"):
                d = deal if t == "A" else DEALS[-i]  # other hands at table B
                ev = _event(d, i, t, 2 * i + k)
                st.append(ev)
                events[t].append(ev)
    return db, events


def _nets(ev):
    return {p: o["net"] for p, o in ev["positions"].items() if o.get("net") is not None}


def _pay_rows(events, table=None):
    rows = []
    for ev in events:
        for p, net in _nets(ev).items():
            if p != "dealer":
                rows.append(([table] if table else []) + [ev["round_id"], p, net])
    return rows


def _write(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def test_check_payouts_for_one_table_reports_exactly_the_planted_differences(two_tables,
                                                                              tmp_path, capsys):
    db, events = two_tables
    a = events["A"]
    rows = _pay_rows(a[:2])  # the CSV covers A's first two rounds only
    planted = []
    # 1. seat 1 of r000001 paid 0.05 too much
    i = next(k for k, r in enumerate(rows) if r[:2] == ["r000001", "1"])
    from decimal import Decimal
    rows[i][2] = str(Decimal(rows[i][2]) + Decimal("0.05"))
    planted.append(("amount", "r000001", "1", "0.05"))
    # 2. seat 2 of r000002 never paid / collected
    j = next(k for k, r in enumerate(rows) if r[:2] == ["r000002", "2"])
    want = rows.pop(j)[2]
    planted.append(("not_paid", "r000002", "2", str(-Decimal(want))))
    # 3. a payment to seat 6, which did not play r000002
    rows.append(["r000002", "6", "1"])
    planted.append(("seat_not_in_round", "r000002", "6", None))
    pay = _write(tmp_path / "a.csv", ["round_id", "seat", "amount_paid"], rows)

    diffs = check_payouts(db, pay, table="A")
    assert [(d["kind"], d["round_id"], d["seat"], d["difference"]) for d in diffs] == planted
    assert {d["table_id"] for d in diffs} == {"A"}

    # without a table the ids are ambiguous: refused, naming both tables
    with pytest.raises(InputError, match=r"2 tables \(A, B\)"):
        check_payouts(db, pay)
    # --all: also A's third round, unpaid (never B's rounds)
    every = check_payouts(db, pay, table="A", all_rounds=True)
    extra = [(d["kind"], d["round_id"]) for d in every if d["round_id"] == "r000003"]
    assert extra and all(k == "not_paid" for k, _ in extra)
    assert {d["table_id"] for d in every} == {"A"}

    # the CLI: exit 1, the same differences as JSON
    assert main(["audit", "check-payouts", str(db), str(pay), "--table", "A", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["count"] == len(planted)
    assert main(["audit", "check-payouts", str(db), str(pay), "--json"]) == 2
    assert "--table" in json.loads(capsys.readouterr().out)["error"]


def test_a_table_column_checks_both_tables_in_one_file(two_tables, tmp_path):
    db, events = two_tables
    rows = _pay_rows(events["A"], "A") + _pay_rows(events["B"], "B")
    rows[-1][3] = "123"  # B's last row wrong
    pay = _write(tmp_path / "ab.csv", ["table", "round_id", "seat", "amount_paid"], rows)
    diffs = check_payouts(db, pay)
    assert [(d["table_id"], d["kind"]) for d in diffs] == [("B", "amount")]
    assert check_payouts(db, pay, table="A") == []  # B's rows skipped
    assert [d["table_id"] for d in check_payouts(db, pay, table="B")] == ["B"]


def test_manual_entry_is_stored_beside_the_camera_record_and_settles_the_round(tmp_path):
    db = tmp_path / "audit.db"
    ev, rid, k, face = _unread_round()
    truth = event_from_deal(DEALS[0], rid, table_id="A")
    with AuditStore(db) as st:
        cam = st.append(ev)
        rec = append_manual(st, "A", rid, [{"tile": k, "face": face}], by="sup-7")
        with pytest.raises(InputError, match="entered already"):
            append_manual(st, "A", rid, [{"tile": k, "face": face}])
        with pytest.raises(InputError, match="read by the camera"):
            append_manual(st, "A", rid, [{"tile": (k + 1) % len(ev["tiles"]), "face": "1-1"}])
    assert verify(db).ok
    with AuditStore(db, create=False) as st:
        recs = list(st.rounds())
    assert [r.seq for r in recs] == [cam.seq, rec.seq]
    assert recs[0].payload["tiles"][k]["face"] is None  # the camera's record is unchanged
    m = recs[1].payload
    assert m["kind"] == "manual" and m["settled"] is True
    assert m["manual"]["entries"] == [{"tile": k, "position": "dealer", "face": face, "camera": {
        "face": None, "state": "unknown", "confidence": 0.2}}]
    assert m["tiles"][k] == dict(ev["tiles"][k], face=face, state="face_up", confidence=1.0)
    assert m["manual"]["by"] == "sup-7" and m["manual"]["camera_record"] == cam.seq
    assert _nets(m) == _nets(truth)  # settled as the true deal settles

    rep = shift_report(db)
    (row,) = rep["rounds"]
    assert row["settled"] and row["settled_by"] == "manual"
    assert row["camera_reason"] == ev["reason"]
    assert rep["totals"]["manual"] == 1
    # payouts are checked against the manual settlement, marked as such
    pay = _write(tmp_path / "p.csv", ["round_id", "seat", "amount_paid"],
                 [[rid, "1", _nets(truth)["1"]], [rid, "2", "0"], [rid, "3", _nets(truth)["3"]]])
    (d,) = check_payouts(db, pay)
    assert (d["kind"], d["seat"], d["manual"]) == ("amount", "2", True)
    assert d["computed"] == _nets(truth)["2"] != "0"


def test_manual_round_without_store_keeps_the_camera_read():
    ev, rid, k, face = _unread_round()
    m = manual_round(ev, [{"tile": k, "face": face}])
    assert_valid_event(m)  # docs/round-event.schema.json: kind and manual
    assert_valid_event(ev)
    (e,) = m["manual"]["entries"]
    assert (e["tile"], e["face"], e["position"]) == (k, face, "dealer")
    assert e["camera"] == {"face": None, "state": "unknown", "confidence": 0.2}
    assert ev["tiles"][k]["face"] is None  # the input event is not changed


def test_shift_report_lists_rounds_alerts_acks_and_house_net(two_tables, tmp_path, capsys):
    db, events = two_tables
    ev, rid, k, face = _unread_round("A", 4)
    with AuditStore(db) as st:
        st.append(ev)
        a = next(x for x in events["A"][0]["alerts"] if x["kind"] == "house_way_deviation")
        append_ack(st, "A", "r000001", a, by="floor-2")
        with pytest.raises(InputError, match="no alert 'mis_set'"):
            append_ack(st, "A", "r000001", {"kind": "mis_set", "position": "1"})
    assert verify(db).ok and verify(db, deep=True).ok
    # a session continuing table A numbers on from its highest round, whatever came last
    from vision.io.sinks import AuditSink
    sink = AuditSink(str(db))
    assert sink.attach("A") == 4 and sink.attach("B") == 3
    sink.close()
    rep = shift_report(db, start="2026-11-30T22:00:00Z", end="2026-11-30T23:00:00Z",
                       table="A")
    assert [r["round_id"] for r in rep["rounds"]] == ["r000001", "r000002", "r000003", rid]
    assert [r["settled"] for r in rep["rounds"]] == [True, True, True, False]
    assert rep["rounds"][-1]["positions"]["dealer"]["reason"].startswith("1 tile(s) unknown")
    assert rep["rounds"][-1]["reason"].startswith("source ended before the round settled")
    from decimal import Decimal
    want = sum(Decimal(e["bank"]["house_net"]) for e in events["A"])
    assert rep["totals"]["house_net"] == str(want)
    r1 = rep["rounds"][0]
    assert [x["acknowledged"] for x in r1["alerts"] if x["kind"] == "house_way_deviation"] \
        == [True]
    ack = next(x for x in r1["alerts"] if x["kind"] == "house_way_deviation")
    assert ack["acknowledged_by"] == "floor-2" and ack["acknowledged_at"] > r1["time"]
    assert r1["house_way_deviations"] and not rep["rounds"][1]["alerts"][0]["acknowledged"]
    # CSV: one row per round plus a total; HTML: a printable page naming every round
    rows = list(csv.reader(io.StringIO(report_csv(rep))))
    assert [r[1] for r in rows[1:]] == ["r000001", "r000002", "r000003", rid, "TOTAL"]
    assert rows[4][3] == "no" and "unknown" in rows[4][5]
    page = report_html(rep)
    assert page.count("<tr><td>A</td><td>r0000") >= 4 and "@media print" in page
    # the command: HTML to a file, CSV to stdout; a period selects rounds by time
    out = tmp_path / "shift.html"
    assert main(["audit", "report", str(db), "--from", "2026-11-30T22:00:00Z", "--to",
                 "2026-11-30T23:00:00Z", "--table", "B", "--out", str(out)]) == 0
    assert "3 round(s)" in capsys.readouterr().out and "<html" in out.read_text()
    assert main(["audit", "report", str(db), "--to", "2026-11-30T22:05:00Z"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [ln.split(",")[1] for ln in lines[1:]] == ["r000001", "r000001", "r000002", "TOTAL"]
    assert main(["audit", "report", str(db), "--from", "yesterday", "--json"]) == 2
    assert "yesterday" in json.loads(capsys.readouterr().out)["error"]


def test_shift_report_of_a_rendered_video_lists_every_round_settled_or_not(tmp_path):
    """Three deals rendered into a video (an empty table between them); the detectors (ground
    truth, fakes.py) miss one spot of every dealer tile of the second deal, so its banker is
    never readable: the report lists all three rounds, the second not settled with its
    reason."""
    synth = pytest.importorskip("vision.synth.render")
    from fakes import GroundTruthDetectors
    from helpers.videos import SMALL, empty_table, write_video

    from vision.session import run

    seeds = (1_000_301, 1_000_302, 1_000_303)
    scenes = [synth.render_table(s, size=SMALL) for s in seeds]
    empties = [empty_table(sc) for sc in scenes]
    path, _ = write_video(tmp_path / "shift", scenes, empties)
    drop = {(1, k): 0 for k, t in enumerate(scenes[1].tiles)
            if t.position == "dealer" and t.face and t.labelled}
    det = GroundTruthDetectors(scenes, empties, lossy=True, drop=drop)
    db = tmp_path / "audit.db"
    s = run(str(path), audit=str(db), n_stable=3, table_id="t-9", progress=False,
            tile_detector=det, pip_detector=det)
    assert [e["settled"] for e in s["events"]] == [True, False, True]
    rep = shift_report(db, table="t-9")
    rows = rep["rounds"]
    assert [r["round_id"] for r in rows] == [e["round_id"] for e in s["events"]] == \
        ["r000001", "r000002", "r000003"]
    assert [r["settled"] for r in rows] == [True, False, True]
    assert "banker dealer not settled" in rows[1]["reason"]
    assert rep["totals"]["not_settled"] == 1 and rep["totals"]["settled"] == 2
    page = report_html(rep)
    assert all(f"<td>{r}</td>" in page for r in ("r000001", "r000002", "r000003"))
    assert "banker dealer not settled" in page


def test_an_acknowledged_round_later_corrected_keeps_both_with_who_and_when(two_tables,
                                                                            capsys):
    """An unread tile's alert acknowledged ("badge 4411"), then the tile entered by a
    supervisor and that entry corrected: the acknowledgement stays in the report (before, the
    manual record's alerts replaced the camera's and it showed acknowledged 0), and the entry
    and the correction are there with who and when, in csv and html. An alert of the camera
    can also be acknowledged after the entry."""
    from vision.audit.entries import possible_faces

    db, _ = two_tables
    ev, rid, k, face = _unread_round("A", 4)
    ev_b, rid_b, k_b, face_b = _unread_round("B", 4)
    alert = ev["alerts"][0]
    with AuditStore(db) as st:
        st.append(ev)
        st.append(ev_b)
        ack = append_ack(st, "A", rid, alert, by="badge 4411")
        entry = append_manual(st, "A", rid, [{"tile": k, "face": face}], by="sup-7")
        other = next(f for f in possible_faces(entry.payload, k) if f != face)
        corr = append_manual(st, "A", rid, [{"tile": k, "face": other}], by="sup-9",
                             correction=True)
        append_manual(st, "B", rid_b, [{"tile": k_b, "face": face_b}], by="sup-7")
        late = append_ack(st, "B", rid_b, ev_b["alerts"][0], by="badge 77")  # after the entry
    assert verify(db).ok
    rep = shift_report(db)
    row = next(r for r in rep["rounds"] if (r["table_id"], r["round_id"]) == ("A", rid))
    (a,) = [x for x in row["alerts"] if x["kind"] == "unknown_tile"]
    assert a["acknowledged"] and a["acknowledged_by"] == "badge 4411"
    assert a["acknowledged_at"] == ack.time
    assert row["settled_by"] == "manual" and row["manual_entries"][0]["face"] == other
    hist = row["manual_history"]
    assert [(h["by"], h["time"], h["correction"]) for h in hist] == \
        [("sup-7", entry.time, False), ("sup-9", corr.time, True)]
    assert [e["face"] for e in hist[0]["entries"]] == [face]
    assert [e["face"] for e in hist[1]["entries"]] == [other]
    assert [e["face"] for e in hist[1]["superseded"]] == [face]
    row_b = next(r for r in rep["rounds"] if (r["table_id"], r["round_id"]) == ("B", rid_b))
    (b,) = [x for x in row_b["alerts"] if x["kind"] == "unknown_tile"]
    assert b["acknowledged_by"] == "badge 77" and b["acknowledged_at"] == late.time

    acked = f"unknown_tile at dealer (acknowledged by badge 4411 at {ack.time})"
    entered = f"tile {k} at dealer: {face} (entered by sup-7 at {entry.time})"
    corrected = f"tile {k} at dealer: {other} (corrected by sup-9 at {corr.time}; was {face})"
    rows = list(csv.DictReader(io.StringIO(report_csv(rep))))
    r = next(x for x in rows if (x["table_id"], x["round_id"]) == ("A", rid))
    assert acked in r["alerts"]
    assert r["manual_entries"] == f"{entered}; {corrected}"
    page = report_html(rep)
    assert html.escape(acked) in page
    assert f"yes, {ack.time} by badge 4411" in page  # the alerts table
    assert html.escape(f"tile {k} at dealer: {face} (entered by sup-7 at {entry.time}; "
                       f"camera: unknown)") in page
    assert html.escape(f"tile {k} at dealer: {other} (corrected by sup-9 at {corr.time}; was "
                       f"{face}; camera: unknown)") in page
    # the command gives the same
    assert main(["audit", "report", str(db), "--table", "A"]) == 0
    assert acked in capsys.readouterr().out


def test_csv_total_row_stands_under_its_headers(two_tables):
    """The TOTAL row's values, read by header name (csv module)."""
    db, events = two_tables
    ev, rid, k, face = _unread_round("A", 4)
    with AuditStore(db) as st:
        st.append(ev)
        a = next(x for x in events["A"][0]["alerts"] if x["kind"] == "house_way_deviation")
        append_ack(st, "A", "r000001", a, by="floor-2")
    rep = shift_report(db)
    t = rep["totals"]
    assert (t["rounds"], t["settled"], t["not_settled"], t["manual"]) == (7, 6, 1, 0)
    rows = list(csv.DictReader(io.StringIO(report_csv(rep))))
    total = rows.pop()
    assert total == {
        "table_id": "", "round_id": "TOTAL", "time": "", "settled": "6 of 7",
        "settled_by": "6 camera, 0 manual", "reason": "1 not settled",
        "house_net": t["house_net"], "seats": "", "alerts": str(t["alerts"]),
        "unacknowledged_alerts": str(t["alerts"] - t["acknowledged"]),
        "house_way_deviation": str(sum(r["house_way_deviation"] == "yes" for r in rows)),
        "manual_entries": ""}
    # the totals agree with the rows above them
    assert sum(r["settled"] == "yes" for r in rows) == 6
    assert sum(int(r["unacknowledged_alerts"]) for r in rows) == \
        int(total["unacknowledged_alerts"])
    from decimal import Decimal
    assert sum(Decimal(r["house_net"]) for r in rows if r["house_net"]) == \
        Decimal(total["house_net"])
    one = list(csv.DictReader(io.StringIO(report_csv(shift_report(db, table="B")))))[-1]
    assert (one["table_id"], one["settled"]) == ("B", "3 of 3")

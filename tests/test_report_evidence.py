"""The shift report as evidence (docs/payouts.md, key frames and game pace): each round's key
frame in the HTML page (a thumbnail as a data: URI linking to the full frame copied beside the
page), the game pace per table from the stored times (exact figures on a store built with
known times), the plot of rounds per hour; the page opened in Chromium loads every picture.
The acknowledged-then-corrected round in csv and html is tests/test_surveillance.py."""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from helpers.audit_events import DEALS, _event, _unread_round, jpeg

from vision.audit import AuditStore, verify
from vision.audit.entries import manual_round
from vision.audit.pace import PER_DEALER_NOTE, game_pace
from vision.audit.report import shift_report
from vision.audit.report_html import report_html
from vision.audit.report_media import frames_folder
from vision.cli import main

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def _at(ev, hhmmss: str, day: str = "2026-11-30") -> dict:
    ev["time"] = f"{day}T{hhmmss}.000Z"
    return ev


@pytest.fixture
def shift(tmp_path):
    """Table A: five rounds at 22:00:00, 22:02:00, 22:05:00, 22:09:00 (not read; settled by
    hand at 22:09:45.500) and 23:15:00 (not settled); table B: one round at 22:30:00 without
    a key frame; table C: rounds at 21:10:00 and 23:50:00 (an hour without rounds between).
    Every other round has a key frame."""
    db = tmp_path / "audit.db"
    with AuditStore(db) as st:
        for i, t in enumerate(("22:00:00", "22:02:00", "22:05:00"), 1):
            st.append(_at(_event(DEALS[i - 1], i, "A", 0), t), jpeg(i))
        ev4, _, k, face = _unread_round("A", 4)
        cam4 = st.append(_at(ev4, "22:09:00"), jpeg(4))
        st.append(manual_round(cam4.payload, [{"tile": k, "face": face}], by="sup-7",
                               camera_record=cam4.seq, time="2026-11-30T22:09:45.500Z"),
                  compute_alerts=False)
        ev5, _, _, _ = _unread_round("A", 5)
        ev5["source_id"] = "live-00000000000000a5"  # another camera: not round 4 again
        st.append(_at(ev5, "23:15:00"), jpeg(5))
        st.append(_at(_event(DEALS[1], 1, "B", 0), "22:30:00"))
        st.append(_at(_event(DEALS[2], 1, "C", 0), "21:10:00"), jpeg(6))
        st.append(_at(_event(DEALS[0], 2, "C", 0), "23:50:00"), jpeg(7))
    assert verify(db).ok
    return db


def test_game_pace_from_the_stored_times_is_exact(shift):
    rep = shift_report(shift)
    pace = rep["pace"]
    assert pace == game_pace(rep["rounds"])
    a = pace["tables"]["A"]
    # 5 rounds over 22:00:00 .. 23:15:00 = 4500 s: 4 intervals -> 3600 * 4 / 4500 per hour
    assert a["rounds"] == 5 and a["span_s"] == 4500.0
    assert a["rounds_per_hour"] == pytest.approx(3.2, abs=1e-12)
    # settlement to settlement: 120, 180, 240, 3960 s -> median (180 + 240) / 2
    assert a["median_round_s"] == 210.0
    assert (a["settled_camera"], a["settled_manual"], a["not_settled"]) == (3, 1, 1)
    assert (a["share_camera"], a["share_manual"], a["share_not_settled"]) == (0.6, 0.2, 0.2)
    assert a["median_manual_delay_s"] == 45.5  # 22:09:00 -> 22:09:45.500
    assert (a["first"], a["last"]) == ("2026-11-30T22:00:00Z", "2026-11-30T23:15:00Z")
    b = pace["tables"]["B"]
    assert (b["rounds"], b["rounds_per_hour"], b["median_round_s"]) == (1, None, None)
    assert (b["share_camera"], b["median_manual_delay_s"]) == (1.0, None)
    c = pace["tables"]["C"]
    assert c["rounds_per_hour"] == 3600 / 9600 and c["median_round_s"] == 9600.0
    assert pace["hourly"] == {
        "A": [["2026-11-30T22:00:00Z", 4], ["2026-11-30T23:00:00Z", 1]],
        "B": [["2026-11-30T22:00:00Z", 1]],
        "C": [["2026-11-30T21:00:00Z", 1], ["2026-11-30T22:00:00Z", 0],
              ["2026-11-30T23:00:00Z", 1]]}
    assert pace["per_dealer"] is None and pace["note"] == PER_DEALER_NOTE
    # a period: only its rounds count
    a2 = shift_report(shift, start="2026-11-30T22:00:00Z", end="2026-11-30T22:06:00Z",
                      table="A")["pace"]["tables"]["A"]
    assert (a2["rounds"], a2["rounds_per_hour"], a2["median_round_s"]) == (3, 24.0, 150.0)


def _imgs(page: str, cls: str) -> list[str]:
    return re.findall(rf"<img class='{cls}' src='([^']*)'", page)


def _decode(uri: str) -> np.ndarray:
    head, data = uri.split(",", 1)
    assert head in ("data:image/jpeg;base64", "data:image/png;base64")
    img = cv2.imdecode(np.frombuffer(base64.b64decode(data), np.uint8), cv2.IMREAD_COLOR)
    assert img is not None
    return img


def test_html_shows_a_key_frame_per_round_and_the_game_pace(shift):
    rep = shift_report(shift)
    rows = {(r["table_id"], r["round_id"]): r for r in rep["rounds"]}
    assert rows[("B", "r000001")]["key_frame"] is None
    kf = rows[("A", "r000002")]["key_frame"]
    assert kf["record"] == rows[("A", "r000002")]["record"]
    with open(kf["path"], "rb") as f:
        assert f.read() == jpeg(2)
    # one frame file removed (a store read with --no-frames): the page says so
    os.remove(rows[("C", "r000002")]["key_frame"]["path"])
    page = report_html(rep)
    thumbs = _imgs(page, "keyframe")
    assert len(thumbs) == 6  # 8 rounds: one without a frame, one whose file is gone
    assert page.count(">frame missing<") == 1 and "<td class='frame'>-</td>" in page
    # each thumbnail is the stored frame (24 x 32: under the thumbnail width, size kept)
    want = cv2.imdecode(np.frombuffer(jpeg(1), np.uint8), cv2.IMREAD_COLOR)
    got = _decode(thumbs[0])
    assert got.shape == want.shape
    assert np.abs(got.astype(int) - want.astype(int)).mean() < 20
    # the thumbnail links to the full frame (the store's file unless copies are given)
    first = rows[("A", "r000001")]["key_frame"]
    assert f"<a href='{Path(first['path']).resolve().as_uri()}'><img class='keyframe'" in page
    linked = report_html(rep, {first["record"]: "shift_frames/A_r000001.jpg"})
    assert "<a href='shift_frames/A_r000001.jpg'><img class='keyframe'" in linked
    # the game pace: the table and one plot
    assert "<h2>Game pace</h2>" in page and PER_DEALER_NOTE[1:] in page
    assert "<tr><td>A</td><td class='num'>5</td>" in page
    assert "<td class='num'>3.2</td><td class='num'>210.0</td>" in page
    assert "<td class='num'>1 (20%)</td>" in page and "<td class='num'>45.5</td>" in page
    (plot,) = _imgs(page, "pace-plot")
    assert _decode(plot).shape == (300, 900, 3)
    assert report_html(shift_report(shift)) == report_html(shift_report(shift))  # stable


def test_report_command_copies_the_full_frames_beside_the_page(shift, tmp_path, capsys):
    out = tmp_path / "shift.html"
    assert main(["audit", "report", str(shift), "--out", str(out)]) == 0
    assert "8 round(s)" in capsys.readouterr().out
    page = out.read_text()
    folder = frames_folder(out)
    assert folder == tmp_path / "shift_frames"
    links = re.findall(r"<a href='([^']*)'><img class='keyframe'", page)
    assert len(links) == 7
    assert links[0] == "shift_frames/A_r000001.jpg"
    assert (tmp_path / links[0]).read_bytes() == jpeg(1)
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        os.path.basename(x) for x in links)
    # a broken store read with --force: the page still shows its frames, marked
    import sqlite3
    con = sqlite3.connect(str(shift), isolation_level=None)
    con.execute("DROP TRIGGER paigow_rounds_no_update")
    con.execute("UPDATE paigow_rounds SET time = '2026-11-30T22:02:01.000Z' WHERE seq = 2")
    con.close()
    assert main(["audit", "report", str(shift), "--out", str(out)]) == 1
    assert "BROKEN at record 2" in capsys.readouterr().err
    assert main(["audit", "report", str(shift), "--out", str(out), "--force"]) == 1
    capsys.readouterr()
    assert len(_imgs(out.read_text(), "keyframe")) == 7


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed")
def test_html_report_pictures_load_in_chromium(shift, tmp_path, capsys):
    sync_api = pytest.importorskip("playwright.sync_api")
    out = tmp_path / "shift.html"
    assert main(["audit", "report", str(shift), "--out", str(out)]) == 0
    capsys.readouterr()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(out.as_uri(), wait_until="load")
            imgs = page.evaluate("""() => [...document.images].map(i => ({
                cls: i.className, ok: i.complete && i.naturalWidth > 0,
                w: i.naturalWidth, h: i.naturalHeight,
                href: i.parentElement.tagName === 'A' ? i.parentElement.href : null}))""")
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
            # the full frames the thumbnails link to, opened as pictures too
            full = []
            for href in [i["href"] for i in imgs if i["href"]]:
                page.goto(href, wait_until="load")
                full.append(page.evaluate(
                    "() => document.images.length ? document.images[0].naturalWidth : 0"))
        finally:
            browser.close()
    assert [i["cls"] for i in imgs].count("keyframe") == 7
    assert [i["cls"] for i in imgs].count("pace-plot") == 1
    assert all(i["ok"] for i in imgs), [i for i in imgs if not i["ok"]]
    assert {(i["w"], i["h"]) for i in imgs if i["cls"] == "keyframe"} == {(32, 24)}
    assert full == [32] * 7
    shot = cv2.imread(str(tmp_path / "report.png"))
    assert shot is not None and shot.shape[1] == 1600 and shot.shape[0] > 1000

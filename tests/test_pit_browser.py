"""The pit page's table cards (issue 41, item 4; docs/pit.md): per table a live thumbnail (its
``snapshot.jpg``, refreshed), its alerts in the dealer display's words -- each once -- with
an Acknowledge button recorded in the audit store, and the game pace (rounds per hour from the
table's rounds). Pure parts without a browser; the page in headless Chromium
(/usr/bin/chromium driven by Playwright, as tests/test_dealer_mode.py) over two scripted
tables (no worker processes, no models)."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from fakes import FakeFeed, event_from_deal

TOKEN = "pit-s3cret"
DEAL = {"dealer": ["6-6", "1-3", "4-5", "2-2"], "1": ["1-1", "5-6", "3-4", "2-6"],
        "2": ["1-2", "2-4", "3-3", "5-5"], "3": ["4-4", "1-6", "2-3", "3-6"]}
HOUSE_WAY = "Dealer: not set the house way -- supervisor to check"
SHORT = "Seat 3: 2 tiles -- a hand needs 4 tiles"


class _Pit:
    """The part of :class:`vision.pit.Pit` the pit app reads: feeds and state."""

    def __init__(self, feeds):
        self.feeds = feeds

    def state(self):
        tables = []
        for tid, f in self.feeds.items():
            st = f.state()
            tables.append({"table_id": tid, "source": f.source, "url": f"/tables/{tid}/",
                           "status": st["status"], "error": None, "fps": st["fps"],
                           "frames": st["frames"], "round_count": st["round_count"],
                           "last_round": None, "alerts": [], "stats": None,
                           "worker": {"pid": None, "state": "running", "note": None}})
        return {"time": "2026-12-01T10:00:00Z", "tables": tables, "detector": None}


def _rounds(table_id, minutes):
    """Settled rounds of ``DEAL`` (a house-way alert at the dealer) at the given minutes."""
    out = []
    for i, m in enumerate(minutes, 1):
        ev = event_from_deal(DEAL, f"r{i:06d}", table_id=table_id, frame_index=i)
        ev["time"] = f"2026-12-01T10:{m:02d}:00.000Z"
        out.append(ev)
    return out


# ------------------------------------------------------------------------- without a browser


def test_pace_is_rounds_per_hour_between_the_first_and_last_round():
    from vision.web.pit_view import table_pace

    p = table_pace(["2026-12-01T10:03:00Z", "2026-12-01T10:00:00Z", "2026-12-01T10:01:00Z"],
                   round_count=7)
    assert p == {"rounds": 7, "shown": 3, "span_s": 180.0, "rounds_per_hour": 40.0,
                 "median_round_s": 90.0}  # gaps 60 s and 120 s
    one = table_pace(["2026-12-01T10:00:00Z"])
    assert one["rounds_per_hour"] is None and one["median_round_s"] is None and one["rounds"] == 1
    assert table_pace([])["rounds"] == 0


def test_alerts_are_words_each_once():
    from vision.web.pit_view import table_alerts

    feed = FakeFeed(table_id="t")
    feed.publish_event(_rounds("t", [0])[0])
    # the same house-way deviation raised live too, and a short hand: three alerts, two words
    feed.publish_frame(None, alerts=[
        {"kind": "house_way_deviation", "position": "dealer", "detail": "dealer set ..."},
        {"kind": "wrong_tile_count", "position": "3", "detail": "2 tiles, a position holds 4"}])
    got = table_alerts(feed.state())
    assert [a["say"] for a in got] == [HOUSE_WAY, SHORT]
    assert got[0]["round_id"] == "r000001" and got[0]["live"] is False
    assert got[1]["round_id"] is None and got[1]["live"] is True  # not a round's: no ack
    assert not any("dealer set" in a["say"] for a in got)


def test_api_pit_tables(tmp_path):
    from fastapi.testclient import TestClient

    from vision.web.pit import create_pit_app

    a, b = FakeFeed(table_id="ta", audit=tmp_path / "a.db"), FakeFeed(table_id="tb")
    for ev in _rounds("ta", [0, 2, 4]):
        a.publish_event(ev)
    b.publish_frame(np.zeros((90, 160, 3), np.uint8))
    c = TestClient(create_pit_app(_Pit({"ta": a, "tb": b}), token=TOKEN))
    d = c.get("/api/pit/tables").json()
    assert d["control"] is True
    ta, tb = d["tables"]
    assert ta["pace"]["rounds_per_hour"] == 30.0 and ta["pace"]["rounds"] == 3
    assert [x["say"] for x in ta["alerts"]] == [HOUSE_WAY] and ta["audit"] is True
    assert ta["has_picture"] is False and tb["has_picture"] is True
    assert tb["snapshot"] == "/tables/tb/snapshot.jpg" and tb["alerts"] == []
    assert c.get(tb["snapshot"]).headers["content-type"] == "image/jpeg"


# ------------------------------------------------------------------------- in Chromium

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
WAIT_MS = 20_000  # an upper bound for slow shared machines, not a speed assertion


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed")
def test_pit_cards_in_chromium(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    uvicorn = pytest.importorskip("uvicorn")

    from vision.audit import AuditStore, verify
    from vision.commands.serve import bind_socket
    from vision.web.pit import create_pit_app

    db = tmp_path / "audit.db"
    a = FakeFeed(table_id="table-a", audit=db)
    b = FakeFeed(table_id="table-b")
    evs = _rounds("table-a", [0, 2, 4])
    with AuditStore(db) as st:
        evs[-1] = st.append(evs[-1]).payload  # the round shown last is stored (acks need it)
    for ev in evs:
        a.publish_event(ev)
    red = np.zeros((180, 320, 3), np.uint8)
    red[:] = (0, 0, 220)
    a.publish_frame(red, alerts=[{"kind": "house_way_deviation", "position": "dealer",
                                  "detail": "dealer set the house way differently"}])
    b.publish_frame(np.full((180, 320, 3), 200, np.uint8))
    app = create_pit_app(_Pit({"table-a": a, "table-b": b}), token=TOKEN)
    sock = bind_socket("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off",
                                           timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    a.start()
    b.start()
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            ctx = browser.new_context(viewport={"width": 1600, "height": 1000})
            page = ctx.new_page()
            page.goto(url + "/", wait_until="domcontentloaded")
            page.wait_for_function("() => document.querySelectorAll('.pit-card').length === 2",
                                   timeout=WAIT_MS)
            card_a = page.locator('.pit-card[data-table="table-a"]')
            card_b = page.locator('.pit-card[data-table="table-b"]')
            # the thumbnails: each table's own picture, loaded
            for card, want in ((card_a, "red"), (card_b, "grey")):
                img = card.locator("img.pit-thumb")
                img.wait_for(state="attached", timeout=WAIT_MS)
                page.wait_for_function(
                    "e => e.complete && e.naturalWidth > 0", arg=img.element_handle(),
                    timeout=WAIT_MS)
                assert img.evaluate("e => e.naturalWidth") == 320
                pixel = img.evaluate("""e => { const c = document.createElement('canvas');
                    c.width = e.naturalWidth; c.height = e.naturalHeight;
                    const g = c.getContext('2d'); g.drawImage(e, 0, 0);
                    return Array.from(g.getImageData(160, 90, 1, 1).data); }""")
                if want == "red":
                    assert pixel[0] > 180 and pixel[1] < 60 and pixel[2] < 60, pixel
                else:
                    assert all(abs(v - 200) < 20 for v in pixel[:3]), pixel
            src0 = card_a.locator("img.pit-thumb").get_attribute("src")
            page.wait_for_function(  # refreshed: a new picture URL after a few seconds
                "([sel, s]) => document.querySelector(sel).getAttribute('src') !== s",
                arg=['.pit-card[data-table="table-a"] img.pit-thumb', src0], timeout=WAIT_MS)

            # alerts in words, each once (the round's and the live one are one line)
            items = card_a.locator(".pit-alerts li")
            assert items.count() == 1
            assert items.first.inner_text().startswith(HOUSE_WAY)
            assert card_a.inner_text().count(HOUSE_WAY) == 1
            assert "house_way_deviation" not in card_a.inner_text()
            assert card_b.locator(".pit-alerts").inner_text() == "no alerts"
            # the pace: 3 rounds over 4 minutes
            assert card_a.locator(".pit-pace").inner_text() == "pace 30.0 rounds/hour (3 rounds)"
            assert card_b.locator(".pit-pace").inner_text() == "pace - (0 rounds)"

            # acknowledge from the pit: recorded in the table's audit store
            page.fill("#pit-token", TOKEN)
            page.fill("#pit-by", "pit-boss")
            card_a.locator(".pit-alerts button.ack").click()
            page.wait_for_selector('.pit-card[data-table="table-a"] .pit-alerts li.acked',
                                   timeout=WAIT_MS)
            assert card_a.locator(".pit-alerts button.ack").count() == 0
            assert "acknowledged" in page.locator("#pit-msg").inner_text()
            page.screenshot(path="/tmp/paigow_pit_cards.png")
            ctx.close()
            browser.close()
    finally:
        a.stop()
        b.stop()
        server.should_exit = True
        thread.join(10)
        sock.close()
    with AuditStore(db, create=False) as st:
        recs = list(st.rounds())
    assert [r.payload.get("kind", "round") for r in recs] == ["round", "ack"]
    ack = recs[1].payload["ack"]
    assert ack["alert"]["kind"] == "house_way_deviation" and ack["by"] == "pit-boss"
    assert verify(db).ok

"""The dealer mode (GET /dealer) in a real headless Chromium at 1920x1080 (Debian's
/usr/bin/chromium driven by Playwright for Python, as in test_serve_browser.py): results,
hands, bets and nets in >= 32 px type, plain-language reasons and never a decoder message, a
hand being dealt is not an alert, alerts acknowledged from the page and a supervisor's entry
of an unread tile -- both recorded in the audit store, which still verifies. Screenshots:
/tmp/paigow_dealer_mode*.png."""

from __future__ import annotations

import os
import threading

import pytest

from scoring.errors import InputError
from vision.audit import AuditStore, verify
from fakes import event_from_deal

TOKEN = "s3cret-token"
DEAL_1 = {"dealer": ["6-6", "1-3", "4-5", "2-2"], "1": ["1-1", "5-6", "3-4", "2-6"],
          "2": ["1-2", "2-4", "3-3", "5-5"], "3": ["4-4", "1-6", "2-3", "3-6"]}
DECODER_WORDS = ("read A", "read B", "no face has", "reads disagree", "white spots")


def _events():
    from helpers.audit_events import _unread_round

    ev1 = event_from_deal(DEAL_1, "r000001", table_id="table-7")
    ev1["time"] = "2026-11-30T22:00:00.000Z"
    ev2, rid, k, face = _unread_round("table-7", 2)
    return ev1, ev2, k, face


# ------------------------------------------------------------------------- without a browser


def test_hand_being_dealt_is_not_an_alert_until_it_stays_short():
    from fakes import FakeFeed

    feed = FakeFeed(table_id="t", dealing_frames=3)
    view = {"3": {"tiles": ["1-1", "2-2"], "status": "problem",
                  "detail": "2 tiles, a position holds 4", "problems": ["wrong_tile_count"]}}
    alert = [{"kind": "wrong_tile_count", "position": "3", "detail": "2 tiles, a position holds 4"}]
    feed.publish_frame(None, positions=view, alerts=alert)
    st = feed.state()
    assert st["live"]["positions"]["3"]["status"] == "dealing" and st["live"]["alerts"] == []
    view3 = {"3": dict(view["3"], tiles=["1-1", "2-2", "3-3"])}  # the next tile laid
    for _ in range(2):
        feed.publish_frame(None, positions=view3, alerts=alert)
        assert feed.state()["live"]["positions"]["3"]["status"] == "dealing"
    feed.publish_frame(None, positions=view3, alerts=alert)  # 3 frames unchanged: a problem
    st = feed.state()
    assert st["live"]["positions"]["3"]["status"] == "problem"
    (a,) = st["live"]["alerts"]
    assert a["say"] == "Seat 3: 2 tiles -- a hand needs 4 tiles"


def test_plain_reasons_never_carry_the_decoder_message():
    from vision.io.views import plain_reason, positions_view

    _, ev2, _, _ = _events()
    view = positions_view(ev2)
    assert view["dealer"]["say"] == "Dealer: a tile cannot be read -- move the hand into view"
    assert view["dealer"]["alerts"][0]["say"] == view["dealer"]["say"]
    for p in view.values():
        assert not any(w in (p["say"] or "") for w in DECODER_WORDS)
    assert plain_reason("3", "1 tile(s) unknown (read A: no face has 0 red and 2 white spots; "
                             "reads disagree)") == \
        "Seat 3: a tile cannot be read -- move the hand into view"


def test_control_endpoints_need_the_token_and_a_store(tmp_path):
    from fastapi.testclient import TestClient
    from fakes import FakeFeed

    from vision.web.app import create_app

    ev1, _, _, _ = _events()
    feed = FakeFeed(table_id="table-7")  # no audit store
    feed.publish_event(ev1)
    c = TestClient(create_app(feed, token=TOKEN))
    body = {"round_id": "r000001", "kind": "house_way_deviation", "position": "dealer"}
    assert "d-seats" in c.get("/?mode=dealer").text and "d-seats" in c.get("/dealer").text
    assert "d-seats" not in c.get("/").text
    assert c.post("/api/control/ack", json=body).status_code == 401
    assert c.post("/api/control/ack", json=body, headers={"X-Token": "no"}).status_code == 403
    r = c.post("/api/control/ack", json=body, headers={"X-Token": TOKEN})
    assert r.status_code == 409 and "--audit" in r.json()["error"]
    with pytest.raises(InputError, match="not among the rounds shown"):
        feed.acknowledge("r000999", "mis_set", "1")


def test_the_picture_labels_use_plain_words_too():
    """The overlay drawn into the video says what the dealer page says (without the name the
    label already shows), on whole-word lines, never the decoder's message."""
    from types import SimpleNamespace

    import numpy as np

    from vision.recognition.decode import TileRead
    from vision.io.overlay import _label_lines
    from vision.table.rounds import PositionState
    from vision.io.views import round_view

    poly = np.array([[0, 0], [50, 0], [50, 100], [0, 100]], np.float32)
    st = PositionState("3", [TileRead(None, "unknown", 0.2, poly, np.array([0, 0, 50, 100]))],
                       problems=[("unknown_tile", "1 tile(s) unknown (read A: no face has 0 "
                                                  "red and 2 white spots; reads disagree)")])
    res = SimpleNamespace(positions={"3": st}, reads=[], tile_positions=[], round=None)
    view = round_view(res, rules="pa", banker="dealer", table_id="t")
    entry = dict(view["positions"]["3"], result="not_settled")
    assert entry["reason"] == "a tile cannot be read -- move the hand into view"
    lines, _ = _label_lines("3", entry, "dealer")
    assert lines == ["Seat 3: NOT SETTLED", "a tile cannot be read -- move the", "hand into view"]


# ------------------------------------------------------------------------- in Chromium

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
WAIT_MS = 20_000  # an upper bound for slow shared machines, not a speed assertion


def _font_px(page, selector) -> list[float]:
    return page.evaluate("""sel => [...document.querySelectorAll(sel)]
        .filter(e => e.textContent.trim() !== '')
        .map(e => parseFloat(getComputedStyle(e).fontSize))""", selector)


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed")
def test_dealer_mode_in_chromium_at_1920x1080(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    uvicorn = pytest.importorskip("uvicorn")
    from fakes import FakeFeed

    from vision.commands.serve import bind_socket
    from vision.web.app import create_app

    ev1, ev2, k, face = _events()
    db = tmp_path / "audit.db"
    feed = FakeFeed(table_id="table-7", audit=db)
    app = create_app(feed, token=TOKEN)
    sock = bind_socket("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off",
                                           timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    feed.start()
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            ctx = browser.new_context(viewport={"width": 1920, "height": 1080})
            page = ctx.new_page()
            page.goto(url + "/dealer", wait_until="domcontentloaded")
            page.fill("#d-token", TOKEN)
            page.fill("#d-by", "sup-7")

            # a settled round (stored first, as the session does), with a house-way alert
            with AuditStore(db) as st:
                ev1 = st.append(ev1).payload
            feed.publish_event(ev1)
            page.wait_for_function("() => document.getElementById('round-id').textContent "
                                   "=== 'r000001'", timeout=WAIT_MS)
            for pos, o in ev1["positions"].items():
                card = page.locator(f'.d-card[data-pos="{pos}"]')
                assert card.locator(".d-net").inner_text().lstrip("+") == o["net"]
                if o.get("result"):
                    assert card.locator(".d-result").inner_text() == o["result"].upper()
                if o.get("bet") and pos != "dealer":
                    assert card.locator(".d-bet").inner_text() == f"Bet {o['bet']}"
            for sel in (".d-result", ".d-net", ".d-hand", ".d-bet", ".d-name", ".d-alerts li",
                        ".d-head"):
                sizes = _font_px(page, sel)
                assert sizes and min(sizes) >= 32, (sel, sizes)
            assert "Dealer: not set the house way" in page.locator("#d-alerts").inner_text()
            page.locator("#d-alerts button.ack").first.click()
            page.wait_for_selector("#d-alerts li.acked", timeout=WAIT_MS)

            # a hand being laid out: no alert, "being dealt"
            feed.publish_frame(None, positions={"3": {
                "tiles": ["1-1", "2-2"], "status": "problem",
                "detail": "2 tiles, a position holds 4", "problems": ["wrong_tile_count"]}},
                alerts=[{"kind": "wrong_tile_count", "position": "3",
                         "detail": "2 tiles, a position holds 4"}])
            page.wait_for_function("() => document.getElementById('d-live').textContent"
                                   ".includes('Seat 3: being dealt')", timeout=WAIT_MS)

            # a round whose banker tile could not be read: plain words, never the decoder's
            with AuditStore(db) as st:
                ev2 = st.append(ev2).payload
            feed.publish_event(ev2)
            page.wait_for_function("() => document.getElementById('round-id').textContent "
                                   "=== 'r000002'", timeout=WAIT_MS)
            assert page.locator("#d-state").inner_text() == "NOT SETTLED"
            text = page.locator("body").inner_text()
            assert "Dealer: a tile cannot be read -- move the hand into view" in text
            assert not any(w in text for w in DECODER_WORDS), text
            assert not any(w in page.content() for w in DECODER_WORDS)
            page.screenshot(path="/tmp/paigow_dealer_mode_unread.png")

            # the supervisor enters the unread tile
            page.select_option(f'#d-manual-list select[data-tile="{k}"]', face)
            page.locator(f'#d-manual-list li[data-tile="{k}"] button.enter').click()
            page.wait_for_function("() => document.getElementById('d-state').textContent "
                                   "=== 'SETTLED BY MANUAL ENTRY'", timeout=WAIT_MS)
            assert page.locator(".d-manual-mark").count() >= 1
            sizes = _font_px(page, ".d-result") + _font_px(page, ".d-net")
            assert sizes and min(sizes) >= 32
            assert not any(w in page.content() for w in DECODER_WORDS)
            page.screenshot(path="/tmp/paigow_dealer_mode.png")
            ctx.close()
            browser.close()
    finally:
        feed.stop()
        server.should_exit = True
        thread.join(10)
        sock.close()

    with AuditStore(db, create=False) as st:
        recs = list(st.rounds())
    kinds = [r.payload.get("kind", "round") for r in recs]
    assert kinds == ["round", "ack", "round", "manual"]
    ack, cam, man = recs[1].payload, recs[2].payload, recs[3].payload
    assert ack["ack"]["alert"]["kind"] == "house_way_deviation" and ack["ack"]["by"] == "sup-7"
    assert cam["tiles"][k]["face"] is None  # the camera's read stands beside the entry
    assert man["manual"]["entries"][0]["face"] == face and man["manual"]["by"] == "sup-7"
    assert man["settled"] is True
    assert verify(db).ok

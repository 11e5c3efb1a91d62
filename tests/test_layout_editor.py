"""The layout editor of ``paigow serve`` (vision/web/layout_editor.py): token, checks while
editing, saving to the file, the next round using the saved layout -- through the API, and in
a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright: drag a vertex,
save).

The feed is the real :class:`vision.web.feed.PipelineFeed` running ``paigow run``'s frame loop
over a still picture replayed (each pass one round) through a real
:class:`vision.pipeline.Pipeline` whose reading stage returns hand-made tile reads (no models):
the dealer and seats 1 and 2, seat 2's polygon in the first layout missing one of its tiles.
"""

from __future__ import annotations

import os
import threading
import time

import cv2
import numpy as np
import pytest
import yaml

from vision.recognition.engine import Reads
from vision.recognition.decode import TileRead
from vision.pipeline import Pipeline
from vision.table.rounds import load_layout, points_in_polygon

FRAME = (1280, 720)
TW, TH = 30.0, 66.0
DEAL = {"dealer": ["6-6", "4-5", "1-3", "2-2"], "1": ["1-1", "3-6", "5-5", "1-6"],
        "2": ["2-4", "1-2", "4-4", "3-4"]}
PLACES = {"dealer": (640, 600), "1": (340, 200), "2": (940, 200)}
TOKEN = "s3cret-token"


def _reads():
    out = []
    for pos, faces in DEAL.items():
        cx, cy = PLACES[pos]
        for f, dx in zip(faces, (-1.5 * TW - 17, -0.5 * TW - 15, 0.5 * TW + 15, 1.5 * TW + 17)):
            x = cx + dx
            q = np.array([[x - TW / 2, cy - TH / 2], [x + TW / 2, cy - TH / 2],
                          [x + TW / 2, cy + TH / 2], [x - TW / 2, cy + TH / 2]], np.float32)
            out.append(TileRead(f, "face_up", 0.95, q, np.r_[q.min(0), q.max(0)]))
    return out


def _box(x0, y0, x1, y1):
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


#: seat 2's box ends before its last tile (centre x 940 + 62 = 1002)
FIRST = {"table_id": "t-edit", "positions": {
    "dealer": _box(500, 540, 780, 660), "1": _box(200, 140, 480, 260),
    "2": _box(800, 140, 985, 260)}}


def _last_tile_centre():
    return np.array([PLACES["2"][0] + 1.5 * TW + 17, PLACES["2"][1]])


class _Reading:
    """The reading stage: the same hand-made reads for every picture, a little slowly (the
    replayed picture is one round per pass; this paces the rounds)."""

    def __call__(self, image, mode, clock=None):
        time.sleep(0.05)
        return Reads(tuple(_reads()))


@pytest.fixture
def feed(tmp_path):
    from vision.table.rounds import Layout
    from vision.web.feed import PipelineFeed

    img = tmp_path / "table.png"
    cv2.imwrite(str(img), np.zeros((FRAME[1], FRAME[0], 3), np.uint8))
    lay_file = tmp_path / "table.yaml"
    lay_file.write_text(yaml.safe_dump(FIRST, sort_keys=False))
    pipe = Pipeline(tile_detector=object(), pip_detector=object(), n_stable=1, draw=True,
                    layout=load_layout(lay_file))
    pipe.still_images = True
    pipe.engine.read = _Reading()
    f = PipelineFeed(str(img), pipeline=pipe, loop=True, realtime=False)
    f.layout_file = lay_file
    assert isinstance(pipe.layout, Layout)
    yield f
    f.stop()


def _client(feed, token=TOKEN, layout_file="from-feed"):
    from fastapi.testclient import TestClient

    from vision.web.app import create_app

    return TestClient(create_app(feed, token=token, layout_file=str(
        feed.layout_file) if layout_file == "from-feed" else layout_file))


def _rounds(feed) -> int:
    """Rounds published so far (the history keeps only the newest 20, so its length stops
    growing: CI saw a fast feed fill it before the save)."""
    return feed.state()["round_count"]


def _wait(cond, timeout=20.0):
    end = time.monotonic() + timeout  # an upper bound for a slow shared machine
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def test_api_needs_the_token(feed):
    c = _client(feed)
    assert c.get("/api/layout").status_code == 401
    assert c.get("/api/layout", headers={"X-Token": "nope"}).status_code == 403
    assert c.post("/api/layout", json=FIRST).status_code == 401
    assert _client(feed, token=None).get("/api/layout",
                                         headers={"X-Token": TOKEN}).status_code == 403
    assert c.get("/layout").status_code == 200  # the page itself asks for the token


def test_check_names_the_position_and_save_refuses_bad_layouts(feed):
    feed.start()
    assert _wait(lambda: feed.frame_size is not None)
    c = _client(feed)
    h = {"X-Token": TOKEN}
    r = c.get("/api/layout", headers=h).json()
    assert r["frame_size"] == list(FRAME) and r["layout"]["positions"]["2"] == FIRST[
        "positions"]["2"]
    # three positions only: the proposal asks for the dealer, then takes it
    assert "--dealer-at" in r["proposal"]["error"]
    r = c.get("/api/layout?dealer_at=640,600", headers=h).json()
    got = r["proposal"]["layout"]["positions"]
    assert len(got) == 3 and points_in_polygon(np.array([PLACES["dealer"]], float),
                                               got["dealer"])[0]
    bad = {"positions": dict(FIRST["positions"], **{"1": _box(450, 500, 600, 620)})}
    r = c.post("/api/layout/check", json=bad, headers=h).json()
    assert r["ok"] is False and "positions 'dealer' and '1' overlap" in r["error"]
    cross = {"positions": dict(FIRST["positions"], **{"2": [[800, 140], [985, 260],
                                                           [985, 140], [800, 260]]})}
    assert "position '2' is self-intersecting" in c.post("/api/layout/check", json=cross,
                                                         headers=h).json()["error"]
    off = {"positions": dict(FIRST["positions"], **{"2": _box(1300, 140, 1500, 260)})}
    assert "position '2' lies off the 1280 x 720 px picture" in c.post(
        "/api/layout/check", json=off, headers=h).json()["error"]
    before = feed.layout_file.read_text()
    r = c.post("/api/layout", json=bad, headers=h)
    assert r.status_code == 400 and "overlap" in r.json()["detail"]
    assert feed.layout_file.read_text() == before
    assert _client(feed, layout_file=None).post("/api/layout", json=FIRST,
                                                headers=h).status_code == 409


def test_saved_layout_is_used_by_the_next_round(feed):
    feed.start()
    c = _client(feed)
    h = {"X-Token": TOKEN}
    assert _wait(lambda: any(e["positions"].get("2", {}).get("result") == "not_settled"
                             for e in feed.history()))
    wider = {"table_id": "t-edit", "positions": dict(FIRST["positions"],
                                                      **{"2": _box(800, 140, 1060, 260)})}
    assert c.post("/api/layout", json=wider, headers=h).json() == {"saved": str(feed.layout_file)}
    assert load_layout(feed.layout_file).positions["2"].tolist() == wider["positions"]["2"]
    seen = _rounds(feed)
    assert _wait(lambda: _rounds(feed) > seen + 1)
    newest = feed.history()[0]
    assert newest["positions"]["2"]["result"] in ("win", "lose", "push")


# ------------------------------------------------------------------------- in Chromium

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
WAIT_MS = 20_000  # an upper bound for slow shared machines, not a speed assertion


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs /usr/bin/chromium")
def test_drag_a_vertex_save_and_the_next_round_uses_it(feed):
    sync_api = pytest.importorskip("playwright.sync_api")
    uvicorn = pytest.importorskip("uvicorn")
    from vision.commands.serve import bind_socket
    from vision.web.app import create_app

    app = create_app(feed, token=TOKEN, layout_file=str(feed.layout_file))
    sock = bind_socket("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off",
                                           timeout_graceful_shutdown=1))
    th = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    feed.start()
    th.start()
    try:
        assert _wait(lambda: any(e["positions"].get("2", {}).get("result") == "not_settled"
                                 for e in feed.history()))
        with sync_api.sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = b.new_page(viewport={"width": 1400, "height": 900})
            page.goto(url + "/layout", wait_until="domcontentloaded")
            page.fill("#l-token", TOKEN)
            page.click("#l-load")
            page.wait_for_selector('circle[data-position="2"][data-vertex="1"]',
                                   timeout=WAIT_MS)
            svg = page.locator("#l-svg").bounding_box()
            scale = svg["width"] / FRAME[0]
            # drag seat 2's top-right corner 110 frame px to the right
            v = page.locator('circle[data-position="2"][data-vertex="1"]').bounding_box()
            x, y = v["x"] + v["width"] / 2, v["y"] + v["height"] / 2
            page.mouse.move(x, y)
            page.mouse.down()
            page.mouse.move(x + 55 * scale, y, steps=4)
            page.mouse.move(x + 110 * scale, y, steps=4)
            page.mouse.up()
            page.wait_for_function("() => document.getElementById('l-status').textContent"
                                   ".startsWith('layout valid')", timeout=WAIT_MS)
            seen = _rounds(feed)
            page.click("#l-save")
            page.wait_for_function("() => document.getElementById('l-status').textContent"
                                   ".startsWith('saved to')", timeout=WAIT_MS)
            page.screenshot(path="/tmp/paigow_layout_editor.png")
            b.close()
        poly = load_layout(feed.layout_file).positions["2"]
        assert abs(poly[1][0] - 1095) < 8 and abs(poly[1][1] - 140) < 8
        assert poly[0].tolist() == [800, 140]
        assert points_in_polygon(_last_tile_centre()[None], poly)[0]
        assert _wait(lambda: _rounds(feed) > seen + 1)
        assert feed.history()[0]["positions"]["2"]["result"] in ("win", "lose", "push")
    finally:
        feed.stop()
        server.should_exit = True
        th.join(10)
        sock.close()

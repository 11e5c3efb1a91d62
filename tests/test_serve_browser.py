"""The dealer display in a real headless Chromium (Debian's /usr/bin/chromium, driven by
Playwright for Python; no `playwright install`): the page loads, shows a settled round (hands,
results) and updates for the next round, with

1. a scripted FakeFeed (rounds pushed by the test), and
2. PipelineFeed playing a rendered video of two deals (vision.synth.render.render_table, written
   losslessly with cv2.VideoWriter/FFV1) through the real vision.pipeline.Pipeline, with
   detectors that return the renderer's ground truth (the trained models are not needed; the
   display path from video file to browser is real).
3. the same with the trained models (models/tiles.onnx, models/pips.onnx): skipped while they
   are absent.

The server is uvicorn on 127.0.0.1 with a free port, in a thread. Skips cleanly without
/usr/bin/chromium or playwright. Screenshots go to /tmp/paigow_display*.png.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

CHROMIUM = "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
uvicorn = pytest.importorskip("uvicorn")

from fakes import GroundTruthDetectors  # noqa: E402

from vision.commands.serve import bind_socket  # noqa: E402
from vision.web.app import create_app  # noqa: E402
from fakes import FakeFeed  # noqa: E402
from fakes import event_from_deal  # noqa: E402
from vision.web.feed import PipelineFeed  # noqa: E402

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
RESULT_TEXT = {"win": "WIN", "lose": "LOSE", "push": "PUSH", "not_settled": "NOT SETTLED"}
WAIT_MS = 20_000  # an upper bound for slow shared machines, not a speed assertion
REPO = Path(__file__).resolve().parents[1]
# held-out range (most tiles read; unread ones: NOT SETTLED). 1_000_202 was here until the
# flush-block rule (vision.recognition.flush.cut_either_way): at 960 x 540 three of its hands
# are square flush blocks of halves alike turned a quarter, too small for the seam check, so
# six of its tiles are unknown by design -- this test is about the page, not that rule
SEEDS = (1_000_201, 1_000_204)

DEAL_1 = {"dealer": ["6-6", "1-3", "4-5", "2-2"], "1": ["1-1", "5-6", "3-4", "2-6"],
          "2": ["1-2", "2-4", "3-3", "5-5"], "3": ["4-4", "1-6", "2-3", "3-6"]}
DEAL_2 = {"dealer": ["1-1", "5-6", "3-4", "2-6"], "1": ["6-6", "4-5", "1-3", "2-2"],
          "2": ["1-2", "2-4", "3-3", "5-5"], "3": ["4-4", "1-6", "2-3", "3-6"]}


class Server:
    """uvicorn serving ``create_app(feed)`` on 127.0.0.1:<free port> in a thread; leaving
    stops the feed first (which ends the open picture and event streams), then the server."""

    def __init__(self, feed):
        self.feed = feed
        app = create_app(feed)
        self.sock = bind_socket("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", lifespan="off",
                                timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.feed.stop()
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = ctx.new_page()
    yield pg
    ctx.close()


def _watch_round_id(page):
    """Record every round id the page shows, in order (window.__seen)."""
    page.evaluate("""() => {
        window.__seen = [];
        const el = document.getElementById('round-id');
        const note = () => { const t = el.textContent;
            if (window.__seen[window.__seen.length - 1] !== t) window.__seen.push(t); };
        note();
        new MutationObserver(note).observe(el, {childList: true, characterData: true,
                                                subtree: true});
    }""")


def _wait_round(page, round_id):
    page.wait_for_function("id => document.getElementById('round-id').textContent === id",
                           arg=round_id, timeout=WAIT_MS)


def _check_table(page, ev):
    """Every position row shows the event's hands, result and net."""
    for pos, p in ev["positions"].items():
        row = page.locator(f'#positions-body tr[data-pos="{pos}"]')
        cells = row.locator("td")
        result = row.locator(".result").inner_text()
        if p.get("high") is None:  # a position with a tile not read: no hands shown
            assert cells.nth(1).locator(".tiles").inner_text() == "-", pos
            # not settled -- or settled all the same where every face the unread tile can
            # have gives one result (vision.table.open_tile): the page shows what the event says
            want = "not_settled" if pos == ev["banker_position"] else p.get("result")
            assert result == RESULT_TEXT[want or "not_settled"], pos
            continue
        assert cells.nth(1).locator(".tiles").inner_text() == " ".join(p["high"]), pos
        assert cells.nth(2).locator(".tiles").inner_text() == " ".join(p["low"]), pos
        assert p["high_hand"] in cells.nth(1).inner_text(), pos
        if pos == ev["banker_position"]:
            assert result in ("WIN", "LOSE", "PUSH"), pos
        else:
            assert result == RESULT_TEXT[p["result"]], pos
        net = cells.nth(4).inner_text()
        assert net.lstrip("+") == p["net"], pos


def _picture_loaded(page) -> bool:
    return page.evaluate("() => document.getElementById('video').naturalWidth > 0")


# ------------------------------------------------------------------------------ scripted feed


def test_page_shows_each_pushed_round(page):
    from vision.synth.render import render_table

    feed = FakeFeed(table_id="table-7")
    feed.publish_frame(render_table(SEEDS[0], size=(960, 540)).image, frame_index=0)
    feed.start()
    ev1 = event_from_deal(DEAL_1, "r000001", table_id="table-7")
    ev2 = event_from_deal(DEAL_2, "r000002", table_id="table-7")
    try:
        with Server(feed) as srv:
            page.goto(srv.url + "/", wait_until="domcontentloaded")
            page.wait_for_function("() => document.getElementById('status').textContent "
                                   "=== 'running'", timeout=WAIT_MS)
            assert page.locator("#round-id").inner_text() == "none yet"
            assert page.locator("#table-id").inner_text() == "table-7"
            page.wait_for_function("() => document.getElementById('events-status')"
                                   ".textContent === 'live'", timeout=WAIT_MS)
            _watch_round_id(page)

            feed.publish_event(ev1)
            _wait_round(page, "r000001")
            _check_table(page, ev1)
            # seat 2 (Gee Joon / Mooy 6) beats the dealer's Teen 6 / Bon 3: WIN +0.95
            assert page.locator('#positions-body tr[data-pos="2"] .result').inner_text() == "WIN"
            assert "Dealer: not set the house way" in page.locator("#alerts").inner_text()
            assert page.locator("#positions-body tr").first.get_attribute("data-pos") == "dealer"
            assert not page.locator("#control").is_visible()  # no token: no control form
            page.wait_for_function("() => document.getElementById('video').naturalWidth > 0",
                                   timeout=WAIT_MS)
            page.screenshot(path="/tmp/paigow_display.png", full_page=True)

            feed.publish_event(ev2)
            _wait_round(page, "r000002")
            _check_table(page, ev2)
            assert page.locator("#alerts li").count() == len(ev2["alerts"]) == 1  # dealer way
            assert page.locator("#history li").count() == 2
            assert [s for s in page.evaluate("() => window.__seen") if s != "none yet"] == \
                ["r000001", "r000002"]
    finally:
        feed.stop()


# ------------------------------------------------------------------------------ real pipeline


def _two_round_video(path: Path, scenes, frames_each: int = 6, fps: float = 5.0) -> Path:
    h, w = scenes[0].image.shape[:2]
    vw = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"FFV1"), fps, (w, h))
    if not vw.isOpened():
        pytest.skip("OpenCV cannot write FFV1 video here")
    for sc in scenes:
        for _ in range(frames_each):
            vw.write(sc.image)
    vw.release()
    cap = cv2.VideoCapture(str(path))
    ok, first = cap.read()
    cap.release()
    if not ok or not np.array_equal(first, scenes[0].image):
        pytest.skip("FFV1 round trip is not lossless with this OpenCV build")
    return path


def _play(page, feed, shot: str) -> list[dict]:
    """Load the page, play the feed to its end, check the page showed every settled round in
    order and shows the last one's hands and results; returns the events."""
    sub = feed.subscribe()
    try:
        with Server(feed) as srv:
            page.goto(srv.url + "/", wait_until="domcontentloaded")
            page.wait_for_function("() => document.getElementById('events-status')"
                                   ".textContent === 'live'", timeout=WAIT_MS)
            _watch_round_id(page)
            feed.start()
            feed._thread.join(120)
            assert feed.state()["status"] == "ended", feed.state()["error"]
            events = []
            while (ev := sub.get(timeout=0)) is not None:
                events.append(ev)
            assert events, "no round settled"
            _wait_round(page, events[-1]["round_id"])
            _check_table(page, events[-1])
            seen = [s for s in page.evaluate("() => window.__seen") if s != "none yet"]
            assert seen == [e["round_id"] for e in events]
            assert page.locator("#history li").count() == len(events)
            page.wait_for_function("() => document.getElementById('status').textContent "
                                   "=== 'ended'", timeout=WAIT_MS)
            assert _picture_loaded(page)
            page.screenshot(path=shot, full_page=True)
    finally:
        feed.stop()
    return events


def test_pipeline_feed_on_a_rendered_two_round_video(page, tmp_path):
    from vision.synth.render import render_table

    scenes = [render_table(s, size=(960, 540)) for s in SEEDS]
    video = _two_round_video(tmp_path / "two_rounds.avi", scenes)
    det = GroundTruthDetectors(scenes)
    feed = PipelineFeed(video, pipeline_kwargs={"n_stable": 2, "tile_detector": det,
                                                "pip_detector": det})
    ev1, ev2 = _play(page, feed, "/tmp/paigow_display_pipeline.png")
    assert (ev1["round_id"], ev2["round_id"]) == ("r000001", "r000002")
    # each round settles while its own deal is on the table (6 frames each; the decode budget
    # of 8 tiles a frame reads 32 tiles in 4 frames, then 2 stable frames are needed)
    assert 1 <= ev1["frame_index"] < 6 and 7 <= ev2["frame_index"] < 12
    for ev, sc in zip((ev1, ev2), scenes):
        # every tile read: the settled hands are the rendered deal's (auto-grouped seats)
        got = sorted(sorted(p["tiles"]) for p in ev["positions"].values())
        assert got == sorted(sorted(f) for f in sc.deal.values())
        assert all(p.get("result") != "not_settled" for p in ev["positions"].values())


@pytest.mark.skipif(not ((REPO / "models" / "tiles.onnx").is_file()
                         and (REPO / "models" / "pips.onnx").is_file()),
                    reason="trained models (models/tiles.onnx, models/pips.onnx) not present")
@pytest.mark.slow
def test_pipeline_feed_with_trained_models(page, tmp_path):
    from vision.synth.render import render_table

    scenes = [render_table(s, size=(1920, 1080)) for s in SEEDS]
    video = _two_round_video(tmp_path / "two_rounds.avi", scenes, frames_each=8)
    feed = PipelineFeed(video, pipeline_kwargs={"n_stable": 2})
    # how many rounds settle depends on the models' reads (their accuracy is measured
    # elsewhere); the page must show each one that does, in order
    events = _play(page, feed, "/tmp/paigow_display_models.png")
    assert len(events) <= 2

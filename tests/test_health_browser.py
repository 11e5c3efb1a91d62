"""The dealer display's camera banner in a real headless Chromium (Debian's /usr/bin/chromium,
driven by Playwright; skipped without them): while the feed's source is reconnecting the page
shows "camera lost for N s -- reconnecting" with N counting up; once the camera is back the
banner goes away and the header shows the gap. Screenshots: /tmp/paigow_display_camera*.png."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

CHROMIUM = "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
uvicorn = pytest.importorskip("uvicorn")

from fakes import FakeFeed  # noqa: E402

from vision.commands.serve import bind_socket  # noqa: E402
from vision.io.frames import FeedState  # noqa: E402
from vision.web.app import create_app  # noqa: E402

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
WAIT_MS = 20_000  # an upper bound for slow shared machines, not a speed assertion


class OutageFeed(FakeFeed):
    """A scripted feed whose source was lost at ``lost_at`` (monotonic) and is back when
    ``back`` holds the gap's length."""

    def __init__(self) -> None:
        super().__init__(table_id="t-banner")
        self.lost_at = time.monotonic() - 12.0
        self.back: float | None = None

    def feed_state(self):
        now = time.monotonic()
        if self.back is None:
            gap = now - self.lost_at
            return FeedState("reconnecting", time.time() - gap, gap, gap, gap, None, 0, 4, True)
        return FeedState("connected", time.time() - 1.0, 1.0, 0.05, 0.0, self.back, 1, 0, True)


@pytest.mark.timeout(90)
def test_page_shows_the_camera_lost_banner_and_the_gap():
    feed = OutageFeed().start()
    feed.publish_frame(np.full((90, 160, 3), 60, np.uint8), frame_index=1)
    sock = bind_socket("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(create_app(feed), log_level="warning",
                                           lifespan="off", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.goto(url + "/")
                banner = page.locator("#camera-lost")
                banner.wait_for(state="visible", timeout=WAIT_MS)
                text = banner.inner_text()
                n = int(text.split("camera lost for ")[1].split(" s")[0])
                assert 12 <= n <= 40 and text.startswith("camera lost for ")
                assert "-- reconnecting (attempt 5)" in text
                assert page.locator("#camera").inner_text() == "reconnecting"
                page.screenshot(path="/tmp/paigow_display_camera_lost.png")
                # N counts up with the page's refresh
                page.wait_for_function(
                    "n => parseInt(document.getElementById('camera-lost').textContent"
                    ".split('for ')[1]) > n", arg=n, timeout=WAIT_MS)
                feed.back = 63.37
                banner.wait_for(state="hidden", timeout=WAIT_MS)
                assert page.locator("#camera").inner_text() == "connected"
                assert page.locator("#gaps").inner_text() == "(1 gap, last 63.4 s)"
                page.screenshot(path="/tmp/paigow_display_camera.png")
            finally:
                browser.close()
    finally:
        feed.stop()
        server.should_exit = True
        thread.join(10)
        sock.close()

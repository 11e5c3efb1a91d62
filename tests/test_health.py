"""The dealer display's health (vision/web/health.py): ``/healthz`` and the page's camera
state from the source's feed state, with scripted feed states; the settings that steer them
(``--health-grace``, ``--reconnect-max``, the config file's ``serve`` and ``capture``
sections); a live PipelineFeed through a short outage of a local MJPEG stream."""

from __future__ import annotations

import re
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from fakes import FakeFeed  # noqa: E402
from scoring.errors import InputError  # noqa: E402
from vision.cli import main  # noqa: E402
from vision.config import CaptureConfig, ServeConfig, load_config_file  # noqa: E402
from vision.io.frames import FeedState  # noqa: E402
from vision.web.app import create_app  # noqa: E402
from vision.web.health import feed_view, health  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class StateFeed(FakeFeed):
    """A scripted feed whose source reports a given :class:`FeedState`."""

    def __init__(self, fs: FeedState | None = None, **kw) -> None:
        super().__init__(**kw)
        self.fs = fs

    def feed_state(self):
        return self.fs


def _fs(state="connected", *, age=0.05, gap=0.0, last_gap=None, gaps=0, attempts=0,
        live=True, state_s=30.0, error=None) -> FeedState:
    return FeedState(state, time.time() - state_s, state_s, age, gap, last_gap, gaps,
                     attempts, live, error)


@pytest.fixture
def feed():
    f = StateFeed()
    f.start()
    f.publish_frame(np.zeros((20, 30, 3), np.uint8), frame_index=0)
    yield f
    f.stop()


def _get(feed, grace=10.0):
    c = TestClient(create_app(feed, health_grace_s=grace))
    r = c.get("/healthz")
    assert r.headers["cache-control"] == "no-store"
    return r.status_code, r.json()


def test_healthy_while_connected(feed):
    feed.fs = _fs()
    code, body = _get(feed)
    assert code == 200 and body["ok"] is True and body["reason"] is None
    assert (body["status"], body["state"], body["lost_s"], body["grace_s"]) == \
        ("running", "connected", 0.05, 10.0)


def test_an_outage_within_the_grace_is_healthy_but_shown(feed):
    feed.fs = _fs("reconnecting", age=6.0, gap=6.0, attempts=3, state_s=5.9)
    code, body = _get(feed)
    assert code == 200 and body["state"] == "reconnecting" and body["lost_s"] == 6.0
    st = TestClient(create_app(feed)).get("/api/state").json()
    assert st["feed"]["state"] == "reconnecting" and st["feed"]["current_gap_s"] == 6.0
    assert st["feed"]["attempts"] == 3


def test_lost_longer_than_the_grace_is_503_naming_state_gap_and_since(feed):
    feed.fs = _fs("reconnecting", age=12.34, gap=12.34, attempts=5, gaps=2, last_gap=3.0,
                  state_s=12.2)
    t0 = time.time()
    code, body = _get(feed)
    assert code == 503 and body["ok"] is False
    assert body["state"] == "reconnecting" and body["lost_s"] == 12.34
    assert body["reason"] == "camera lost for 12.3 s (grace 10 s) -- reconnecting"
    since = datetime.fromisoformat(body["lost_since"].replace("Z", "+00:00")).timestamp()
    assert abs(since - (t0 - 12.34)) < 0.5
    state_since = datetime.fromisoformat(body["since"].replace("Z", "+00:00")).timestamp()
    assert abs(state_since - (t0 - 12.2)) < 0.5
    assert body["feed"]["gaps"] == 2 and body["feed"]["last_gap_s"] == 3.0
    # a longer grace tolerates it
    assert _get(feed, grace=15.0)[0] == 200


def test_a_stall_not_yet_timed_out_counts_as_lost(feed):
    feed.fs = _fs("connected", age=4.0)
    assert _get(feed, grace=3.0)[0] == 503
    assert _get(feed, grace=3.0)[1]["reason"].endswith("no new frame")
    assert _get(feed, grace=5.0)[0] == 200
    # before the first frame: the time since the source was opened
    feed.fs = _fs("connected", age=None, state_s=4.0)
    assert _get(feed, grace=3.0)[0] == 503
    # a file source's frames are not live: their age means nothing
    feed.fs = _fs("connected", age=40.0, live=False)
    assert _get(feed, grace=3.0)[0] == 200


def test_ended_sources_and_errors(feed):
    feed.fs = _fs("ended", live=False)
    assert _get(feed)[0] == 200  # a recording played to its end
    feed.fs = _fs("ended", live=True, error="lost and could not reconnect to stream x")
    code, body = _get(feed)
    assert code == 503 and "could not reconnect" in body["reason"]
    feed.fs = _fs()
    feed._set_status("error", "boom")
    code, body = _get(feed)
    assert code == 503 and body["reason"].endswith("boom")


def test_a_frozen_picture_fails(feed):
    feed.fs = _fs()
    feed._frame_times.append(time.monotonic() - 20.0)  # the last picture 20 s ago
    code, body = _get(feed)
    assert code == 503 and body["reason"].startswith("picture frozen for 20")
    assert 19.5 <= body["picture_age_s"] <= 25.0


def test_a_feed_without_a_source():
    f = FakeFeed().start()
    try:
        code, body = _get(f)
        assert code == 200 and body["state"] == "running" and body["feed"] is None
        assert feed_view(f) is None and health(f)[0] is True
        assert TestClient(create_app(f)).get("/api/state").json()["feed"] is None
    finally:
        f.stop()


def test_page_has_the_camera_banner(feed):
    c = TestClient(create_app(feed))
    assert 'id="camera-lost"' in c.get("/").text
    js = c.get("/static/app.js").text
    assert '"camera lost for "' in js and "-- reconnecting" in js


# ------------------------------------------------------------------------------ settings


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "inf", "1e3", "86401", "",
                                   "9" * 400, "٣"])
def test_health_grace_is_validated(value, tmp_path, capsys):
    img = tmp_path / "t.png"
    import cv2

    cv2.imwrite(str(img), np.zeros((20, 30, 3), np.uint8))
    assert main(["serve", str(img), "--port", "0", "--health-grace", value]) == 2
    err = capsys.readouterr().err
    assert "--health-grace" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["0", "-2", "x", "3601"])
def test_reconnect_max_is_validated(value, tmp_path, capsys):
    img = tmp_path / "t.png"
    import cv2

    cv2.imwrite(str(img), np.zeros((20, 30, 3), np.uint8))
    assert main(["run", str(img), "--reconnect-max", value]) == 2
    err = capsys.readouterr().err
    assert "--reconnect-max" in err and len(err.strip().splitlines()) == 1


def test_settings_from_options_and_config_file(tmp_path):
    from vision.cli import build_parser
    from vision.commands.common import run_config, serve_config

    cfg = tmp_path / "c.yaml"
    cfg.write_text("serve:\n  health_grace_s: 30\ncapture:\n  reconnect_max_s: 2\n")
    img = tmp_path / "t.png"
    img.write_bytes(b"")
    p = build_parser()
    args = p.parse_args(["serve", "0", "--config", str(cfg)])
    assert serve_config(args).health_grace_s == 30.0
    assert run_config(args).capture.policy().max_delay_s == 2.0
    args = p.parse_args(["serve", "0", "--config", str(cfg), "--health-grace", "2.5",
                         "--reconnect-max", "0.5"])
    assert serve_config(args).health_grace_s == 2.5
    assert run_config(args).capture.reconnect_max_s == 0.5
    args = p.parse_args(["serve", "0"])
    assert serve_config(args) == ServeConfig() and ServeConfig().health_grace_s == 10.0
    assert run_config(args).capture.policy() is None  # the policy's own default
    bad = tmp_path / "bad.yaml"
    bad.write_text("serve:\n  health_grace_s: -1\n")
    with pytest.raises(InputError, match="health grace"):
        serve_config(p.parse_args(["serve", "0", "--config", str(bad)]))
    bad.write_text("serve:\n  grace: 1\n")
    with pytest.raises(InputError, match="serve.grace"):
        load_config_file(bad)
    for v in (0, -1, float("nan"), True, "5"):
        with pytest.raises(InputError):
            CaptureConfig(v)
        with pytest.raises(InputError):
            ServeConfig(v)


# ------------------------------------------------------------------------------ a real outage


class _Inverting:
    table_id, rules = "t-live", "pa"

    def process(self, frame):
        from types import SimpleNamespace

        return 255 - frame.image, SimpleNamespace(positions={}, round=None)

    def reset(self):
        pass


@pytest.mark.timeout(90)
@pytest.mark.parametrize("kind", ["down", "stall"])
def test_pipeline_feed_health_through_a_stream_outage(kind, caplog):
    """A PipelineFeed on a local MJPEG stream that goes down (connection refused) or stalls
    (connection open, nothing sent): healthy, 503 once the camera is lost longer than the grace
    -- for a stall already while the reader still waits for its read timeout (5 s), from the
    last frame's age --, healthy again after; the page's state follows, the gap logged once
    with its length."""
    import logging

    sys.path.insert(0, str(Path(__file__).resolve().parent / "faults"))
    from mjpeg_server import MjpegServer

    from vision.config import OutputConfig, PipelineConfig, RunConfig
    from vision.web.feed import PipelineFeed

    def wait(cond, timeout):
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end and not cond():
            time.sleep(0.05)
        return cond()

    with caplog.at_level(logging.INFO, logger="vision.io.capture"), MjpegServer(fps=20) as srv:
        cfg = RunConfig(srv.url, PipelineConfig(), OutputConfig(progress=False),
                        CaptureConfig(reconnect_max_s=0.3))
        f = PipelineFeed(srv.url, config=cfg, pipeline=_Inverting())
        c = TestClient(create_app(f, health_grace_s=1.0))
        f.start()
        try:
            assert wait(lambda: f.state()["frames"] >= 5, 20)
            assert c.get("/healthz").status_code == 200
            getattr(srv, kind)()
            t_down = time.monotonic()
            assert wait(lambda: c.get("/healthz").status_code == 503, 10)
            body = c.get("/healthz").json()
            assert time.monotonic() - t_down > 0.9   # not before the grace (from the last frame)
            assert body["lost_s"] > 1.0
            if kind == "stall":   # the reader still waits for its read timeout
                assert body["state"] == "connected" and body["reason"].endswith("no new frame")
                assert wait(lambda: f.feed_state().state == "reconnecting", 15)
            assert c.get("/healthz").json()["state"] == "reconnecting"
            st = c.get("/api/state").json()
            assert st["feed"]["state"] == "reconnecting" and st["feed"]["current_gap_s"] > 1.0
            frozen = st["frames"]
            time.sleep(0.5)
            getattr(srv, "up" if kind == "down" else "resume")()
            assert wait(lambda: c.get("/healthz").status_code == 200, 10)
            assert wait(lambda: f.state()["frames"] > frozen + 3, 10)
            st = c.get("/api/state").json()
            assert st["feed"]["state"] == "connected" and st["feed"]["gaps"] == 1
        finally:
            f.stop()
    logged = [float(x) for x in re.findall(r"frames back after a gap of ([0-9.]+) s", caplog.text)]
    assert logged == [pytest.approx(st["feed"]["last_gap_s"], abs=0.01)]
    assert 1.5 <= logged[0] <= 15.0

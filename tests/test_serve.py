"""Dealer display (vision/web/, paigow serve): HTTP routes with a scripted FakeFeed, the feed's
publish/subscribe semantics, PipelineFeed with an injected pipeline, and the CLI's input errors.
"""

from __future__ import annotations

import json
import re
import socket
import threading

import cv2
import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from vision.cli import main  # noqa: E402
from vision.web.app import MJPEG_BOUNDARY, create_app  # noqa: E402
from fakes import FakeFeed  # noqa: E402
from fakes import event_from_deal, round_from_deal  # noqa: E402
from vision.io.views import positions_view  # noqa: E402
from vision.web.feed import PipelineFeed  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DEAL_1 = {"dealer": ["6-6", "4-5", "1-3", "2-2"], "1": ["1-1", "5-6", "3-4", "2-6"],
          "2": ["1-2", "2-4", "3-3", "5-5"], "3": ["4-4", "1-6", "2-3", "3-6"]}
DEAL_DEVIATES = {"dealer": ["6-6", "1-3", "4-5", "2-2"], "1": ["1-1", "5-6", "3-4", "2-6"],
                 "2": ["1-2", "2-4", "3-3", "5-5"], "3": ["4-4", "1-6", "2-3", "3-6"]}
DEAL_2 = {"dealer": ["1-1", "5-6", "3-4", "2-6"], "1": ["6-6", "4-5", "1-3", "2-2"],
          "2": ["1-2", "2-4", "3-3", "5-5"]}


@pytest.fixture
def feed():
    f = FakeFeed(table_id="t-9")
    f.start()
    yield f
    f.stop()


def _image(color) -> np.ndarray:
    img = np.zeros((90, 160, 3), np.uint8)
    img[:] = color
    return img


def _after_subscribed(feed, fn, n=1):
    """Run ``fn`` in a thread once ``n`` clients subscribed (no sleeps, no race)."""
    def go():
        while feed.subscriber_count < n and not feed.closed:
            feed.wait_frame(feed.latest_frame()[0], timeout=0.01)
        fn()
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def _sse_events(text: str) -> list[dict]:
    out = []
    for block in text.split("\n\n"):
        fields = {}
        for line in block.splitlines():
            if line.startswith(":") or ":" not in line:
                continue
            k, v = line.split(":", 1)
            fields[k] = v[1:] if v.startswith(" ") else v
        if "data" in fields:
            out.append({"id": fields.get("id"), "event": fields.get("event"),
                        "data": json.loads(fields["data"])})
    return out


# ------------------------------------------------------------------------------ page, state


def test_page_and_static_files_load_without_external_references(feed):
    c = TestClient(create_app(feed))
    r = c.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    # relative URLs: the same page serves a table under the pit view (/tables/<id>/)
    assert 'id="positions-body"' in r.text and 'src="static/app.js"' in r.text
    assert 'src="video.mjpeg"' in r.text
    for path, kind in (("/static/app.js", "javascript"), ("/static/style.css", "css")):
        s = c.get(path)
        assert s.status_code == 200 and kind in s.headers["content-type"]
        assert not re.search(r"https?://", s.text), path  # no CDN: nothing outside the machine
    assert not re.search(r"(src|href)=\"https?://", r.text)
    assert "default-src 'self'" in r.headers["content-security-policy"]


def test_state_json_shows_hands_results_and_alerts(feed):
    ev = event_from_deal(DEAL_1, "r000007", table_id="t-9")
    feed.publish_frame(_image((0, 80, 0)), frame_index=41,
                       positions={"dealer": {"tiles": ["6-6", None, "1-3", "2-2"],
                                             "status": "problem", "detail": "1 tile unknown"}})
    feed.publish_event(ev)
    st = TestClient(create_app(feed)).get("/api/state").json()
    assert st["table_id"] == "t-9" and st["status"] == "running"
    assert st["frame_index"] == 41 and st["has_picture"] is True
    assert st["control"] is False and st["round_count"] == 1
    assert st["last_round"]["round_id"] == "r000007"
    d, s1 = st["positions"]["dealer"], st["positions"]["1"]
    assert d["role"] == "banker" and d["high"] == ["6-6", "4-5"] and d["high_hand"] == "Teen wong"
    # seat 1 (Chop Bot 5 / Day 3) loses both hands to Teen wong / Gor 8
    assert (s1["result"], s1["net"], s1["bet"]) == ("lose", "-1", "1")
    assert st["positions"]["2"]["result"] == "push"  # Gee Joon vs Teen wong, 6 vs 8: one each
    assert st["live"]["positions"]["dealer"]["tiles"] == ["6-6", None, "1-3", "2-2"]
    assert st["rounds"][0]["round_id"] == "r000007"
    assert st["rounds"][0]["results"] == {p: st["positions"][p]["result"] for p in "123"}


def test_state_shows_the_rounds_alerts_per_position(feed):
    ev = event_from_deal(DEAL_DEVIATES, "r000008")
    assert [a["kind"] for a in ev["alerts"]] == ["house_way_deviation"]
    feed.publish_event(ev)
    st = TestClient(create_app(feed)).get("/api/state").json()
    say = "Dealer: not set the house way -- supervisor to check"  # plain words for people
    assert st["alerts"] == [dict(a, say=say, acknowledged=False) for a in ev["alerts"]]
    assert st["positions"]["dealer"]["alerts"] == [
        {"kind": "house_way_deviation", "detail": ev["alerts"][0]["detail"], "say": say,
         "acknowledged": False}]
    assert ev["alerts"][0]["detail"].startswith("dealer set 6-6 1-3 / 2-2 4-5")
    assert st["positions"]["1"]["alerts"] == []
    # dealer 6-6 1-3 / 2-2 4-5 (Teen 6 / Bon 3): seat 2 (Gee Joon / Mooy 6) wins both hands
    assert (st["positions"]["2"]["result"], st["positions"]["2"]["net"]) == ("win", "0.95")
    assert st["positions"]["dealer"]["result"] == "lose"  # net -1: a push, a push, a win


def test_positions_view_of_a_banker_derives_its_result_from_net():
    ev = event_from_deal(DEAL_1)
    view = positions_view(ev)
    assert list(view) == ["dealer", "1", "2", "3"]
    net = ev["positions"]["dealer"]["net"]
    want = "win" if net[0] not in "-0" else ("lose" if net.startswith("-") else "push")
    assert view["dealer"]["result"] == want
    assert positions_view(None) == {}


# ------------------------------------------------------------------------------ events (SSE)


def test_sse_delivers_a_pushed_round_event(feed):
    ev = event_from_deal(DEAL_1, "r000001")
    c = TestClient(create_app(feed))
    _after_subscribed(feed, lambda: feed.publish_event(ev))
    with c.stream("GET", "/api/events?limit=1") as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        body = r.read().decode()
    got = _sse_events(body)
    assert len(got) == 1
    assert got[0]["id"] == "r000001" and got[0]["event"] == "round"
    assert got[0]["data"] == json.loads(json.dumps(ev))


def test_sse_replay_and_last_event_id(feed):
    for i, deal in enumerate((DEAL_1, DEAL_2, DEAL_1), 1):
        feed.publish_event(event_from_deal(deal, f"r{i:06d}"))
    c = TestClient(create_app(feed))
    with c.stream("GET", "/api/events?replay=2&limit=2") as r:
        ids = [e["id"] for e in _sse_events(r.read().decode())]
    assert ids == ["r000002", "r000003"]
    with c.stream("GET", "/api/events?limit=1", headers={"Last-Event-ID": "r000001"}) as r:
        got = _sse_events(r.read().decode())
    assert [e["id"] for e in got] == ["r000002"]
    assert sorted(got[0]["data"]["positions"]["dealer"]["tiles"]) == sorted(DEAL_2["dealer"])


def test_sse_stream_ends_when_the_feed_stops():
    f = FakeFeed().start()
    c = TestClient(create_app(f))
    _after_subscribed(f, f.stop)
    with c.stream("GET", "/api/events") as r:  # endless, unless the feed stops
        assert _sse_events(r.read().decode()) == []


# ------------------------------------------------------------------------------ video


def _mjpeg_parts(body: bytes) -> list[bytes]:
    """The pictures of a finished multipart/x-mixed-replace body (RFC 2046 delimiters)."""
    delim = f"--{MJPEG_BOUNDARY}".encode()
    assert body.startswith(delim + b"\r\n") and body.endswith(b"\r\n" + delim + b"--\r\n")
    chunks = body[:-len(delim) - 6].split(b"\r\n" + delim + b"\r\n")
    chunks[0] = chunks[0][len(delim) + 2:]
    parts = []
    for chunk in chunks:
        head, _, jpeg = chunk.partition(b"\r\n\r\n")
        assert head == b"Content-Type: image/jpeg"
        parts.append(jpeg)
    return parts


def test_mjpeg_streams_each_new_picture(feed):
    feed.publish_frame(_image((0, 0, 200)))  # red in BGR
    c = TestClient(create_app(feed))
    body = b""
    with c.stream("GET", "/video.mjpeg?frames=2") as r:
        assert r.status_code == 200
        assert r.headers["content-type"] == \
            f"multipart/x-mixed-replace; boundary={MJPEG_BOUNDARY}"
        for chunk in r.iter_bytes():
            if not body:  # first picture arrived: publish the next one
                feed.publish_frame(_image((200, 0, 0)))  # blue
            body += chunk
    parts = _mjpeg_parts(body)
    assert len(parts) == 2
    imgs = [cv2.imdecode(np.frombuffer(p, np.uint8), cv2.IMREAD_COLOR) for p in parts]
    assert all(p[:2] == b"\xff\xd8" and p[-2:] == b"\xff\xd9" for p in parts)
    assert imgs[0].shape == (90, 160, 3)
    assert imgs[0][..., 2].mean() > 150 and imgs[0][..., 0].mean() < 50
    assert imgs[1][..., 0].mean() > 150 and imgs[1][..., 2].mean() < 50


def test_snapshot_and_downscaling(feed):
    c = TestClient(create_app(feed))
    assert c.get("/snapshot.jpg").status_code == 503
    big = np.full((1080, 1920, 3), 90, np.uint8)
    feed.publish_frame(big)
    r = c.get("/snapshot.jpg")
    assert r.status_code == 200 and r.headers["content-type"] == "image/jpeg"
    img = cv2.imdecode(np.frombuffer(r.content, np.uint8), cv2.IMREAD_COLOR)
    assert img.shape == (720, 1280, 3)  # max_width 1280, aspect kept


# ------------------------------------------------------------------------------ control


def test_control_needs_the_token(feed):
    c = TestClient(create_app(feed, token="s3cret"))
    r = c.post("/api/control/reset")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert c.post("/api/control/reset", headers={"X-Token": "wrong"}).status_code == 403
    assert c.post("/api/control/reset",
                  headers={"Authorization": "Bearer nope"}).status_code == 403
    assert feed.resets == 0
    r = c.post("/api/control/reset", headers={"Authorization": "Bearer s3cret"})
    assert r.status_code == 200 and r.json() == {"ok": True, "action": "reset", "resets": 1}
    assert c.post("/api/control/reset", headers={"X-Token": "s3cret"}).status_code == 200
    assert feed.resets == 2
    assert c.get("/api/control/reset").status_code == 405
    assert c.get("/api/state").json()["control"] is True


def test_control_is_disabled_without_a_token(feed):
    c = TestClient(create_app(feed, token=None))
    for headers in ({}, {"X-Token": "anything"}, {"Authorization": "Bearer "}):
        r = c.post("/api/control/reset", headers=headers)
        assert r.status_code == 403 and "disabled" in r.json()["detail"]
    assert feed.resets == 0
    assert c.post("/api/state").status_code == 405  # read-only


# ------------------------------------------------------------------------------ feeds


def test_fake_feed_plays_its_script_in_order():
    evs = [event_from_deal(DEAL_1, "r000001"), event_from_deal(DEAL_2, "r000002")]
    f = FakeFeed([{"frame": _image(10), "event": evs[0], "delay": 0},
                  {"frame": _image(20), "delay": 0},
                  {"event": evs[1], "delay": 0}])
    sub = f.subscribe()
    f.start()
    got = [sub.get(timeout=10), sub.get(timeout=10)]
    assert [e["round_id"] for e in got] == ["r000001", "r000002"]
    f._thread.join(10)
    st = f.state()
    assert st["status"] == "ended" and st["frames"] == 2 and st["round_count"] == 2
    assert [r["round_id"] for r in st["rounds"]] == ["r000002", "r000001"]
    f.stop()
    assert sub.get(timeout=1) is None and sub.closed


def test_subscription_drops_the_oldest_when_full():
    f = FakeFeed()
    sub = f.subscribe(maxsize=2)
    for i in range(1, 4):
        f.publish_event({"round_id": f"r{i}"})
    assert sub.dropped == 1
    assert [sub.get(0)["round_id"], sub.get(0)["round_id"], sub.get(0)] == ["r2", "r3", None]
    sub.close()
    assert f.subscriber_count == 0


class _ScriptedPipeline:
    """Stands in for vision.pipeline.Pipeline: annotates by inverting, settles on frame 2."""

    def __init__(self):
        self.resets = 0
        self.table_id, self.rules = "t-pipe", "pa"

    def process(self, frame):
        from types import SimpleNamespace

        rnd = round_from_deal(DEAL_1, "r000001", frame_index=frame.index) \
            if frame.index == 2 else None
        return 255 - frame.image, SimpleNamespace(positions={}, round=rnd)

    def reset(self):
        self.resets += 1


def test_pipeline_feed_publishes_frames_and_events(tmp_path):
    for i in range(4):
        cv2.imwrite(str(tmp_path / f"f{i}.png"), _image(30 * i))
    f = PipelineFeed(tmp_path, pipeline=_ScriptedPipeline(), realtime=False)
    assert f.table_id == "t-pipe" and f.source == str(tmp_path)
    sub = f.subscribe()
    f.start()
    ev = sub.get(timeout=20)
    assert ev["round_id"] == "r000001" and ev["frame_index"] == 2
    f._thread.join(20)
    st = f.state()
    assert st["status"] == "ended" and st["frames"] == 4 and st["frame_index"] == 3
    img = cv2.imdecode(np.frombuffer(f.latest_jpeg(), np.uint8), cv2.IMREAD_COLOR)
    assert abs(img.mean() - (255 - 90)) < 3  # the annotated (inverted) last frame
    f.stop()


def test_pipeline_feed_bad_source_and_backend(tmp_path):
    from scoring.errors import InputError

    with pytest.raises(InputError, match="nowhere.mp4"):
        PipelineFeed(tmp_path / "nowhere.mp4", pipeline=_ScriptedPipeline())
    with pytest.raises(InputError, match="backend"):
        PipelineFeed(tmp_path, backend="tensorrt", pipeline=_ScriptedPipeline())


# ------------------------------------------------------------------------------ CLI


@pytest.fixture
def still(tmp_path):
    p = tmp_path / "table.png"
    cv2.imwrite(str(p), _image(50))
    return p


def test_serve_port_in_use_is_exit_2_naming_the_port(still, capsys):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        rc = main(["serve", str(still), "--port", str(port)])
    finally:
        busy.close()
    assert rc == 2
    err = capsys.readouterr().err
    assert f"port {port}" in err and "in use" in err and len(err.strip().splitlines()) == 1


def test_serve_bad_source_is_exit_2(tmp_path, capsys):
    assert main(["serve", str(tmp_path / "missing.mp4"), "--port", "0"]) == 2
    assert "missing.mp4" in capsys.readouterr().err


def test_serve_missing_models_is_exit_2_and_frees_the_port(still, tmp_path, capsys):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    rc = main(["serve", str(still), "--port", str(port), "--models-dir", str(tmp_path / "none")])
    assert rc == 2
    assert "none" in capsys.readouterr().err
    again = socket.socket()  # the port was released
    again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    again.bind(("127.0.0.1", port))
    again.close()


def test_serve_binds_localhost_by_default():
    from vision.cli import build_parser

    args = build_parser().parse_args(["serve", "0"])
    # --backend left out: None, the default backend (vision.recognition.backends.default_backend)
    assert (args.host, args.port, args.backend, args.token) == ("127.0.0.1", 8000, None, None)


def test_serve_command_serves_the_display_until_stopped(still, monkeypatch):
    """The whole `paigow serve` path (source check, port, app, uvicorn) with the pipeline feed
    replaced by a scripted one (no models needed); the control token comes from PAIGOW_TOKEN."""
    import httpx

    import vision.commands.serve as serve_cmd
    import vision.web.feed as feed_mod

    made = {}

    class ScriptedPipelineFeed(FakeFeed):
        def __init__(self, source, **kw):
            made["kw"] = kw
            super().__init__(source=str(source), table_id="cli-table")
            self.publish_event(event_from_deal(DEAL_1, "r000001", table_id="cli-table"))

    real_make_server = serve_cmd.make_server

    def capture(app, feed, log_level="warning"):
        made["server"] = real_make_server(app, feed, log_level)
        return made["server"]

    monkeypatch.setattr(feed_mod, "PipelineFeed", ScriptedPipelineFeed)
    monkeypatch.setattr(serve_cmd, "make_server", capture)
    monkeypatch.setenv("PAIGOW_TOKEN", "from-env")
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    rc = {}
    t = threading.Thread(target=lambda: rc.setdefault("rc", main(
        ["serve", str(still), "--port", str(port), "--backend", "ultralytics", "--loop"])))
    t.start()
    try:
        while "server" not in made or not made["server"].started:
            t.join(0.02)
            assert t.is_alive(), rc  # main() returned before the server started
        base = f"http://127.0.0.1:{port}"
        st = httpx.get(base + "/api/state", timeout=10).json()
        assert st["table_id"] == "cli-table" and st["control"] is True
        assert st["positions"]["1"]["result"] == "lose"
        assert httpx.post(base + "/api/control/reset", timeout=10).status_code == 401
        r = httpx.post(base + "/api/control/reset", headers={"X-Token": "from-env"}, timeout=10)
        assert r.status_code == 200
    finally:
        if "server" in made:
            made["server"].stop()
        t.join(20)
    assert rc == {"rc": 0}
    cfg = made["kw"]["config"]
    assert cfg.pipeline.recognition.backend == "ultralytics" and made["kw"]["loop"] is True
    assert cfg.pipeline.layout is None and made["kw"]["realtime"] is True

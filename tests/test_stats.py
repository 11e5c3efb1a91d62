"""Live figures per camera (vision/io/stats.py, issue 45): camera / processed / skipped frames per
second over a sliding window with a fake clock, the falling-behind and stuck episodes logged
once, round latencies through the real session loop, the shared detector client's counters, and
``GET /api/stats`` of the dealer display and of the pit (docs/web-api.md, docs/pit.md)."""

from __future__ import annotations

import logging
import queue
import threading
import time
from multiprocessing import shared_memory
from types import SimpleNamespace as NS

import numpy as np
import pytest

from vision.io.frames import SourceStats
from vision.io.stats import LiveStats, RateWindow

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class Clock:
    """A fake monotonic clock, seconds."""

    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class Camera:
    """Stands in for a FrameSource: only its counters (``stats()``)."""

    def __init__(self) -> None:
        self.read = self.dropped = 0

    def stats(self) -> SourceStats:
        return SourceStats(frames_read=self.read, dropped=self.dropped)


def _frame(stats: LiveStats, index: int, *, tiles: bool = False, detect_s: float = 0.02):
    stats.frame(None, NS(index=index), NS(positions={"1": object()} if tiles else {},
                                          timings={"detect": detect_s}))


def _run(stats, clock, cam, seconds, camera_fps, every, start=0, snap_every=None):
    """``seconds`` of a camera delivering ``camera_fps``, every ``every``-th frame processed
    (the newest-frame reader drops the others); a snapshot every ``snap_every`` seconds."""
    n = int(round(seconds * camera_fps))
    t0 = clock.t
    next_snap = t0 + (snap_every or seconds + 1)
    for i in range(n):
        clock.t = t0 + (i + 1) / camera_fps
        cam.read += 1
        if (start + i + 1) % every == 0:
            _frame(stats, cam.read - 1)
        else:
            cam.dropped += 1
        if snap_every and clock.t >= next_snap - 1e-9:
            stats.snapshot()
            next_snap += snap_every
    return start + n


# ------------------------------------------------------------------------------ the window


def test_fps_over_the_window_with_a_fake_clock():
    clock, cam = Clock(), Camera()
    stats = LiveStats(table_id="t-1", source=cam, clock=clock)
    _run(stats, clock, cam, 2.0, 15.0, 3)  # 30 frames in 2 s, 10 processed
    s = stats.snapshot()
    assert (s["camera_fps"], s["processed_fps"], s["skipped_fps"]) == (15.0, 5.0, 10.0)
    assert s["span_s"] == 2.0 and s["window_s"] == 10.0
    assert s["totals"] == {"delivered": 30, "processed": 10, "skipped": 20, "dropped": 20}
    assert s["detector"]["infer_ms_mean"] == 20.0 and s["detector"]["frames"] == 10
    assert s["detector"]["queue"] is None and s["detector"]["pending"] is None
    assert not s["behind"] and not s["stuck"]

    # 20 s later at 30 fps, every frame processed: the window holds only the last 10 s,
    # the totals everything since the start
    _run(stats, clock, cam, 20.0, 30.0, 1)
    s = stats.snapshot()
    assert (s["camera_fps"], s["processed_fps"], s["skipped_fps"]) == (30.0, 30.0, 0.0)
    assert s["span_s"] == pytest.approx(10.0, abs=0.1)
    assert s["totals"]["delivered"] == 630 and s["totals"]["processed"] == 610


def test_a_reopened_source_keeps_counting_and_memory_stays_bounded():
    clock, cam = Clock(), Camera()
    src = {"now": cam}
    stats = LiveStats(source=lambda: src["now"], clock=clock)
    _run(stats, clock, cam, 1.0, 10.0, 1)
    src["now"] = cam2 = Camera()  # a looped file opened again: its counters start at 0
    _run(stats, clock, cam2, 1.0, 10.0, 1)
    s = stats.snapshot()
    assert s["totals"]["delivered"] == 20 and s["camera_fps"] == 10.0
    _run(stats, clock, cam2, 120.0, 200.0, 1)  # 24000 frames: the window keeps few samples
    assert len(stats._window._samples) <= 2 * 100 + 4
    assert stats.snapshot()["camera_fps"] == pytest.approx(200.0, rel=0.02)


def test_without_a_source_frames_delivered_are_counted_from_the_indices():
    clock = Clock()
    stats = LiveStats(clock=clock)
    for k, idx in enumerate((0, 1, 4, 5, 9)):  # a live reader's numbers: 4 frames dropped
        clock.t += 0.1
        _frame(stats, idx)
    s = stats.snapshot()
    assert s["totals"]["delivered"] == 10 and s["totals"]["processed"] == 5


def test_rate_window_restarts_on_a_counter_that_goes_down():
    w = RateWindow(10.0)
    w.add(0.0, (0,))
    w.add(5.0, (100,))
    w.add(6.0, (3,))  # a restarted process
    assert w.rates(8.0, (23,)) == (10.0,)


# --------------------------------------------------------------------- behind and stuck


def test_falling_behind_is_logged_once_per_episode(caplog):
    clock, cam = Clock(), Camera()
    stats = LiveStats(table_id="t-slow", source=cam, clock=clock)
    caplog.set_level(logging.INFO, logger="vision.io.stats")
    n = _run(stats, clock, cam, 8.0, 30.0, 6, snap_every=0.5)  # 5 of 30 fps
    assert not stats.snapshot()["behind"]  # not yet 10 s below half the camera's rate
    n = _run(stats, clock, cam, 12.0, 30.0, 6, start=n, snap_every=0.5)
    s = stats.snapshot()
    assert s["behind"] and not s["stuck"]
    assert "5.0 of the camera's 30.0 frames/s" in s["reasons"][0]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "table t-slow falling behind" in warnings[0].getMessage()

    # caught up: every frame processed for a window; the end of the episode is logged
    n = _run(stats, clock, cam, 12.0, 30.0, 1, start=n, snap_every=0.5)
    assert not stats.snapshot()["behind"]
    assert any("t-slow caught up" in r.getMessage() for r in caplog.records
               if r.levelno == logging.INFO)
    # a second episode is a second warning
    _run(stats, clock, cam, 25.0, 30.0, 6, start=n, snap_every=0.5)
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


def test_a_still_table_resting_by_design_is_not_falling_behind():
    """A still table whose reading stands takes a third of the camera's frames by design
    (vision.session.RESTING_FPS): not behind however long, and the figures say it rests;
    the same rate while not resting is behind."""
    from types import SimpleNamespace as NS

    for standing, behind in ((True, False), (False, True)):
        clock, cam = Clock(), Camera()
        pipe = NS(engine=NS(still_pending=False, standing=standing))
        stats = LiveStats(table_id="t-still", source=cam, clock=clock, pipeline=pipe)
        _run(stats, clock, cam, 25.0, 15.0, 3, snap_every=0.5)  # 5 of 15 fps for 25 s
        s = stats.snapshot()
        assert (s["behind"], s["resting"]) == (behind, standing)


def test_a_frame_loop_that_stops_while_the_camera_delivers(caplog):
    clock, cam = Clock(), Camera()
    stats = LiveStats(table_id="t-hung", source=cam, clock=clock)
    caplog.set_level(logging.WARNING, logger="vision.io.stats")
    _run(stats, clock, cam, 1.0, 20.0, 1)
    _run(stats, clock, cam, 1.5, 20.0, 10 ** 9)  # nothing processed for 1.5 s
    assert not stats.snapshot()["behind"]
    _run(stats, clock, cam, 1.0, 20.0, 10 ** 9, snap_every=0.25)  # 2.5 s
    s = stats.snapshot()
    assert s["behind"] and not s["stuck"] and s["last_frame_age_s"] == pytest.approx(2.5)
    _run(stats, clock, cam, 3.0, 20.0, 10 ** 9, snap_every=0.25)  # 5.5 s
    s = stats.snapshot()
    assert s["stuck"] and any("no frame processed for 5.5 s" in r for r in s["reasons"])
    msgs = [r.getMessage() for r in caplog.records]
    assert len(msgs) == 2 and "falling behind" in msgs[0] and "t-hung stuck" in msgs[1]
    # a camera that stops too (an outage) is not the frame loop falling behind
    clock.t += 30.0
    s = stats.snapshot()
    assert not s["behind"] and not s["stuck"]


def test_a_detector_request_unanswered_for_seconds_is_stuck():
    clock, cam = Clock(), Camera()
    client = {"pending": 1, "waiting_s": 1.0}
    stats = LiveStats(source=cam, clock=clock, detector=lambda: dict(client))
    _run(stats, clock, cam, 1.0, 10.0, 1)
    s = stats.snapshot()
    assert s["detector"]["pending"] == 1 and s["detector"]["waiting_s"] == 1.0
    assert not s["detector"]["stuck"] and not s["stuck"]
    client["waiting_s"] = 6.0
    s = stats.snapshot()
    assert s["detector"]["stuck"] and s["stuck"]
    assert "the detector has not answered for 6.0 s" in s["reasons"]


# --------------------------------------------------------------------- round latency


class _ScriptedPipeline:
    """Stands in for vision.pipeline.Pipeline on a fake clock: each frame takes 1 s; tiles
    are in view on frames 2-7 and 9-11; a round settles on frame 5 (its tiles stay in view
    until frame 8) and on frame 11."""

    TILES = {2, 3, 4, 5, 6, 7, 9, 10, 11}

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.table_id, self.rules = "t-lat", "pa"
        self.tracker = NS(open=True)
        # a fused still reading beside the loop; 5 made, 2 of them light (a busy machine)
        self.engine = NS(still_pending=True,
                         background=NS(made=5, light_made=2, followed=1, last_s=1.23456))

    def process(self, frame, draw=True):
        from fakes import round_from_deal

        self.clock.t += 1.0
        i = frame.index
        if i == 5 or i == 11:
            self.tracker.open = False
        elif i == 8:
            self.tracker.open = True  # the table cleared
        rnd = round_from_deal({"dealer": ["6-6", "4-5", "1-3", "2-2"],
                               "1": ["1-1", "5-6", "3-4", "2-6"]},
                              f"r{i:06d}", frame_index=i) if i in (5, 11) else None
        positions = {"dealer": {"tiles": ["6-6"]}} if i in self.TILES else {}
        return frame.image, NS(positions=positions, round=rnd, timings={"detect": 0.01})


def test_round_latency_from_the_first_frame_showing_its_tiles(tmp_path):
    from vision.config import OutputConfig, PipelineConfig, RunConfig
    from vision.io.frames import Frame
    from vision.session import Session

    clock = Clock()
    pipe = _ScriptedPipeline(clock)
    stats = LiveStats(table_id="t-lat", pipeline=pipe, clock=clock)
    img = np.zeros((8, 8, 3), np.uint8)
    frames = [Frame(img, i / 10, i, "mem") for i in range(12)]
    cfg = RunConfig("mem", PipelineConfig.build(source="mem"), OutputConfig(progress=False))
    Session(cfg, frames=frames, pipeline=pipe, sinks=[stats]).run()
    s = stats.snapshot()
    # round 1: tiles first seen on frame 2, settled on frame 5 -> 3 s; round 2: the table was
    # cleared on frame 8, tiles seen on frame 9, settled on 11 -> 2 s (not from frame 6, where
    # the first round's tiles were still in view)
    assert s["latency_rounds"] == ["r000011", "r000005"]
    assert s["latency_s"] == [2.0, 3.0]
    assert s["totals"]["processed"] == 12
    assert s["detector"]["still_pending"] is True
    assert s["readings"] == {"made": 5, "light": 2, "followed": 1, "last_s": 1.235}


# --------------------------------------------------------------------- the shared detector


def test_the_shared_client_counts_its_requests_in_flight():
    from vision.recognition import service

    block = shared_memory.SharedMemory(create=True, size=1 << 16)
    try:
        requests, replies = queue.Queue(), queue.Queue()
        handle = service.ServiceHandle(0, requests, replies, block.name, block.size)
        go = threading.Event()

        def answer():
            while True:
                msg = requests.get()
                if msg is None:
                    return
                if msg[0] == "infer":
                    go.wait(10)
                    replies.put((msg[2], "ok", [np.zeros(1, np.float32)]))
                else:
                    replies.put((msg[2], "ok", {"metadata": {}, "input_shape": (1, 3, 4, 4)}))

        t = threading.Thread(target=answer, daemon=True)
        t.start()
        client = service.SharedDetectorClient("m.onnx", handle, "onnx")
        before = service.client_stats()
        done = threading.Thread(target=client.infer, args=(np.zeros((1, 3, 4, 4),
                                                                    np.float32),))
        done.start()
        deadline = time.monotonic() + 10
        while service.client_stats()["pending"] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        mid = service.client_stats()
        assert mid["pending"] == 1 and mid["waiting_s"] >= 0.2
        go.set()
        done.join(10)
        after = service.client_stats()
        assert after["pending"] == 0 and after["waiting_s"] == 0.0
        assert after["answered"] == before["answered"] + 1
        assert after["wait_ms_last"] >= 200.0
        requests.put(None)
        client.close()
    finally:
        block.close()
        block.unlink()


# --------------------------------------------------------------------- the routes


def test_the_dealer_display_serves_the_tables_figures():
    from fastapi.testclient import TestClient

    from fakes import FakeFeed
    from vision.web.app import create_app

    clock, cam = Clock(), Camera()

    class StatsFeed(FakeFeed):
        def live_stats(self):
            return stats.snapshot()

    stats = LiveStats(table_id="t-9", source=cam, clock=clock)
    _run(stats, clock, cam, 2.0, 15.0, 3)
    with FakeFeed(table_id="t-0") as plain, StatsFeed(table_id="t-9") as feed:
        with TestClient(create_app(feed)) as c:
            r = c.get("/api/stats")
            assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
            body = r.json()
            assert body["table_id"] == "t-9"
            assert (body["camera_fps"], body["processed_fps"], body["skipped_fps"]) == \
                (15.0, 5.0, 10.0)
            assert body["totals"]["processed"] == 10
        with TestClient(create_app(plain)) as c:  # a feed without a frame loop: none
            assert c.get("/api/stats").status_code == 503


def test_pipeline_feed_stats_count_the_frames_of_its_session(tmp_path):
    import cv2
    from fastapi.testclient import TestClient

    from vision.web.app import create_app
    from vision.web.feed import PipelineFeed

    for i in range(5):
        cv2.imwrite(str(tmp_path / f"f{i}.png"), np.full((40, 60, 3), 30 * i, np.uint8))
    pipe = _ScriptedPipeline(Clock())
    f = PipelineFeed(tmp_path, pipeline=pipe, realtime=False)
    f.start()
    f._thread.join(20)
    with TestClient(create_app(f)) as c:
        body = c.get("/api/stats").json()
    f.stop()
    assert body["table_id"] == "t-lat"
    assert body["totals"] == {"delivered": 5, "processed": 5, "skipped": 0, "dropped": 0}
    assert body["detector"]["infer_ms_last"] == 10.0
    assert body["latency_rounds"] == []  # the scripted round 5 was never reached


def test_the_pit_serves_every_tables_figures_and_the_detector(tmp_path):
    from fastapi.testclient import TestClient

    from vision.pit import load_tables
    from vision.pit.supervisor import Pit
    from vision.web.pit import create_pit_app

    (tmp_path / "tables.yaml").write_text("tables:\n  - id: t-a\n    source: '0'\n"
                                          "  - id: t-b\n    source: '1'\n")
    pit = Pit(load_tables(tmp_path / "tables.yaml"), shared_detector=False)
    clock, cam = Clock(), Camera()
    stats = LiveStats(table_id="t-a", source=cam, clock=clock,
                      detector=lambda: {"pending": 1, "waiting_s": 0.5})
    _run(stats, clock, cam, 2.0, 15.0, 3)
    pit._handle("t-a", "stats", stats.snapshot())  # what the worker sends each second

    class Service:  # the detector service's counters: 4 calls of 25 ms, 3 requests waiting
        calls = 0

        def stats(self):
            return {"alive": True, "restarts": 0, "calls": self.calls, "requests": self.calls,
                    "infer_ms_total": 25.0 * self.calls,
                    "infer_ms_last": 25.0 if self.calls else None, "queued": 0,
                    "pending": 3, "ping_waiting_s": 0.0}

    pit.service = Service()
    pit.detector_stats()
    pit.service.calls = 4
    with TestClient(create_pit_app(pit)) as c:
        body = c.get("/api/stats").json()
        one = c.get("/tables/t-a/api/stats").json()
        assert c.get("/tables/t-b/api/stats").status_code == 503  # no report yet
        row = {t["table_id"]: t for t in c.get("/api/pit").json()["tables"]}
    assert set(body["tables"]) == {"t-a", "t-b"} and body["tables"]["t-b"] is None
    a = body["tables"]["t-a"]
    assert (a["camera_fps"], a["processed_fps"], a["skipped_fps"]) == (15.0, 5.0, 10.0)
    assert a["detector"]["queue"] == 3 and a["detector"]["pending"] == 1
    assert 0 <= a["reported_s"] < 5
    assert body["detector"]["infer_ms_mean"] == 25.0 and body["detector"]["calls"] == 4
    assert one["camera_fps"] == 15.0 and one["table_id"] == "t-a"
    assert row["t-a"]["stats"]["skipped_fps"] == 10.0 and row["t-b"]["stats"] is None
    assert row["t-a"]["stats"]["behind"] is False

    # a running worker that stopped reporting is stuck
    pit.workers["t-a"].state = "running"
    pit.feeds["t-a"].stats_at -= 6.0
    a = pit.table_stats("t-a")
    assert a["stuck"] and "no report from the table's worker" in a["reasons"][-1]

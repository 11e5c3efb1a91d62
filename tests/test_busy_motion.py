"""A live table spares the detector on frames still moving, and a still table whose reading is
being made is not re-detected (issue 45: 8 tables dealt at once spent about as much CPU on
their dealing's moving frames, and on periodic re-detections of pictures being read, as on
their still readings; vision/recognition/video.py, gate.py)."""

from __future__ import annotations

import threading

import numpy as np

from vision.config import GateConfig
from vision.recognition.gate import MotionGate
from vision.recognition.video import MOTION_LIVE_S


def _scene():
    from fakes import GroundTruthDetectors

    from vision.synth.render import render_table

    sc = render_table(1_000_201, size=(960, 540))
    return sc, GroundTruthDetectors([sc])


def _hand(image: np.ndarray, k: int) -> np.ndarray:
    """``image`` with a dark 'hand' at a place that moves with ``k`` (top-left corner, off
    the tiles' polygons only where the scene leaves room; the fake detector still finds every
    tile whose pixels it leaves alone)."""
    out = image.copy()
    x = 20 + 12 * (k % 10)
    out[10:60, x:x + 40] = 15
    return out


def _engine(det, live: bool):
    from vision.recognition.engine import Detectors, RecognitionEngine

    e = RecognitionEngine(detectors=Detectors(det, det))
    e.set_background(live)
    return e


def test_the_gate_says_when_a_picture_has_settled():
    """GateDecision.settled: a frame that moved shows what the frame before showed (not
    the reference the detector last ran on); never on the first frame or after a reset."""
    g = MotionGate(GateConfig())
    a = np.full((108, 192, 3), 100, np.uint8)
    b = a.copy()
    b[:20, :20] = 250
    assert not g.decide(a).settled  # nothing before it
    g.ran()
    d = g.decide(b)
    assert d.moved and not d.settled  # it changed since the frame before
    d = g.decide(b)
    assert d.moved and d.settled  # still other than the reference, but at rest
    g.reset()
    assert not g.decide(b).settled


def test_a_live_table_detects_a_moving_picture_twice_a_second_and_the_frame_it_settles_on():
    """A hand moving over a dealt table for 2 s at 15 fps: live, the detector runs at most
    once per MOTION_LIVE_S of the camera's clock while the picture changes from frame to
    frame, and at once on the frame it comes to rest on (counted, not stale); a stale frame
    shows the reads before, its tiles not decoded again; without a
    camera clock, or not live (no reading beside the loop), the gate's every other moving
    frame, as before."""
    sc, det = _scene()
    runs = {}
    for live, clocked in ((True, True), (True, False), (False, True)):
        e = _engine(det, live)
        t = 100.0
        for _ in range(3):  # the first frame, and the picture still
            e.read(sc.image, "video", clock=t)
            t += 1 / 15
        t -= 1 / 15
        before = e.detector_runs
        stale = []
        for k in range(30):  # 2 s of a hand moving
            t += 1 / 15
            r = e.read(_hand(sc.image, k + 1), "video", clock=t if clocked else None)
            if r.stale and live:  # live: drawn with the reads before, nothing decoded
                stale.append(r.decoded == 0 and r.tiles == prev.tiles)
            prev = r
        assert not live or (stale and all(stale))
        moving = e.detector_runs - before
        t += 1 / 15
        e.read(sc.image, "video", clock=t if clocked else None)  # the hand gone: it changed
        t += 1 / 15
        settle = e.detector_runs
        r = e.read(sc.image, "video", clock=t if clocked else None)  # at rest
        runs[(live, clocked)] = (moving, e.detector_runs - settle, r.stale)
        e.close()
    assert MOTION_LIVE_S == 0.5
    # t = 100.2 (the picture starts moving), 100.73, 101.27, 101.8; then at rest
    assert runs[(True, True)] == (4, 1, False)
    assert runs[(True, False)][0] == 15  # no clock: every other frame
    assert runs[(False, True)][0] == 15  # not live: every other frame


def test_a_picture_that_settles_after_a_spared_frame_is_still_from_that_frame():
    """Live frames 1/8 s apart: the hand leaves on a spared frame (t = 101.125) and the next
    frame (101.25) settles on that picture and is detected; the picture counts as still since
    101.125, so the frame after (101.375, 0.25 s later) asks for the still reading
    (VET_STILL_S), not one frame later."""
    sc, det = _scene()
    e = _engine(det, True)
    for t in (100.0, 100.125, 100.25):
        e.read(sc.image, "video", clock=t)
    for k, t in enumerate((100.375, 100.5, 100.625, 100.75, 100.875, 101.0)):
        e.read(_hand(sc.image, k + 1), "video", clock=t)
    # 100.375 ran (the picture starts moving), 100.5 and 101.0 are the gate's own stale
    # frames (motion_detect_every), 100.625 and 100.75 spared, 100.875 ran
    assert e.motion_spared == 2
    e.read(sc.image, "video", clock=101.125)  # spared: it changed since 101.0
    asked = lambda: e.background.pending(e._generation)  # this picture's reading asked for
    assert e.motion_spared == 3 and not asked()
    r = e.read(sc.image, "video", clock=101.25)  # at rest: detected
    assert not r.stale and not asked()
    e.read(sc.image, "video", clock=101.375)
    assert asked()
    e.close()


def test_a_table_behind_its_camera_asks_for_the_reading_on_the_frame_it_settles_on():
    """Live frames 1/4 s apart (a table behind its camera): the hand leaves on a frame the
    gate leaves stale (101.5); the next frame (101.75) shows the same picture and runs the
    detector: it is that picture's second still frame, 0.25 s after the first (VET_STILL_S),
    so the still reading is asked for on it, not a frame (0.25 s) later."""
    sc, det = _scene()
    e = _engine(det, True)
    for t in (100.0, 100.25, 100.5):
        e.read(sc.image, "video", clock=t)
    for k, t in enumerate((100.75, 101.0, 101.25)):
        e.read(_hand(sc.image, k + 1), "video", clock=t)
    asked = lambda: e.background.pending(e._generation)  # this picture's reading asked for
    r = e.read(sc.image, "video", clock=101.5)  # the hand gone: the gate's stale frame
    assert r.stale and not asked()
    r = e.read(sc.image, "video", clock=101.75)
    assert not r.stale and r.still_frames == 1 and asked()
    e.close()


def test_a_still_table_being_read_is_not_re_detected():
    """While the fused reading of a still picture is being made beside the loop, the gate's
    periodic re-detection (every redetect_every frames) does not run: it could change
    neither that reading nor the first look standing meanwhile."""
    sc, det = _scene()
    e = _engine(det, True)
    go = threading.Event()
    e.background._read = lambda image: (go.wait(60), [])[1]
    e.background._light = None
    for _ in range(12):
        e.read(sc.image, "video")
        if e.still_pending:
            break
    assert e.still_pending
    before = e.detector_runs
    for _ in range(3 * GateConfig().redetect_every):
        r = e.read(sc.image, "video")
        assert r.provisional
    assert e.detector_runs == before
    go.set()
    e.close()


class _StillPipeline:
    """A pipeline whose table is always being read (``reading``) or always resting: records
    the waits the live frame loop makes between frames."""

    def __init__(self, reading: bool) -> None:
        self.reading, self.resting = reading, not reading
        self.waits: list[float] = []

    def set_live(self, on: bool) -> None:
        pass

    def process(self, frame, draw: bool = True):
        from types import SimpleNamespace as NS

        return frame.image, NS(round=None, key_frame=None)

    def wait_reading(self, timeout: float) -> None:
        self.waits.append(timeout)


class _Display:
    """A sink someone looks at, or not."""

    def __init__(self, looked_at: bool) -> None:
        self.looked_at = looked_at

    def frame(self, image, frame, result) -> bool:
        return True

    def round(self, event) -> None:
        pass

    def close(self) -> None:
        pass

    def watched(self) -> bool:
        return self.looked_at


def test_a_still_table_nobody_watches_takes_fewer_frames():
    """Live, a table being read or resting takes READING_FPS / RESTING_FPS frames a second
    while a sink is watched, UNWATCHED_FPS while none is (events and figures only): the
    loop's wait between two frames says which (a wait of 1 / fps less the frame's time)."""
    from vision.config import OutputConfig, PipelineConfig, RunConfig
    from vision.io.frames import Frame
    from vision.io.stats import LiveStats
    from vision.session import READING_FPS, RESTING_FPS, UNWATCHED_FPS, Session

    assert UNWATCHED_FPS < min(READING_FPS, RESTING_FPS)
    img = np.zeros((8, 8, 3), np.uint8)
    cfg = RunConfig("mem", PipelineConfig.build(source="mem"), OutputConfig(progress=False))
    for reading in (True, False):
        for looked_at in (True, False):
            pipe = _StillPipeline(reading)
            s = Session(cfg, frames=[Frame(img, k / 15, k, "mem") for k in range(2)],
                        pipeline=pipe, sinks=[LiveStats(table_id="t"), _Display(looked_at)])
            s._live = True  # as a camera's session is
            waits = []
            s._stop.wait = lambda t, w=waits: (w.append(t), False)[1]  # the resting wait
            s.run()
            got = pipe.waits if reading else waits
            fps = (READING_FPS if reading else RESTING_FPS) if looked_at else UNWATCHED_FPS
            assert len(got) == 2 and all(1 / fps - 0.05 < t <= 1 / fps for t in got), (
                reading, looked_at, got)

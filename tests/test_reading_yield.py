"""A full still reading that finds another table's reading waiting ends as the light one
(issue 45: the first tables of a burst found the gate free and their full readings kept the
others waiting): ReadingGate.waiting, StillReader.yield_now, the sizes' order in
vision.recognition.still's ``scales`` rule."""

from __future__ import annotations

import pickle
import threading
import time
from types import SimpleNamespace as NS

import numpy as np

from vision.config import RecognitionConfig
from vision.detections import TILE, Detections
from vision.recognition.background import ReadingGate, StillReader
from vision.recognition.decode import TileRead
from vision.recognition.still import STILL_RULES, read_still


def _wait(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def test_the_gate_sees_a_reading_waiting_for_a_permit(tmp_path):
    gate = ReadingGate(tmp_path, 1, poll_s=0.01)
    assert gate.acquire(timeout=0)
    assert not gate.waiting()  # holding is not waiting
    other = pickle.loads(pickle.dumps(gate))  # another worker's copy of the pit's gate
    got, done = [], threading.Event()

    def worker():  # a permit is the thread's that took it
        got.append(other.acquire(timeout=5))
        done.wait(5)
        other.release()

    t = threading.Thread(target=worker)
    t.start()
    _wait(gate.waiting)
    assert got == []
    gate.release()
    _wait(lambda: got == [True])
    assert not gate.waiting()  # it holds the permit now, nobody waits
    done.set()
    t.join(5)
    assert gate.acquire(timeout=0) and not other.waiting()
    gate.release()


def test_a_wait_that_times_out_is_no_longer_seen(tmp_path):
    gate = ReadingGate(tmp_path, 1, poll_s=0.01)
    assert gate.acquire(timeout=0)
    other = ReadingGate(tmp_path, 1, poll_s=0.01)
    assert other.acquire(timeout=0.1) is False
    assert not gate.waiting()
    gate.release()


def test_the_reader_yields_only_to_a_waiting_reading_and_with_a_light_one():
    waits = [True]
    gate = NS(acquire=lambda timeout=None: True, release=lambda: None,
              waiting=lambda: waits[0])
    r = StillReader(lambda image: "full", gate, light=lambda image: "light",
                    contended=lambda: False)
    assert r.yield_now() and r.light_made == 1  # counted as a light reading
    waits[0] = False
    assert not r.yield_now() and r.light_made == 1
    r.close()
    waits[0] = True
    r = StillReader(lambda image: "full", gate, light=None, contended=lambda: False)
    assert not r.yield_now()  # no light reading to end as
    r.close()
    r = StillReader(lambda image: "full", None, light=lambda image: "light",
                    contended=lambda: False)
    assert not r.yield_now()  # a lone table: no gate, nobody to yield to
    r.close()


class _Engine:
    """What the ``scales`` rule uses of an engine: a tile detector that outlines one tile,
    read 3-3 at 1216 and 832 and 1-6 at 960 (two sizes disagreeing make it unknown)."""

    def __init__(self, yield_answer):
        self.config = RecognitionConfig(busy_scales=(1216,))
        self.scales = (832, 960, 1216)
        self.zoom = self.turn = False
        self.second_detector = None
        self.detector_runs = 0
        self.sizes: list[int] = []
        self.asked = 0
        self.still_yield = None if yield_answer is None else self._ask(yield_answer)

    def _ask(self, answer):
        def ask():
            self.asked += 1
            return answer
        return ask

    def detect(self, image, size):
        self.sizes.append(size)
        poly = np.array([[[100, 100], [140, 100], [140, 180], [100, 180]]], np.float32)
        return Detections.from_polygons(poly, np.array([0.9]), np.array([TILE]))

    def decode(self, image, dets, use_cache=True):
        size = self.sizes[-1]
        face = "1-6" if size == 960 else "3-3"
        p = dets.polygon[0]
        return [TileRead(face, "face_up", 0.9, p, np.r_[p.min(0), p.max(0)])], None


SCALES_ONLY = tuple(r for r in STILL_RULES if r.name == "scales")
IMAGE = np.zeros((1080, 1920, 3), np.uint8)


def test_a_full_reading_asked_to_yield_reads_as_the_light_one():
    eng = _Engine(yield_answer=True)
    reads, first = read_still(eng, IMAGE, SCALES_ONLY)
    assert eng.sizes == [1216] and eng.asked == 1
    light = _Engine(yield_answer=None)
    light_reads, _ = read_still(light, IMAGE, SCALES_ONLY, sizes=(1216,))
    assert light.sizes == [1216]
    assert [r.face for r in reads] == [r.face for r in light_reads] == ["3-3"]
    assert len(first) == 1


def test_a_full_reading_nobody_waits_for_reads_every_size_as_before():
    eng = _Engine(yield_answer=False)
    reads, _ = read_still(eng, IMAGE, SCALES_ONLY)
    assert sorted(eng.sizes) == [832, 960, 1216] and eng.sizes[0] == 1216  # the light size first
    assert eng.asked == 1
    # fused as ever: 960 names another face, so the tile is unknown
    assert [(r.state, r.face) for r in reads] == [("unknown", None)]
    offline = _Engine(yield_answer=None)  # files read as fast as possible: nobody to ask
    again, _ = read_still(offline, IMAGE, SCALES_ONLY)
    assert [(r.state, r.reason) for r in again] == [(r.state, r.reason) for r in reads]

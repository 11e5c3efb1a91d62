"""The fused still reading beside the frame loop (vision/recognition/background.py): the
reader, the detectors shared one call at a time, the pit's gate across processes."""

from __future__ import annotations

import multiprocessing as mp
import pickle
import threading
import time

import numpy as np

from vision.recognition.background import (Locked, ReadingGate, StillReader,
                                          cpu_contended)

WAIT_S = 60.0


def _wait(pred):
    end = time.monotonic() + WAIT_S
    while not pred() and time.monotonic() < end:
        time.sleep(0.005)
    assert pred()


def test_still_reader_reads_the_newest_picture_and_hands_it_over_once():
    release = threading.Event()
    seen = []

    def read(image):
        seen.append(int(image[0, 0, 0]))
        release.wait(WAIT_S)
        return [int(image[0, 0, 0])]

    r = StillReader(read)
    r.submit(1, np.full((2, 2, 3), 1, np.uint8))
    _wait(lambda: seen == [1])
    r.submit(2, np.full((2, 2, 3), 2, np.uint8))  # waits: one reading at a time
    r.submit(3, np.full((2, 2, 3), 3, np.uint8))  # replaces the waiting one
    assert r.pending(3) and r.pending(1) and not r.pending(2)
    release.set()
    _wait(lambda: not r.busy())
    assert seen == [1, 3]
    assert r.take() == (3, [3]) and r.take() is None  # the older result was replaced
    r.close()


def test_waiting_for_a_reading_ends_when_it_lands():
    """The frame loop's wait while a reading runs (at most 1 / READING_FPS s) ends when the
    reading lands, not at the end of the wait: the landed reading is taken at once
    (2026-12-05: up to 0.2 s of each live round's latency)."""
    go = threading.Event()
    r = StillReader(lambda image: (go.wait(WAIT_S), "read")[1])
    r.submit(1, np.zeros((2, 2, 3), np.uint8))
    assert r.wait_idle(0.05) is False  # still reading
    go.set()
    assert r.wait_idle(WAIT_S) is True and r.take() == (1, "read")
    r.close()


def test_a_reading_that_raises_is_handed_over_as_the_exception():
    r = StillReader(lambda image: 1 / 0)
    r.submit(7, np.zeros((2, 2, 3), np.uint8))
    _wait(lambda: not r.busy())
    gen, out = r.take()
    assert gen == 7 and isinstance(out, ZeroDivisionError)
    r.close()


def test_locked_detector_calls_one_at_a_time_and_keeps_its_attributes():
    inside, most = [0], [0]

    class Slow:
        info = "model-info"

        def detect(self, image, imgsz=None):
            inside[0] += 1
            most[0] = max(most[0], inside[0])
            time.sleep(0.01)
            inside[0] -= 1
            return imgsz

    lock = threading.Lock()
    a, b = Locked(Slow(), lock), Locked(Slow(), lock)
    threads = [threading.Thread(target=lambda d=d: [d.detect(None, 5) for _ in range(5)])
               for d in (a, b, a)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1 and a.info == "model-info" and a.detect(None, imgsz=9) == 9


def test_the_gate_lets_so_many_readings_at_a_time(tmp_path):
    gate = ReadingGate(tmp_path, 1)
    release, order = threading.Event(), []

    def read(tag):
        def f(image):
            order.append(("start", tag))
            if tag == "a":
                release.wait(WAIT_S)
            order.append(("end", tag))
            return tag
        return f

    ra, rb = StillReader(read("a"), gate), StillReader(read("b"), gate)
    ra.submit(1, np.zeros((1, 1, 3), np.uint8))
    _wait(lambda: order == [("start", "a")])
    rb.submit(1, np.zeros((1, 1, 3), np.uint8))
    time.sleep(0.2)  # b has had the time to start, were it let in
    assert order == [("start", "a")]
    release.set()
    _wait(lambda: len(order) == 4)
    assert order == [("start", "a"), ("end", "a"), ("start", "b"), ("end", "b")]
    ra.close(), rb.close()


def _hold_and_die(gate, ready):
    assert gate.acquire(timeout=5)
    ready.set()
    time.sleep(60)


def test_a_permit_held_by_a_killed_process_comes_free(tmp_path):
    gate = ReadingGate(tmp_path, 1)
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    p = ctx.Process(target=_hold_and_die, args=(pickle.loads(pickle.dumps(gate)), ready))
    p.start()
    try:
        assert ready.wait(WAIT_S)
        assert gate.acquire(timeout=0.1) is False  # held by the other process
        p.kill()
        p.join(WAIT_S)
        assert gate.acquire(timeout=WAIT_S) is True  # the kernel freed its lock
        gate.release()
    finally:
        if p.is_alive():
            p.kill()


def test_the_empty_tables_unread_outlines_get_no_second_look():
    """Live video: an empty still table whose only outline is unread (felt lettering taken
    for a tile) is not read again as a still -- the single pass stands, nothing provisional --
    and once dealt, an unread outline lying there gets no second look; one elsewhere does."""
    from vision.detections import Detections
    from vision.recognition.engine import Detectors, RecognitionEngine

    letter = np.array([[[100, 100], [160, 100], [160, 130], [100, 130]]], np.float32)

    class Tiles:
        def detect(self, image, imgsz=None):
            return Detections.from_polygons(letter, np.array([0.9], np.float32),
                                             np.array([0]))

    class NoSpots:
        def detect_batch(self, crops):
            return [Detections.empty() for _ in crops]

    e = RecognitionEngine(detectors=Detectors(Tiles(), NoSpots()))
    e.set_background(True)
    image = np.zeros((360, 640, 3), np.uint8)
    got = [e.read(image, "video") for _ in range(6)]
    assert [r.tiles[0].state for r in got] == ["unknown"] * 6
    # a first look until the picture has been still 3 frames, then the single pass stands
    assert [r.provisional for r in got] == [True] * 3 + [False] * 3 and not e.still_pending
    e.felt.learn([got[-1].tiles[0]])  # seen again: kept once
    assert e.felt.boxes.round().tolist() == [[100, 100, 160, 130]]
    there = got[-1].tiles[0]
    import dataclasses

    elsewhere = dataclasses.replace(there, xyxy=np.array([400, 200, 460, 230], np.float32))
    assert e._unread([there]) == []
    assert e._unread([elsewhere]) == [elsewhere]
    e.close()


def test_a_lone_table_runs_its_own_models_and_two_share_the_detector(tmp_path):
    """issue 45: a lone table's still reading uses every core in its own process; from two
    tables on, the pit's one detector process serves them (docs/pit.md)."""
    from vision.pit.supervisor import Pit
    from vision.pit.tables import load_tables

    def pit_of(n):
        f = tmp_path / f"tables{n}.yaml"
        f.write_text("tables:\n" + "".join(
            f"  - id: t{k}\n    source: rtsp://cam{k}/stream\n" for k in range(n)))
        return Pit(load_tables(f))

    one, two = pit_of(1), pit_of(2)
    assert (one.shared_detector, two.shared_detector) == (False, True)
    assert one.worker_threads == one.machine_threads and two.worker_threads == 1


def test_a_landed_reading_stands_on_the_next_unchanged_frame():
    """Live video of a still deal: once the reading beside the loop has landed, the very next
    frame (the same picture, nothing moved) is read with it -- not the first look again until
    something moves (the landed reading used to wait there, untaken, while frames repeated)."""
    from fakes import GroundTruthDetectors

    from vision.recognition.engine import Detectors, RecognitionEngine
    from vision.synth.render import render_table

    sc = render_table(1_000_201, size=(960, 540))
    det = GroundTruthDetectors([sc])
    e = RecognitionEngine(detectors=Detectors(det, det))
    e.set_background(True)
    got = []
    for _ in range(12):
        got.append(e.read(sc.image, "video"))
        if e.still_pending:
            break
    assert got[-1].provisional and e.still_pending  # the reading was asked for
    _wait(lambda: not e.background.busy())
    nxt = e.read(sc.image, "video")
    assert not nxt.provisional
    assert sorted(r.face for r in nxt.tiles if r.face) == sorted(
        f for faces in sc.deal.values() for f in faces)
    e.close()



def test_live_second_looks_go_only_to_unknown_tiles_that_could_change_a_settlement():
    """Live (Pipeline.worth_a_look): an unknown tile in a position with its other tiles is
    worth a second look; one in no position (felt lettering beside the table) or alone in a
    position (a position holds four tiles) is not -- a second look there cannot settle
    anything (2026-12-05: 0.5-1.3 s of each bench_live reading went to such lettering)."""
    from helpers.table_reads import LAYOUT, position_tiles
    from vision.pipeline import Pipeline

    pipe = Pipeline(tile_detector=object(), pip_detector=object(), layout=LAYOUT, draw=False)
    dealer = position_tiles(["6-6", "4-5", "1-3", "2-2"], 800, 100)
    dealer[3] = dealer[3].as_unknown("read A: no face")
    alone = position_tiles(["1-1", "3-6", "5-5", "1-6"], 1400, 700)[0].as_unknown("no face")
    outside = position_tiles(["2-4", "1-2", "4-4", "3-4"], 20, 20)[0].as_unknown("no face")
    reads = [*dealer, alone, outside]
    assert pipe.worth_a_look(reads, [dealer[3], alone, outside], (1920, 1080)) == [dealer[3]]
    pipe.set_live(True)
    assert pipe.engine.unread_worth == pipe.worth_a_look
    assert pipe.engine._unread(reads, (1920, 1080)) == [dealer[3]]
    assert len(pipe.engine._unread(reads)) == 3  # without the picture's size: every one
    pipe.set_live(False)
    assert pipe.engine.unread_worth is None and len(pipe.engine._unread(reads, (1920, 1080))) == 3
    pipe.close()


def test_a_still_table_whose_reading_stands_rests_until_something_moves():
    """Live: once the reading of a still deal has landed, the frames it answers are
    ``resting`` (the loop may take few of them, vision.session.RESTING_FPS); a frame that
    moves is not, and neither is a table being read. An empty table with nothing on it
    stands too (its reading is: nothing)."""
    from fakes import GroundTruthDetectors

    from vision.pipeline import Pipeline
    from vision.synth.render import render_table

    sc = render_table(1_000_201, size=(960, 540))
    det = GroundTruthDetectors([sc])
    pipe = Pipeline(tile_detector=det, pip_detector=det)
    pipe.set_live(True)
    rest = []
    for _ in range(12):
        pipe.process(sc.image)
        rest.append(pipe.resting)
        if pipe.reading:
            break
    assert not any(rest) and pipe.reading  # dealt, being read: every frame taken
    _wait(lambda: not pipe.engine.background.busy())
    pipe.process(sc.image)  # the landed reading is taken
    pipe.process(sc.image)
    assert pipe.resting
    moved = sc.image.copy()
    moved[100:300, 100:400] = 255 - moved[100:300, 100:400]
    pipe.process(moved)
    assert not pipe.resting
    blank = np.full_like(sc.image, 40)
    got = [(pipe.process(blank), pipe.resting)[1] for _ in range(8)]
    assert got[-1] and not got[0]
    pipe.close()


def test_a_reading_that_finds_the_machine_busy_is_made_light(tmp_path):
    """Every permit of the pit's gate taken by another table's reading: the next reading waits
    for a permit, then is made with ``light`` (one input size, busy_scales); a reading that
    finds a permit free is the full one."""
    gate = ReadingGate(tmp_path, 1)
    release, done = threading.Event(), []

    def full(tag):
        def f(image):
            if tag == "a":
                release.wait(WAIT_S)
            done.append(("full", tag))
            return tag
        return f

    def light(image):
        done.append(("light", "b"))
        return "b"

    quiet = lambda: False  # noqa: E731 -- no other program on the machine
    ra = StillReader(full("a"), gate, light=lambda image: done.append(("light", "a")),
                     contended=quiet)
    rb = StillReader(full("b"), gate, light=light, contended=quiet)
    ra.submit(1, np.zeros((1, 1, 3), np.uint8))
    _wait(lambda: ra.making(1) and ra._running == 1)
    time.sleep(0.1)  # a holds the permit
    rb.submit(1, np.zeros((1, 1, 3), np.uint8))
    time.sleep(0.2)
    assert done == []  # b waits for the permit
    release.set()
    _wait(lambda: len(done) == 2)
    assert done == [("full", "a"), ("light", "b")]
    assert (ra.light_made, rb.light_made) == (0, 1) and rb.take() == (1, "b")
    rb.submit(2, np.zeros((1, 1, 3), np.uint8))  # the machine free again: the full reading
    _wait(lambda: len(done) == 3)
    assert done[-1] == ("full", "b") and rb.light_made == 1
    ra.close(), rb.close()


def test_a_reading_that_finds_every_core_held_by_other_work_is_made_light():
    """No gate (a lone table) or a permit free, but another program's CPU-bound processes
    hold every core: the reading is the light one; the machine quiet again, the full one."""
    load = [True]
    done = []
    r = StillReader(lambda image: done.append("full"), None,
                    light=lambda image: done.append("light"), contended=lambda: load[0])
    r.submit(1, np.zeros((1, 1, 3), np.uint8))
    _wait(lambda: len(done) == 1)
    load[0] = False
    r.submit(2, np.zeros((1, 1, 3), np.uint8))
    _wait(lambda: len(done) == 2)
    assert done == ["light", "full"] and (r.made, r.light_made) == (2, 1)
    r.close()


def test_a_light_reading_that_leaves_a_tile_unread_is_followed_by_the_full_reading():
    """A light reading whose result ``again`` says leaves a tile unread lands at once, and the
    full reading of the same picture follows and lands as the same generation (counted in
    ``followed``); a newer picture handed in meanwhile goes first and makes it moot."""
    done, load = [], [True]

    def light(image):
        done.append("light")
        return "unread"

    def contended():
        if load[0] and done:
            assert r.following(1) and r.take() == (1, "unread")  # the light one has landed
            load[0] = False  # the other program's work ends
        return load[0]

    r = StillReader(lambda image: done.append("full") or "all read", None, light=light,
                    contended=contended, again=lambda image, out: out == "unread")
    r.submit(1, np.zeros((1, 1, 3), np.uint8))
    _wait(lambda: len(done) == 2)
    _wait(lambda: not r.busy())
    assert done == ["light", "full"] and r.take() == (1, "all read")
    assert (r.made, r.light_made, r.followed) == (2, 1, 1)
    r.close()

    release, done = threading.Event(), []

    def light(image):
        if image[0, 0, 0] == 1:
            release.wait(WAIT_S)
        done.append(("light", int(image[0, 0, 0])))
        return "unread" if image[0, 0, 0] == 1 else "read"

    r = StillReader(lambda image: done.append(("full", int(image[0, 0, 0]))) or "all read",
                    None, light=light, contended=lambda: True,
                    again=lambda image, out: out == "unread")
    r.submit(1, np.ones((1, 1, 3), np.uint8))
    _wait(lambda: r._running == 1)
    r.submit(2, np.full((1, 1, 3), 2, np.uint8))  # the table moved while it was read
    release.set()
    _wait(lambda: len(done) == 2)
    _wait(lambda: not r.busy())
    time.sleep(0.2)
    assert done == [("light", 1), ("light", 2)] and r.followed == 0
    assert r.take() == (2, "read")
    r.close()


def test_a_follow_up_reading_waits_for_a_permit_free_at_once():
    """The pit's permits all held by other tables' readings: the follow-up does not wait in
    line (another table's first reading goes first); it is made once a permit is free."""
    class Gate:
        free = True

        def acquire(self, timeout=None):
            return self.free

        def release(self):
            pass

    gate, done = Gate(), []

    def light(image):
        done.append("light")
        return "unread"

    gate.free = False  # other tables' readings hold every permit: the first reading is light

    r = StillReader(lambda image: done.append("full") or "all read", gate, light=light,
                    contended=lambda: False, again=lambda image, out: out == "unread")
    r.submit(1, np.zeros((1, 1, 3), np.uint8))
    _wait(lambda: done == ["light"] and r.following(1) and not r.busy())
    time.sleep(0.5)  # several tries
    assert done == ["light"] and r.take() == (1, "unread") and r.following(1)
    gate.free = True
    _wait(lambda: done == ["light", "full"])
    _wait(lambda: not r.busy())
    assert r.take() == (1, "all read") and not r.following(1)
    r.close()

    # a permit free, but another program holds every core: the follow-up waits for it too
    done, load = [], [True]
    gate.free = True
    r = StillReader(lambda image: done.append("full") or "all read", gate, light=light,
                    contended=lambda: load[0], again=lambda image, out: out == "unread")
    r.submit(1, np.zeros((1, 1, 3), np.uint8))
    _wait(lambda: done == ["light"] and r.following(1) and not r.busy())
    time.sleep(0.5)
    assert done == ["light"]
    load[0] = False
    _wait(lambda: done == ["light", "full"])
    r.close()


def test_a_follow_up_replaces_a_standing_reading_only_where_it_adds_faces():
    """adds_faces_only: the full reading may name what the light one left unread, never
    rename or drop a face that stands (a settled round must not be reported again)."""
    from types import SimpleNamespace as NS

    from vision.recognition.background import adds_faces_only

    def read(face, x):
        return NS(face=face, polygon=np.array([[x, 0], [x + 30, 0], [x + 30, 60], [x, 60]],
                                              np.float32))

    light = [read("1-3", 0), read(None, 40), read("2-2", 80)]
    assert adds_faces_only(light, [read("1-3", 1), read("4-4", 40), read("2-2", 80)])
    assert adds_faces_only(light, [read("2-2", 80), read("1-3", 2), read(None, 40)])
    assert not adds_faces_only(light, [read("1-4", 0), read("4-4", 40), read("2-2", 80)])
    assert not adds_faces_only(light, [read("1-3", 0), read("4-4", 40)])  # 2-2 dropped
    assert not adds_faces_only(light, [read("1-3", 20), read("4-4", 40), read("2-2", 80)])
    assert not adds_faces_only(light, [])
    assert adds_faces_only([read(None, 0)], [])


def test_the_engine_replaces_a_light_reading_with_its_full_follow_up():
    """Live video of a still deal on a busy machine: the light reading left a tile unread (a
    settlement waits on it); the full reading that follows lands and stands for the next
    unchanged frame, every face read (RecognitionEngine._followed)."""
    from fakes import GroundTruthDetectors

    from vision.recognition.engine import Detectors, RecognitionEngine
    from vision.schema import UnreadReason
    from vision.synth.render import render_table

    sc = render_table(1_000_201, size=(960, 540))
    det = GroundTruthDetectors([sc])
    e = RecognitionEngine(detectors=Detectors(det, det))
    e.set_background(True)
    bg = e.background
    full = bg._read

    def light(image):  # the full reading with its first face left unread
        reads = full(image)
        k = next(i for i, t in enumerate(reads) if t.face)
        return reads[:k] + [reads[k].as_unknown(UnreadReason.STILL_READING_FAILED, "a test")] + reads[k + 1:]

    go = threading.Event()

    def held_full(image):  # the full reading waits until the light one stands
        go.wait(WAIT_S)
        return full(image)

    load = [True]  # another program holds every core for the first reading only

    def contended():
        was, load[0] = load[0], False
        return was

    bg._read, bg._light, bg._contended = held_full, light, contended
    truth = sorted(f for faces in sc.deal.values() for f in faces)
    for _ in range(12):
        e.read(sc.image, "video")
        if e.still_pending:
            break
    _wait(lambda: bg.made == 1)
    first = e.read(sc.image, "video")  # the light reading lands: one tile unread
    assert not first.provisional and len([r for r in first.tiles if r.face]) == len(truth) - 1
    assert bg.following(e._generation)
    go.set()
    _wait(lambda: bg.followed == 1 and not bg.busy())
    nxt = e.read(sc.image, "video")
    assert not nxt.provisional
    assert sorted(r.face for r in nxt.tiles if r.face) == truth
    assert (bg.made, bg.light_made, bg.followed) == (2, 1, 1)
    e.close()


def test_cpu_contended_takes_the_fewest_runnable_tasks_of_its_looks():
    """Other runnable tasks (this process's own threads left out) as many as the cores:
    every core held; one look with fewer among them (a task that ran for a moment, then
    stopped) is not load; no /proc/loadavg: never contended."""
    def looks(*values):
        it = iter(values)
        return lambda: next(it)

    assert cpu_contended(2, 3, 0, looks(2, 2, 2)) is True
    assert cpu_contended(2, 3, 0, looks(2, 1, 2)) is False
    assert cpu_contended(2, 3, 0, looks(3, 4, 2)) is True
    assert cpu_contended(4, 3, 0, looks(3, 3, 3)) is False
    assert cpu_contended(2, 3, 0, looks(None, 2, 2)) is False


def test_this_process_own_busy_threads_are_not_load():
    """A lone table's own work (its frame loop, its models' inference threads) never makes
    its reading light: as many busy threads of this process as the machine has cores are
    left out of the count. Other programs' work does count: where it holds the cores before
    or after the look (a busy CI machine), the look cannot tell the two apart and the test
    is skipped rather than failed."""
    import os

    import pytest

    if not os.path.exists("/proc/loadavg"):
        return
    cores = os.cpu_count() or 1
    if cpu_contended(cores):
        pytest.skip("other processes hold every core: this process's threads cannot be "
                    "told apart")
    stop = threading.Event()

    def spin():  # hashing releases the GIL: every thread runs at once, as inference does
        import hashlib

        data = b"x" * 4_000_000
        while not stop.is_set():
            hashlib.sha256(data).digest()

    threads = [threading.Thread(target=spin, daemon=True) for _ in range(cores)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.2)
        during = cpu_contended(cores)
    finally:
        stop.set()
        for t in threads:
            t.join()
    if during and cpu_contended(cores):
        pytest.skip("other processes came to hold every core during the look")
    assert not during


def test_cpu_contended_sees_another_programs_busy_processes():
    """Fault injected: as many CPU-bound processes of another program as the machine has
    cores, each in its own session (as bench_live --load starts them); /proc/loadavg must
    show every core held."""
    import os
    import subprocess
    import sys

    if not os.path.exists("/proc/loadavg"):
        return
    cores = os.cpu_count() or 1
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                              start_new_session=True) for _ in range(cores)]
    try:
        time.sleep(0.5)
        assert cpu_contended(cores)
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_the_engine_reads_a_busy_machines_deal_at_busy_scales_only():
    """RecognitionEngine.set_background hands the reader a light reading at busy_scales; with
    busy_scales [] it has none."""
    from vision.config import RecognitionConfig
    from vision.recognition import engine as E

    seen = []

    class Probe(E.RecognitionEngine):
        def __init__(self, cfg):  # no models: only what set_background and _read_still use
            self.config, self.scales, self.background = cfg, (832, 960, 1216), None
            self.tile_detector = self.pip_detector = self.second_detector = object()

        def _read_still(self, image, turn=True, rules=None, sizes=None):
            seen.append(sizes)
            return [], None

    eng = Probe(RecognitionConfig(busy_scales=(1216,)))
    eng.set_background(True)
    eng.background._light(None), eng.background._read(None)
    assert seen == [(1216,), None]
    eng.close()
    eng = Probe(RecognitionConfig(busy_scales=()))
    eng.set_background(True)
    assert eng.background._light is None
    eng.close()


def test_a_table_behind_its_camera_asks_for_its_reading_after_one_still_frame():
    """Frames half a second apart on the camera's clock (a table far behind its camera): the
    still reading is asked for on the first frame that shows the picture unchanged
    (VET_STILL_S of the camera's clock), not after VET_AFTER_STILL of the table's own slow
    frames; frames 1/15 s apart, or without a clock, still need VET_AFTER_STILL."""
    from fakes import GroundTruthDetectors

    from vision.recognition.engine import Detectors, RecognitionEngine
    from vision.recognition.video import VET_AFTER_STILL
    from vision.synth.render import render_table

    sc = render_table(1_000_201, size=(960, 540))
    det = GroundTruthDetectors([sc])
    asked = {}
    for step in (0.5, 1 / 15, None):
        e = RecognitionEngine(detectors=Detectors(det, det))
        e.set_background(True)
        for k in range(12):
            e.read(sc.image, "video", clock=None if step is None else 100.0 + k * step)
            if e.still_pending:
                break
        asked[step] = k
        e.close()
    first = asked[None] - VET_AFTER_STILL  # the frames before the first still one
    assert asked == {0.5: first + 1, 1 / 15: first + VET_AFTER_STILL, None: first + VET_AFTER_STILL}

"""scripts/bench_live.py's own parts, without the product or its models: the cameras serve the
newest frame on the wall clock (a slow client misses frames), a round's timeline, the matching
of round events to dealt rounds, the seat counts, and bad arguments."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import bench_live as B  # noqa: E402

sys.path.pop(0)


def _read_parts(url: str, seconds: float, pause: float, out: list) -> None:
    """Read MJPEG parts from ``url`` for ``seconds``, sleeping ``pause`` after each, appending
    each part's ``X-Frame-Index`` to ``out`` (a small receive buffer: no backlog in the kernel)."""
    host, rest = url.removeprefix("http://").split("/", 1)
    h, p = host.split(":")
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    s.connect((h, int(p)))
    s.sendall(f"GET /{rest} HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
    f = s.makefile("rb")
    while f.readline() not in (b"\r\n", b""):  # the response's headers
        pass
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            line = f.readline()
            if not line:
                break
            if line.strip() != b"--frame":
                continue
            headers = {}
            while (line := f.readline()) not in (b"\r\n", b""):
                k, _, v = line.decode().partition(":")
                headers[k.strip().lower()] = v.strip()
            f.read(int(headers["content-length"]) + 2)
            out.append(int(headers["x-frame-index"]))
            time.sleep(pause)
    finally:
        f.close()
        s.close()


def test_camera_sends_the_newest_frame_and_a_slow_client_misses_frames():
    rng = np.random.default_rng(0)
    # noise pictures: JPEGs of tens of kB, so the socket buffers hold about one frame
    pics = [B.jpeg(rng.integers(0, 256, (240, 320, 3), np.uint8)) for _ in range(3)]
    fps, seconds = 20.0, 2.0
    tl = B.Timeline(pics, [1, 2] * 200, fps, preroll=0)
    with B.CameraServer({"cam": tl}, sndbuf=16 * 1024) as cs:
        assert cs.url("cam").endswith("/cam.mjpeg")
        tl.start = time.monotonic()
        fast, slow = [], []
        threads = [threading.Thread(target=_read_parts, args=(cs.url("cam"), seconds, 0.0, fast)),
                   threading.Thread(target=_read_parts, args=(cs.url("cam"), seconds, 0.25,
                                                              slow))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        now_frame = int((time.monotonic() - tl.start) * fps)
    expected = seconds * fps
    assert len(fast) >= 0.6 * expected, fast
    assert sum(b - a == 1 for a, b in zip(fast, fast[1:])) >= 0.8 * (len(fast) - 1), fast
    # the slow client took a part every 0.25 s (5 frames): it got about a fifth of them, the
    # indices skipping, never a backlog
    assert len(slow) <= 0.5 * len(fast), (slow, fast)
    gaps = [b - a for a, b in zip(slow, slow[1:])]
    assert gaps and min(gaps) >= 1 and max(gaps) >= 3, slow
    assert slow[-1] >= now_frame - 0.25 * fps * 4, (slow, now_frame)  # the newest, not old
    assert tl.connections == 2 and tl.sent >= len(fast) + len(slow)


def test_camera_timeline_before_and_after_the_clock():
    tl = B.Timeline([b"a", b"b", b"c"], [1, 2, 2], 10.0, preroll=0)
    now = time.monotonic()
    assert tl.tick(now)[1] is None and tl.picture(None) == b"a"  # before the start: preroll
    tl.start = now - 0.15  # frame 1 is due
    tick, frame = tl.tick(now)
    assert frame == 1 and tl.picture(frame) == b"c"
    assert tl.picture(99) == b"c"  # after the schedule: its last picture
    assert abs(tl.next_tick_at(now) - (tl.start + 0.2)) < 1e-6


def test_a_round_is_dealt_then_still_then_cleared():
    tl, rounds = B.build_table("t1", 0, [3_000_001, 3_000_002], (320, 180), 10.0, 3.0, 2.0,
                               1.0)
    # 1 s of the first round's empty table, then each round: 10 dealing pictures (1 s), the
    # still table to 3 s, the cleared table 2 s
    assert len(tl.schedule) == 10 + 2 * (30 + 20)
    assert [r.first_frame for r in rounds] == [10, 60]
    assert [r.start_s for r in rounds] == [1.0, 6.0]
    for r in rounds:
        s = tl.schedule[r.first_frame: r.first_frame + 50].tolist()
        assert len(set(s[:10])) == 10  # positions appear one after another
        assert len(set(s[10:30])) == 1 and len(set(s[30:])) == 1 and s[10] != s[30]
        assert set(r.truth) == set(r.deal) - {"dealer"} and 3 <= len(r.truth) <= 7
        assert set(r.truth.values()) <= {"win", "lose", "push"}
        assert sorted(f for f, _ in r.tiles) == sorted(f for fs in r.deal.values() for f in fs)
    assert tl.schedule[0] == tl.schedule[59] == tl.preroll  # the first round's empty table
    assert rounds[0].deal != rounds[1].deal and rounds[0].style != rounds[1].style


def _round(index: int, seed: int, start_s: float = 0.0, shift: float = 0.0) -> B.DealtRound:
    """A dealt round of a deal drawn from ``seed``, its tiles on a grid (row per position,
    ``shift`` px to the right: another camera picture)."""
    deal = B.make_deal(np.random.default_rng(seed))
    tiles = []
    for i, faces in enumerate(deal.values()):
        for j, f in enumerate(faces):
            x, y = 100 + 50 * j + shift, 100 + 30 * i
            tiles.append((f, np.array([[x, y], [x + 40, y], [x + 40, y + 20], [x, y + 20]],
                                      np.float64)))
    return B.DealtRound("t1", index, seed, B.STYLES[index % 3], deal, B.truth_results(deal),
                        start_s=start_s, tiles=tiles)


def _event(rd: B.DealtRound, results: dict | None = None, rename: dict | None = None,
           positions: bool = True, faces: dict | None = None) -> dict:
    """A round event reading ``rd`` (``faces``: position -> faces read instead, None unread;
    ``rename``: position names as the event gives them; ``positions`` False: none placed)."""
    rename = rename or {}
    faces = faces or rd.deal
    tiles, k = [], 0
    for p, fs in rd.deal.items():
        for j, _ in enumerate(fs):
            tiles.append({"face": faces[p][j], "polygon": rd.tiles[k][1].tolist(),
                          "position": rename.get(p, p) if positions else None})
            k += 1
    return {"round_id": "r", "banker_position": "dealer", "settled": True, "tiles": tiles,
            "positions": {rename.get(p, p): {"tiles": list(f),
                                             "result": (results or {}).get(p)}
                          for p, f in faces.items()} if positions else {}}


def test_events_are_matched_to_dealt_rounds_once_and_duplicates_flagged():
    a, b = _round(0, 1, 0.0), _round(1, 2, 10.0, shift=25.0)
    names = ("dealer", *B.SEATS)
    shift = {p: names[(names.index(p) + 1) % len(names)] for p in names}
    off = _event(b, rename=shift)
    assert B.is_match(B.match_score(off, b)) == (True, True)  # the names really are off
    assert B.is_match(B.match_score(off, a)) == (False, False)
    unplaced = _event(a, positions=False)  # no position named: its tiles still tell the round
    junk = {"positions": {"dealer": {"tiles": ["6-6", None, None, None]}}, "tiles": []}
    events = [_event(a), _event(a), off, junk, unplaced]
    for e, seen in zip(events, (3.0, 4.0, 13.0, 14.0, 15.0)):
        e["_seen_s"] = seen
    m = B.match_events(events, [a, b])
    assert m["by_round"] == [[0, 1, 4], [2]]
    assert m["unmatched"] == [3] and m["by_place"] == [2, 4]
    # one tile unread and one misread still match the round, not the other
    d = a.deal["dealer"]
    one_off = _event(a, faces={**a.deal, "dealer": [None, d[1], d[2], b.deal["dealer"][0]]})
    assert B.match_events([one_off], [a, b])["by_round"] == [[0], []]


def test_a_round_split_in_two_events_is_reported_twice_and_scored_by_the_settled_one():
    rd = _round(0, 3)
    # its dealing reported as a round of its own: a few faces read, nothing settled
    part = {p: [f[0], None, None, None] for p, f in rd.deal.items()}
    part["dealer"] = [*rd.deal["dealer"][:3], None]
    fragment = {**_event(rd, faces=part), "settled": False}
    whole = _event(rd, rd.truth)
    assert sum(v is not None for f in part.values() for v in f) >= B.MIN_FACES
    m = B.match_events([fragment, whole], [rd])
    assert m["by_round"] == [[0, 1]] and not m["unmatched"]
    assert B.round_event([fragment, whole], [0, 1]) == 1
    assert B.round_event([fragment], [0]) == 0 and B.round_event([], []) is None


def test_seats_right_wrong_and_not_settled_against_the_truth():
    rd = _round(0, 5)
    seats = sorted(rd.truth)
    flip = {"win": "lose", "lose": "win", "push": "win"}
    results = dict(rd.truth)
    results[seats[0]] = flip[rd.truth[seats[0]]]   # one wrong
    results[seats[1]] = "not_settled"              # one not settled
    c = B.score_seats(_event(rd, results), rd)
    assert (c["right"], c["wrong"], c["not_settled"]) == (len(seats) - 2, 1, 1)
    assert c["wrong_seats"] and f"seat {seats[0]}" in c["wrong_seats"][0]
    missed = B.score_seats(None, rd)
    assert (missed["right"], missed["wrong"], missed["not_settled"]) == (0, 0, len(seats))


def test_truth_results_follow_the_scoring_package():
    deal = {"dealer": ["6-6", "4-5", "1-3", "2-2"],   # Teen wong / 8 points
            "1": ["1-1", "1-1", "3-3", "3-3"],        # pair of Days over the bank's high
            "2": ["2-3", "1-2", "1-4", "2-5"]}        # 8 points / 2 points: loses
    res = B.truth_results(deal)
    assert res == {"1": "win", "2": "lose"}


def test_latency_figures():
    st = B.latency_stats([3.0, 1.0, 2.0, 10.0])
    assert st == {"n": 4, "median_s": 2.5, "p90_s": 10.0, "max_s": 10.0}
    assert B.latency_stats([])["median_s"] is None


def test_a_resting_table_that_keeps_up_is_warm_though_it_takes_few_frames():
    """A still table nobody watches takes 2 frames a second by design: its live figures
    (not behind, its camera seen) say it keeps up; a table behind, or whose camera is not
    seen yet, or a product from before the figures, does not."""
    assert B._not_behind({"stats": {"camera_fps": 15.0, "behind": False}})
    assert not B._not_behind({"stats": {"camera_fps": 15.0, "behind": True}})
    assert not B._not_behind({"stats": {"camera_fps": 0.0, "behind": False}})
    assert not B._not_behind({"stats": None}) and not B._not_behind({})


def test_light_readings_counted_per_table_over_the_run():
    """The stats routes' ``readings`` before and after the run (a pit's ``/api/stats``, a
    lone table's own route): the run's share per table, summed; None where the product does
    not say (code from before the figure)."""
    before = {"pit": {"tables": {"t1": {"readings": {"made": 2, "light": 1, "last_s": 1.0}},
                                 "t2": {"readings": None}}}}
    after = {"pit": {"tables": {"t1": {"readings": {"made": 6, "light": 4, "followed": 1,
                                                    "last_s": 0.9}},
                                "t2": {"readings": {"made": 3, "light": 0, "last_s": 1.2}}}}}
    rows = [{"readings": B._readings_delta(before, after, t)} for t in ("t1", "t2", "t3")]
    assert [r["readings"] for r in rows] == [{"made": 4, "light": 3, "followed": 1},
                                            {"made": 3, "light": 0, "followed": 0}, None]
    assert B._sum_readings(rows) == {"made": 7, "light": 3, "followed": 1}
    assert B._sum_readings([{"readings": None}]) is None
    lone = {"t1": {"readings": {"made": 5, "light": 0, "last_s": 0.8}}}
    assert B._readings_delta({}, lone, "t1") == {"made": 5, "light": 0, "followed": 0}


def test_bad_arguments_exit_2_with_one_line():
    script = str(ROOT / "scripts" / "bench_live.py")
    for args, named in ((["--tables", "0"], "--tables"), (["--deal", "1"], "--deal"),
                        (["--size", "10x10"], "--size"), (["--fps", "0"], "--fps"),
                        (["--seed", "5"], "--seed"), (["--bogus"], "--bogus"),
                        (["--models", "/nonexistent"], "--models")):
        r = subprocess.run([sys.executable, script, *args], capture_output=True, text=True,
                           timeout=60, cwd=ROOT)
        assert r.returncode == 2, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and named in lines[0], (args, r.stderr)
        assert r.stdout == ""
    r = subprocess.run([sys.executable, script, "--rounds", "-1", "--json"], capture_output=True,
                       text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 2
    body = json.loads(r.stdout)
    assert body["exit_code"] == 2 and "--rounds" in body["error"] and body["command"]


def test_the_cleared_table_is_the_same_table_without_its_tiles():
    """The cleared table is rendered without its tiles (the felt's lettering whole, as an
    empty table shows it), not painted out of the picture: away from the tiles and their
    shadows it is the dealt picture; over each tile it is not. Asking for it changes nothing
    of the dealt picture."""
    import cv2

    from vision.synth.render import render_table

    rng = np.random.default_rng([3_000_001, 45])
    dealing, full, empty, scene = B.render_round(3_000_001, (640, 360), 3, "black", rng)
    assert np.array_equal(full, render_table(3_000_001, size=(640, 360), deal=scene.deal,
                                             style="black").image)
    near = np.zeros(full.shape[:2], np.uint8)
    for t in scene.tiles:
        from vision.geometry import expand_polygon
        cv2.fillConvexPoly(near, np.round(expand_polygon(t.polygon, 0.6)).astype(np.int32), 1)
    far = near == 0
    diff = np.abs(full.astype(int) - empty.astype(int)).sum(2)
    # (the tiles' soft shadows and the JPEG blocks beside them reach a little further)
    assert far.mean() > 0.5 and (diff[far] > 24).mean() < 0.002
    for t in scene.tiles:
        inside = np.zeros(full.shape[:2], np.uint8)
        cv2.fillConvexPoly(inside, np.round(t.polygon).astype(np.int32), 1)
        assert diff[inside > 0].mean() > 20

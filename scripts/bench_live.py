#!/usr/bin/env python
"""The live benchmark (issue 45): K real-time cameras watched by ``paigow serve --tables``, every
round dealt on them accounted for, against the truth of the rendered deal.

**The cameras.** Each table is a camera served by this script: one MJPEG-over-HTTP server
(``http://127.0.0.1:PORT/<table id>.mjpeg``, ``multipart/x-mixed-replace; boundary=frame``, JPEG
parts; :class:`CameraServer`) sending ``--fps`` frames per second of ``--size`` on the wall
clock. A frame is sent for the current time only: a client that does not take the frames in
time misses them, as with a real camera (the newest frame is sent, nothing is queued beyond the
sockets' buffers; each part carries ``X-Frame-Index``). Each camera plays ``--rounds`` rounds
rendered by the project (:func:`vision.synth.render.render_table`, held-out seeds from
``--seed``, another seed, tile style and set of 3-7 seats each round): per round a dealing
phase of about 1 s (positions appear one after another, a hand over the newest, as
:func:`vision.demo.demo_frames`), the still table for the rest of ``--deal`` seconds, then the
cleared table (the same table rendered without its tiles) for ``--clear`` seconds. Every distinct picture is
rendered and JPEG-encoded (quality 85) once, before the product starts.

**The product** runs as ``paigow serve --tables TABLES.yaml --port P`` (its own process group;
stopped with SIGINT at the end, the group killed if it hangs), each table's ``out`` folder
receiving its ``events.jsonl`` (the annotated video too only with ``--video``: a pit's
tables are run with ``video: false``, docs/pit.md). Until every
table's worker runs and keeps up with the camera's still empty table (the first round's;
:func:`_wait_ready`), the cameras show that table; then the clock starts: every table's first
deal at that moment, or with ``--spread`` table k (0-based) ``k / K`` of a cycle (``deal +
clear`` seconds) later. After the last round's clear the product has ``--grace`` seconds more
before it is stopped (a round written while it stops is counted, flagged, without latency).
``--load N`` runs N busy CPU-bound processes of "another program" (each in its own session)
beside it for the whole run.

**Measured**, per table and in total:

* rounds dealt / reported / reported exactly once: each ``events.jsonl`` line is matched to a
  dealt round of its table by the faces it read (:func:`match_events`, :func:`is_match`: at
  least :data:`MIN_FACES` faces read and :data:`MATCH_NAMED` of them at the dealt position of
  the same name; else, its positions unnamed or misnamed ("by place"), at least
  :data:`MIN_FACES` read among all its tiles and :data:`MATCH_PLACED` of them lying on a dealt
  tile of that face in the picture). A dealt round matched by no event is
  missed, by more than one reported more than once (e.g. split: its dealing reported as an
  unsettled round, then the round); an event matched to no dealt round is unmatched. A round's
  event is its first settled matched event, else its first matched one;
* seats right / wrong / not settled: each player seat of a dealt round against the truth,
  ``scoring.settle.settle_round`` of the deal as laid (each position's two hands as rendered,
  the higher one high; the dealer banks) -- the round's event's ``result``
  (``win`` / ``lose`` / ``push``) the same as the truth's (right) or another (wrong); a
  ``not_settled`` seat, a seat missing from the event, or every seat of a missed round: not
  settled. A settled seat the deal does not have counts as wrong;
* latency, seconds: from the moment the server first sent the deal's first frame (wall clock,
  ``time.monotonic``) to its round's line appearing in ``events.jsonl`` (the files are read
  every 50 ms and each new line stamped): median, p90 (nearest rank), max;
* frames: sent by the cameras after the clock started, processed by the product over the
  run (its own count, ``totals.processed`` of ``GET /tables/<id>/api/stats``, where that route
  exists; else the ``frames`` count of ``GET /api/pit``), skipped = sent - processed; the
  stats routes' JSON (``/api/stats``, ``/tables/<id>/api/stats``) before and after is in the
  ``--json`` output;
* readings: still readings made beside each table's loop over the run, and of them light
  (``readings`` of the stats routes: at ``recognition.busy_scales``, the machine busy) and
  followed (full readings made after a light one left a tile unread), per
  table and summed; null where the product does not say;
* CPU seconds (user + system) of the product's process tree over the run (psutil, every
  process of the tree sampled each second: the serve process, its workers, the detector
  process); per table, its worker's process and that worker's children.

The machine's other load changes every figure: run it on a quiet machine for numbers to keep.

Usage::

    .venv/bin/python scripts/bench_live.py [--tables 1] [--deal 15] [--clear 10] [--rounds 3]
        [--fps 15] [--size 1920x1080] [--seed 3000001] [--load N] [--spread] [--models DIR]
        [--backend NAME] [--grace 8] [--start-timeout 300] [--warm-timeout 60] [--video] [--keep DIR] [--json]
        [--no-progress]

``--keep DIR`` keeps the tables file, each table's folder (``events.jsonl``, the annotated
video), ``serve.log`` and ``result.json`` (the ``--json`` object).

Exit code 0; 2 for bad arguments (one line naming the value; under ``--json`` also
``{"error", "command", "exit_code"}`` on stdout) or missing models; 1 when the product did not
come up.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "false")
os.environ.setdefault("YOLO_CONFIG_DIR", str(ROOT / ".yolo_config"))

PROG = "bench_live"
#: an event is a dealt round's when it read at least MIN_FACES faces and at least this share
#: of them lies at the dealt position of the same name (a face of another deal does by chance
#: about 1 time in 8: 5 of 6 by chance about 1 in 5,000)
MATCH_NAMED = 0.75
MIN_FACES = 6
#: ... else when at least this share of the faces it read (at least MIN_FACES, in positions or
#: not) lies on a dealt tile of that face in the picture (positions unnamed or misnamed)
MATCH_PLACED = 0.75
#: seconds of dealing at the start of a round (positions appear one after another)
DEAL_PHASE_S = 1.0
#: JPEG quality of the pictures the cameras send
JPEG_QUALITY = 85
STYLES = ("black", "ivory", "other")
SEATS = tuple(str(k) for k in range(1, 8))


# --------------------------------------------------------------------------- the rounds


@dataclass
class DealtRound:
    """One round dealt on one camera.

    Attributes:
        table: the table id.
        index: 0-based round number on the table.
        seed: render seed.
        style: tile style.
        deal: position -> its 4 faces as laid (the first two one hand, the last two the other).
        truth: player seat -> ``win`` / ``lose`` / ``push`` against the dealer (banker).
        first_frame: index (frames since the clock started) of the deal's first frame.
        start_s: seconds after the clock start at which that frame is due.
        full_frame: index of the first frame of the complete table (the dealing over).
        tiles: ``(face, float (4, 2) outline px)`` of every dealt tile in the picture.
    """

    table: str
    index: int
    seed: int
    style: str
    deal: dict
    truth: dict
    first_frame: int = 0
    start_s: float = 0.0
    full_frame: int = 0
    tiles: list = field(default_factory=list, repr=False)


def make_deal(rng: np.random.Generator) -> dict[str, list[str]]:
    """A deal of the dealer and 3-7 seats (which seats drawn by ``rng``) from one shuffled set;
    the dealer's four set by the house way (high hand first), the seats' four as dealt."""
    from scoring.setting import house_way_setting
    from scoring.tiles import STANDARD_SET

    faces = [STANDARD_SET[i].face for i in rng.permutation(len(STANDARD_SET))]
    n = int(rng.integers(3, 8))
    seats = sorted(rng.choice(len(SEATS), size=n, replace=False).tolist())
    deal = {"dealer": faces[:4]}
    for k, s in enumerate(seats, 1):
        deal[SEATS[s]] = faces[4 * k: 4 * k + 4]
    s = house_way_setting(deal["dealer"])
    deal["dealer"] = [t.face for t in (*s.high, *s.low)]
    return deal


def truth_results(deal: dict[str, list[str]], banker: str = "dealer") -> dict[str, str]:
    """Seat -> its result against ``banker`` (``win`` / ``lose`` / ``push``) by
    ``scoring.settle.settle_round``, each position's hands as laid (faces 0-1 and 2-3, the
    higher by ``scoring.hands.hand_key`` the high hand, as tests/fakes.true_settings)."""
    from scoring.hands import hand_key
    from scoring.setting import make_setting
    from scoring.settle import settle_round

    settings = {}
    for p, f in deal.items():
        h0, h1 = list(f[:2]), list(f[2:])
        if hand_key(*h1) > hand_key(*h0):
            h0, h1 = h1, h0
        settings[p] = make_setting(h0, h1)
    res = settle_round(settings, banker=banker)
    return {p: s.result for p, s in res.seats.items()}


def render_round(seed: int, size: tuple[int, int], n_deal: int, style: str,
                 rng: np.random.Generator) -> tuple[list[np.ndarray], np.ndarray, np.ndarray,
                                                    dict]:
    """The pictures of one round: ``n_deal`` dealing pictures (positions appear one after
    another, a hand-shaped blot over the newest, as :func:`vision.demo.demo_frames`), the
    still table and the cleared table (the same table rendered without its tiles:
    :attr:`vision.synth.render.TableScene.empty` -- its felt lettering whole, as a real empty
    table shows it; until 2026-12-05 the tiles were painted out of the picture, which smeared
    the letters beside them), uint8 (H, W, 3) BGR each.

    Returns:
        ``(dealing, full, empty, scene)`` (the :class:`vision.synth.render.TableScene`: its
        ``deal`` and ``tiles``).
    """
    import cv2

    from vision.geometry import expand_polygon
    from vision.synth.render import render_table

    deal = make_deal(rng)
    scene = render_table(seed, size=size, deal=deal, style=style, empty=True)
    full, empty = scene.image, scene.empty  # the same felt, lettering and camera, no tiles
    order = [p for p in ("dealer", *SEATS) if p in deal]
    masks = {p: np.zeros(full.shape[:2], np.uint8) for p in order}
    for t in scene.tiles:
        poly = np.round(expand_polygon(t.polygon, 0.25)).astype(np.int32)
        if t.position in masks:
            cv2.fillConvexPoly(masks[t.position], poly, 255)
    dealing = []
    shown = np.zeros(full.shape[:2], bool)
    n_shown = 0
    for k in range(n_deal):
        want = int(round((k + 1) / n_deal * len(order)))
        while n_shown < want:
            shown |= masks[order[n_shown]] > 0
            n_shown += 1
        img = np.where(shown[..., None], full, empty)
        pts = np.concatenate([t.polygon for t in scene.tiles
                              if t.position == order[max(n_shown, 1) - 1]])
        c = pts.mean(0) + rng.normal(0, 10, 2)
        cv2.ellipse(img, (int(c[0]), int(c[1])), (90, 55), float(rng.uniform(0, 180)), 0, 360,
                    (60, 80, 110), -1)
        dealing.append(img)
    return dealing, full, empty, scene


def jpeg(image: np.ndarray, quality: int = JPEG_QUALITY) -> bytes:
    """The picture as JPEG bytes."""
    import cv2

    ok, buf = cv2.imencode(".jpg", image, [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    return buf.tobytes()


# --------------------------------------------------------------------------- the cameras


class Timeline:
    """What one camera shows: picture ``schedule[i]`` (an index into ``jpegs``) at frame ``i``
    after the clock start, frame ``i`` due at ``start + i / fps`` (monotonic seconds); before
    the start, and after the schedule's end, ``preroll`` / the schedule's last picture.

    Counters (read by the benchmark): ``sent`` frames after the start, ``preroll_sent``
    before it, ``first_sent[i]`` the monotonic time frame ``i`` was first sent to a client,
    ``connections``.
    """

    def __init__(self, jpegs: list[bytes], schedule, fps: float, preroll: int = 0) -> None:
        self.jpegs = jpegs
        self.schedule = np.asarray(schedule, np.int32)
        self.fps = float(fps)
        self.preroll = int(preroll)
        self.start: float | None = None
        self.epoch = time.monotonic()
        self.sent = 0
        self.preroll_sent = 0
        self.first_sent: dict[int, float] = {}
        self.connections = 0
        self.lock = threading.Lock()

    def tick(self, now: float) -> tuple[int, int | None]:
        """``(tick, frame)`` at monotonic time ``now``: the clock tick (a new one every 1/fps s)
        and the frame index since the start (None before the start)."""
        start = self.start
        if start is None or now < start:
            return -1 - int((now - self.epoch) * self.fps), None
        i = int((now - start) * self.fps)
        return i, i

    def next_tick_at(self, now: float) -> float:
        """Monotonic time of the tick after the one at ``now``."""
        start = self.start
        if start is None or now < start:
            base = self.epoch
            nxt = base + (math.floor((now - base) * self.fps) + 1) / self.fps
            return min(nxt, start) if start is not None else nxt
        return start + (math.floor((now - start) * self.fps) + 1) / self.fps

    def picture(self, frame: int | None) -> bytes:
        """The JPEG shown at frame ``frame`` (None: before the start)."""
        if frame is None:
            return self.jpegs[self.preroll]
        if len(self.schedule) == 0:
            return self.jpegs[self.preroll]
        return self.jpegs[int(self.schedule[min(frame, len(self.schedule) - 1)])]

    def sent_frame(self, frame: int | None, at: float) -> None:
        with self.lock:
            if frame is None:
                self.preroll_sent += 1
            else:
                self.sent += 1
                self.first_sent.setdefault(frame, at)


class CameraServer:
    """One HTTP server on 127.0.0.1 with one MJPEG stream per camera at ``/<name>.mjpeg``
    (:meth:`url`); each client connection gets, at every tick of the camera's clock, the
    picture for that moment (never a queue: a client busy for several ticks gets the newest
    frame next). Use as a context manager.

    Args:
        timelines: camera name -> its :class:`Timeline`.
        sndbuf: the socket send buffer per connection, bytes (small, so a slow client's frames
            are dropped rather than buffered; None: the system's).
    """

    def __init__(self, timelines: dict[str, Timeline], sndbuf: int | None = 256 * 1024) -> None:
        self.timelines = timelines
        self.sndbuf = sndbuf
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    def url(self, name: str) -> str:
        """The stream URL of camera ``name``."""
        return f"http://127.0.0.1:{self.port}/{name}.mjpeg"

    def start(self) -> "CameraServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):  # noqa: N802 - http.server's hook
                name = self.path.split("?")[0].strip("/").removesuffix(".mjpeg")
                tl = server.timelines.get(name)
                if tl is None:
                    self.send_error(404)
                    return
                if server.sndbuf:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF,
                                               server.sndbuf)
                with tl.lock:
                    tl.connections += 1
                self.send_response(200)
                self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=frame")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                last = None
                while not server._stop.is_set():
                    now = time.monotonic()
                    tick, frame = tl.tick(now)
                    if tick != last:
                        data = tl.picture(frame)
                        head = (b"--frame\r\nContent-Type: image/jpeg\r\n"
                                b"Content-Length: %d\r\nX-Frame-Index: %d\r\n\r\n"
                                % (len(data), -1 if frame is None else frame))
                        try:
                            self.wfile.write(head + data + b"\r\n")
                            self.wfile.flush()
                        except OSError:
                            return
                        tl.sent_frame(frame, now)
                        last = tick
                    wait = tl.next_tick_at(time.monotonic()) - time.monotonic()
                    if wait > 0:
                        server._stop.wait(min(wait, 0.1))

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True,
                                        name="cameras")
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop every stream and the server (idempotent)."""
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def __enter__(self) -> "CameraServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def build_table(table: str, k: int, seeds: list[int], size: tuple[int, int], fps: float,
                deal_s: float, clear_s: float, offset_s: float,
                progress=None) -> tuple[Timeline, list[DealtRound]]:
    """Render table ``table``'s rounds (one per seed; style ``STYLES[(k + r) % 3]``) and its
    camera's timeline: ``offset_s`` of the first round's empty table, then per round the
    dealing (:data:`DEAL_PHASE_S`), the still table (to ``deal_s``) and the cleared table
    (``clear_s``)."""
    jpegs: list[bytes] = []
    schedule: list[int] = []
    rounds: list[DealtRound] = []
    n_deal_frames = max(1, int(round(deal_s * fps)))
    n_dealing = max(1, min(n_deal_frames, int(round(DEAL_PHASE_S * fps))))
    n_clear = max(0, int(round(clear_s * fps)))
    offset_frames = int(round(offset_s * fps))
    preroll = None
    for r, seed in enumerate(seeds):
        style = STYLES[(k + r) % len(STYLES)]
        if progress:
            progress(f"rendering {table} round {r + 1}/{len(seeds)} (seed {seed}, {style})")
        rng = np.random.default_rng([seed, 45])
        dealing, full, empty, scene = render_round(seed, size, n_dealing, style, rng)
        deal = scene.deal
        base = len(jpegs)
        jpegs += [jpeg(im) for im in dealing]
        jpegs += [jpeg(full), jpeg(empty)]
        i_full, i_empty = base + len(dealing), base + len(dealing) + 1
        if preroll is None:
            preroll = i_empty
            schedule += [preroll] * offset_frames
        first = len(schedule)
        schedule += list(range(base, base + len(dealing)))
        schedule += [i_full] * (n_deal_frames - len(dealing))
        schedule += [i_empty] * n_clear
        rounds.append(DealtRound(table, r, seed, style, deal, truth_results(deal),
                                 first_frame=first, start_s=first / fps,
                                 full_frame=first + len(dealing),
                                 tiles=[(t.face, np.asarray(t.polygon, np.float64))
                                        for t in scene.tiles if t.face]))
    return Timeline(jpegs, schedule, fps, preroll=preroll or 0), rounds


# --------------------------------------------------------------------------- matching


def _faces(position: dict) -> Counter:
    return Counter(f for f in (position.get("tiles") or []) if f)


def _inside(point, polygon) -> bool:
    """Whether ``point`` (x, y) lies inside the convex or concave ``polygon`` ((n, 2) px)."""
    x, y = float(point[0]), float(point[1])
    poly = np.asarray(polygon, np.float64)
    inside = False
    for (x1, y1), (x2, y2) in zip(poly, np.roll(poly, -1, axis=0)):
        if (y1 > y) != (y2 > y) and x < x1 + (y - y1) * (x2 - x1) / (y2 - y1):
            inside = not inside
    return inside


def match_score(event: dict, rd: "DealtRound") -> dict:
    """How well a round event agrees with a dealt round, by the faces it read.

    Returns:
        ``{"read": faces read in the event's positions, "named": of those, the ones the deal
        has at the position of the same name, "precision": named / read, "coverage": named /
        the dealt tiles, "tiles_read": faces read among all the event's tiles (``tiles``,
        positions or none), "placed": of those, the ones lying (their outline's centre) on a
        dealt tile of the same face, "precision_placed": placed / tiles_read}``.
    """
    deal = rd.deal
    pos = event.get("positions") or {}
    total = sum(len(f) for f in deal.values()) or 1
    read = sum(sum(_faces(e or {}).values()) for e in pos.values())
    named = sum(sum((Counter(f) & _faces(pos.get(p) or {})).values()) for p, f in deal.items())
    tiles = [t for t in event.get("tiles") or [] if t.get("face")]
    placed = 0
    for t in tiles:
        if t.get("polygon"):
            c = np.asarray(t["polygon"], np.float64).mean(0)
        elif t.get("xyxy"):
            x1, y1, x2, y2 = t["xyxy"]
            c = ((x1 + x2) / 2, (y1 + y2) / 2)
        else:
            continue
        placed += any(face == t["face"] and _inside(c, poly) for face, poly in rd.tiles)
    return {"read": read, "named": named, "precision": named / read if read else 0.0,
            "coverage": named / total, "tiles_read": len(tiles), "placed": placed,
            "precision_placed": placed / len(tiles) if tiles else 0.0}


def is_match(score: dict) -> tuple[bool, bool]:
    """``(matched, by_place)`` of a :func:`match_score`: matched when the event read at least
    :data:`MIN_FACES` faces in its positions and :data:`MATCH_NAMED` of them lie at the dealt
    position of the same name; else (``by_place``: its positions unnamed or misnamed) when it
    read at least :data:`MIN_FACES` faces among all its tiles and :data:`MATCH_PLACED` of
    them lie on a dealt tile of the same face."""
    if score["read"] >= MIN_FACES and score["precision"] >= MATCH_NAMED:
        return True, False
    if score["tiles_read"] >= MIN_FACES and score["precision_placed"] >= MATCH_PLACED:
        return True, True
    return False, False


def match_events(events: list[dict], rounds: list[DealtRound]) -> dict:
    """Match one table's events (in the order they appeared; each a round event, optionally
    with ``_seen_s``: seconds after the clock start it appeared) to its dealt rounds.

    Returns:
        ``{"by_round": [[event index, ...] per dealt round], "unmatched": [event index],
        "by_place": [event index matched only by where its tiles lie],
        "score": [the best round's precision per event], "read": [faces read per event]}``.
        An event goes to the dealt round it agrees with best (:func:`is_match`; by
        precision, then coverage); on a tie, the latest round dealt before it appeared.
        A round split in two events (its dealing reported unsettled, then the round) is
        matched twice: reported more than once.
    """
    by_round: list[list[int]] = [[] for _ in rounds]
    unmatched, by_place, scores, reads = [], [], [], []
    for i, ev in enumerate(events):
        best, top = None, 0.0
        read = 0
        for r, rd in enumerate(rounds):
            sc = match_score(ev, rd)
            read = max(sc["read"], sc["tiles_read"])
            top = max(top, sc["precision"])
            ok, off = is_match(sc)
            if not ok:
                continue
            seen = ev.get("_seen_s")
            after = seen is None or seen >= rd.start_s
            key = (not off, round(sc["precision"] if not off else sc["precision_placed"], 6),
                   round(sc["coverage"], 6), after, rd.start_s if after else -rd.start_s)
            if best is None or key > best[0]:
                best = (key, r, off)
        reads.append(read)
        scores.append(round(best[0][1], 3) if best else round(top, 3))
        if best is None:
            unmatched.append(i)
            continue
        by_round[best[1]].append(i)
        if best[2]:
            by_place.append(i)
    return {"by_round": by_round, "unmatched": unmatched, "by_place": by_place,
            "score": scores, "read": reads}


def round_event(events: list[dict], idx: list[int]) -> int | None:
    """The event that reports a dealt round, of the events ``idx`` matched to it: the first
    settled one, else the first (None when none)."""
    for i in idx:
        if events[i].get("settled"):
            return i
    return idx[0] if idx else None


def score_seats(event: dict | None, rd: DealtRound) -> dict:
    """Seat outcomes of dealt round ``rd`` from its event (None: not reported): counts
    ``right`` / ``wrong`` / ``not_settled`` over the dealt seats, plus ``phantom`` (settled
    seats the deal does not have; counted in ``wrong``) and the wrong seats' lines."""
    c = Counter(right=0, wrong=0, not_settled=0, phantom=0)
    wrong = []
    pos = (event or {}).get("positions") or {}
    for seat, want in rd.truth.items():
        got = (pos.get(seat) or {}).get("result")
        if got in ("win", "lose", "push"):
            if got == want:
                c["right"] += 1
            else:
                c["wrong"] += 1
                wrong.append(f"{rd.table} round {rd.index + 1} seat {seat}: {got}, truth {want}")
        else:
            c["not_settled"] += 1
    banker = (event or {}).get("banker_position", "dealer")
    for p, e in pos.items():
        if p != banker and p not in rd.truth and (e or {}).get("result") in ("win", "lose",
                                                                             "push"):
            c["wrong"] += 1
            c["phantom"] += 1
            wrong.append(f"{rd.table} round {rd.index + 1} seat {p}: {e['result']}, "
                         "not dealt")
    return {**c, "wrong_seats": wrong}


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile ``q`` (0..100) of ``values`` (None when empty)."""
    if not values:
        return None
    v = sorted(values)
    return v[max(0, math.ceil(q / 100 * len(v)) - 1)]


def latency_stats(values: list[float]) -> dict:
    """``{"n", "median_s", "p90_s", "max_s"}`` of latencies in seconds (None when empty)."""
    import statistics

    r3 = (lambda x: None if x is None else round(x, 2))
    return {"n": len(values), "median_s": r3(statistics.median(values) if values else None),
            "p90_s": r3(percentile(values, 90)), "max_s": r3(max(values) if values else None)}


# --------------------------------------------------------------------------- the product


class EventTail:
    """Reads the new complete lines of a growing ``events.jsonl`` and stamps each with
    ``time.monotonic()`` when it was read."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._pos = 0
        self._buf = b""
        self.lines: list[tuple[float, dict]] = []
        self.bad = 0

    def poll(self) -> int:
        """Read what was appended; returns the number of new lines."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._pos)
                data = f.read()
        except FileNotFoundError:
            return 0
        if not data:
            return 0
        now = time.monotonic()
        self._pos += len(data)
        self._buf += data
        *complete, self._buf = self._buf.split(b"\n")
        n = 0
        for line in complete:
            if not line.strip():
                continue
            try:
                self.lines.append((now, json.loads(line)))
                n += 1
            except json.JSONDecodeError:
                self.bad += 1
        return n


def _get_json(url: str, timeout: float = 2.0):
    """``(status, body)`` of a GET returning JSON; ``(None, None)`` when unreachable."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"null")
        except (ValueError, OSError):
            return exc.code, None
    except (OSError, ValueError):
        return None, None


class TreeCpu:
    """CPU seconds (user + system) of a process tree, each process sampled by :meth:`sample`
    (a process that ended between two samples keeps its last sampled time)."""

    def __init__(self, root_pid: int) -> None:
        self.root = root_pid
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.parent: dict[int, int | None] = {}

    def sample(self, baseline: bool = False) -> None:
        import psutil

        try:
            root = psutil.Process(self.root)
            procs = [root] + root.children(recursive=True)
        except psutil.Error:
            return
        for p in procs:
            try:
                t = p.cpu_times()
                cpu = t.user + t.system
                self.parent.setdefault(p.pid, p.ppid())
            except psutil.Error:
                continue
            if baseline:
                self.first[p.pid] = cpu
            elif p.pid not in self.first:
                self.first[p.pid] = 0.0  # started after the baseline: all its time counts
            self.last[p.pid] = cpu

    def used(self, pids=None) -> float:
        """CPU seconds since the baseline of ``pids`` (None: the whole tree)."""
        keys = self.last if pids is None else [p for p in pids if p in self.last]
        return sum(max(0.0, self.last[p] - self.first.get(p, 0.0)) for p in keys)

    def subtree(self, pid: int) -> set[int]:
        """``pid`` and every sampled process below it."""
        out = {pid}
        grew = True
        while grew:
            grew = False
            for p, pp in self.parent.items():
                if pp in out and p not in out:
                    out.add(p)
                    grew = True
        return out


def _code_version() -> str | None:
    """``git describe``-like: the checkout's commit, ``+dirty`` with uncommitted changes to
    tracked files (None outside git)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, capture_output=True, text=True,
                               timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("+dirty" if dirty else "")) or None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _paigow_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("paigow")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "vision.cli"]


def start_load(n: int) -> list[subprocess.Popen]:
    """``n`` busy CPU-bound processes, each in its own session (stop with :func:`stop_procs`)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             start_new_session=True, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(n)]


def stop_procs(procs: list[subprocess.Popen]) -> None:
    """Kill each process's group (each started as its own session leader) and reap it."""
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def stop_product(proc: subprocess.Popen, wait_s: float = 30.0) -> str:
    """SIGINT to ``paigow serve``, wait; its group killed when it hangs (or leaves processes
    behind). Returns how it ended."""
    how = "exited"
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(wait_s)
            how = f"stopped by SIGINT (exit code {proc.returncode})"
        except subprocess.TimeoutExpired:
            how = f"did not stop within {wait_s:.0f} s of SIGINT: group killed"
    else:
        how = f"had exited (code {proc.returncode}) before the end"
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the group's leftovers (none when it stopped well)
        if "killed" not in how:
            how += "; leftover processes of its group killed"
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    return how


# --------------------------------------------------------------------------- the run


def _stats_routes(port: int, tables: list[str]) -> dict:
    """The product's stats routes where they exist: ``/api/stats`` and each
    ``/tables/<id>/api/stats`` (JSON bodies of 200 answers only)."""
    out = {}
    st, body = _get_json(f"http://127.0.0.1:{port}/api/stats")
    if st == 200:
        out["pit"] = body
    for t in tables:
        st, body = _get_json(f"http://127.0.0.1:{port}/tables/{t}/api/stats")
        if st == 200:
            out[t] = body
    return out


def _table_figures(st: dict | None, tid: str) -> dict:
    """Table ``tid``'s figures in a :func:`_stats_routes` answer: a lone table's own route or
    the pit's ``tables`` ({} where neither has them)."""
    st = st or {}
    return st.get(tid) or (st.get("pit") or {}).get("tables", {}).get(tid) or {}


def _stats_delta(before: dict, after: dict, tid: str) -> dict:
    """The difference of table ``tid``'s ``totals`` (``delivered``, ``processed``,
    ``skipped``, ``dropped``, frames) between two :func:`_stats_routes` answers ({} when the
    product has no such route)."""
    a = _table_figures(before, tid).get("totals") or {}
    b = _table_figures(after, tid).get("totals") or {}
    return {k: int(b[k]) - int(a.get(k) or 0) for k in b
            if isinstance(b[k], (int, float)) and not isinstance(b[k], bool)}


#: the still-reading counts of ``/api/stats`` ``readings`` the benchmark reports
READING_KEYS = ("made", "light", "followed")


def _sum_readings(rows: list[dict]) -> dict | None:
    """Every table's ``readings`` summed (None where no table's product says)."""
    got = [r["readings"] for r in rows if r.get("readings")]
    if not got:
        return None
    return {k: sum(int(g.get(k) or 0) for g in got) for k in READING_KEYS}


def _readings_delta(before: dict, after: dict, tid: str) -> dict | None:
    """Table ``tid``'s still readings made beside its loop between two :func:`_stats_routes`
    answers, ``{"made", "light", "followed"}`` (``readings`` of ``/api/stats``: light ones
    at ``busy_scales``, the machine busy; followed: full readings made after a light one left
    a tile unread, 0 where the product does not count them); None where the product does not
    say."""
    a = _table_figures(before, tid).get("readings") or {}
    b = _table_figures(after, tid).get("readings")
    if not b:
        return None
    return {k: int(b.get(k) or 0) - int(a.get(k) or 0) for k in READING_KEYS}


def _not_behind(row: dict) -> bool:
    """A ``/api/pit`` table row whose live figures see its camera and say it keeps up."""
    st = row.get("stats") or {}
    return float(st.get("camera_fps") or 0) > 0 and st.get("behind") is False


def _wait_ready(port: int, proc: subprocess.Popen, K: int, fps: float, timeout_s: float,
                warm_s: float, work: Path, say) -> tuple[dict, bool]:
    """Wait until every table's worker runs and has processed a frame (else RuntimeError
    after ``timeout_s``), then until each keeps up with the camera's still empty table: at
    least ``min(5, fps / 3)`` frames a second processed over the last 2 s, or its live
    figures (``/api/pit`` ``stats``) see its camera and say it is not behind (a still table
    nobody watches takes 2 frames a second by design, ``vision.session.UNWATCHED_FPS``; at
    most ``warm_s`` more seconds; a product that never gets there is measured anyway).
    Returns the last ``/api/pit`` answer and whether the tables were warm."""
    t0 = time.monotonic()
    hist: list[tuple[float, dict]] = []
    up_at = None
    need = 2.0 * min(5.0, fps / 3.0)
    while True:
        if proc.poll() is not None:
            tail = (work / "serve.log").read_text(errors="replace").splitlines()[-15:]
            raise RuntimeError(f"paigow serve exited with code {proc.returncode} before "
                               "its tables ran: " + " | ".join(tail))
        now = time.monotonic()
        st, pit = _get_json(f"http://127.0.0.1:{port}/api/pit")
        rows = (pit or {}).get("tables") or []
        running = st == 200 and len(rows) == K and all(
            (r.get("worker") or {}).get("state") == "running" and int(r.get("frames") or 0) >= 1
            for r in rows)
        if not running and up_at is None and now - t0 > timeout_s:
            raise RuntimeError(f"the tables' workers did not process frames within "
                               f"{timeout_s:.0f} s")
        if running:
            if up_at is None:
                up_at = now
                say(f"workers up in {now - t0:.1f} s; waiting until they keep up")
            frames = {r["table_id"]: int(r.get("frames") or 0) for r in rows}
            hist.append((now, frames))
            old = [h for h in hist if now - h[0] >= 2.0]
            if old:
                ref = old[-1][1]
                if all(frames[r["table_id"]] - ref.get(r["table_id"], 0) >= need
                       or _not_behind(r) for r in rows):
                    return pit, True
            if now - up_at > warm_s:
                say(f"the tables did not keep up with the empty table within {warm_s:.0f} s: "
                    "measured anyway")
                return pit, False
        time.sleep(0.5)


def run_bench(args, say) -> dict:
    """The whole benchmark (module docstring); ``say(line)`` reports progress."""
    K, R = args.tables, args.rounds
    cycle = args.deal + args.clear
    tables = [f"t{k + 1}" for k in range(K)]
    t_render = time.monotonic()
    timelines, dealt = {}, {}
    for k, tid in enumerate(tables):
        offset = (k / K) * cycle if args.spread else 0.0
        seeds = [args.seed + k * R + r for r in range(R)]
        timelines[tid], dealt[tid] = build_table(tid, k, seeds, args.size, args.fps, args.deal,
                                                 args.clear, offset, say)
    render_s = time.monotonic() - t_render
    timeline_s = max(len(tl.schedule) for tl in timelines.values()) / args.fps
    keep = Path(args.keep).resolve() if args.keep else None
    work = keep or Path(tempfile.mkdtemp(prefix="bench_live_"))
    work.mkdir(parents=True, exist_ok=True)
    res: dict = {"settings": {"tables": K, "rounds": R, "deal_s": args.deal,
                              "clear_s": args.clear, "fps": args.fps,
                              "size": list(args.size), "seed": args.seed, "load": args.load,
                              "spread": args.spread, "grace_s": args.grace,
                              "video": bool(args.video),
                              "models": str(args.models) if args.models else None,
                              "backend": args.backend},
                 "code": _code_version(), "cpus": os.cpu_count(),
                 "render_s": round(render_s, 1),
                 "timeline_s": round(timeline_s, 1)}
    load, proc, cams = [], None, None
    try:
        cams = CameraServer(timelines).start()
        spec = {"tables": []}
        for tid in tables:
            (work / tid).mkdir(parents=True, exist_ok=True)
            ev = work / tid / "events.jsonl"
            if ev.exists():
                ev.unlink()
            entry = {"id": tid, "source": cams.url(tid), "out": str(work / tid)}
            if not args.video:  # (the key is left out with --video: older code lacks it)
                entry["video"] = False
            if args.models:
                entry["models"] = str(Path(args.models).resolve())
            if args.backend:
                entry["backend"] = args.backend
            spec["tables"].append(entry)
        import yaml

        tables_file = work / "tables.yaml"
        tables_file.write_text(yaml.safe_dump(spec, sort_keys=False))
        port = _free_port()
        load = start_load(args.load)
        product = Path(args.product_root).resolve() if args.product_root else ROOT
        res["product_root"] = str(product)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(product)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                              if p])}
        log = open(work / "serve.log", "wb")
        cmd = [*_paigow_cmd(), "serve", "--tables", str(tables_file), "--port", str(port)]
        res["command"] = " ".join(cmd)
        t_up = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=product, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        say(f"paigow serve --tables (pid {proc.pid}) on port {port}, {K} table(s); "
            f"waiting for the workers")
        pit, warm = _wait_ready(port, proc, K, args.fps, args.start_timeout, args.warm_timeout,
                                work, say)
        t_base = time.monotonic()  # when ``pit`` was read: the frame indices' reference
        res["warm"] = warm
        res["startup_s"] = round(time.monotonic() - t_up, 1)
        say(f"product up in {res['startup_s']} s; starting the clock "
            f"({timeline_s:.0f} s of rounds + {args.grace:.0f} s grace)")
        base = {r["table_id"]: r for r in pit["tables"]}
        stats0 = _stats_routes(port, tables)
        t_stats0 = time.monotonic()
        cpu = TreeCpu(proc.pid)
        cpu.sample(baseline=True)
        tails = {tid: EventTail(work / tid / "events.jsonl") for tid in tables}
        for t in tails.values():
            t.poll()  # nothing should be there yet; skip anything that is
            t.lines.clear()
        start = time.monotonic() + 0.2
        for tl in timelines.values():
            tl.start = start
        res["clock_start_utc"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        res["load_avg_at_start"] = [round(x, 2) for x in os.getloadavg()]
        end = start + timeline_s + args.grace
        worker_pids: dict[str, set[int]] = {tid: set() for tid in tables}
        last_pit = pit
        next_sample = next_say = time.monotonic()
        while time.monotonic() < end:
            for t in tails.values():
                t.poll()
            now = time.monotonic()
            if now >= next_sample:
                next_sample = now + 1.0
                cpu.sample()
                st, p = _get_json(f"http://127.0.0.1:{port}/api/pit", timeout=1.0)
                if st == 200 and p:
                    last_pit = p
                    for r in p.get("tables") or []:
                        pid = (r.get("worker") or {}).get("pid")
                        if pid:
                            worker_pids.setdefault(r["table_id"], set()).add(int(pid))
                if proc.poll() is not None:
                    say(f"paigow serve exited early (code {proc.returncode})")
                    break
            if now >= next_say:
                next_say = now + 5.0
                got = sum(len(t.lines) for t in tails.values())
                say(f"t={now - start:5.1f} s of {timeline_s + args.grace:.0f}: {got} round "
                    f"event(s)")
            time.sleep(0.05)
        cpu.sample()
        st, p = _get_json(f"http://127.0.0.1:{port}/api/pit", timeout=5.0)
        if st == 200 and p:
            last_pit = p
        stats1 = _stats_routes(port, tables)
        t_stop = time.monotonic()
        res["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
        for t in tails.values():
            t.poll()
        res["product_stop"] = stop_product(proc)
        for t in tails.values():
            t.poll()  # rounds written while stopping (stamped after t_stop)
        res["product_stats"] = {"before": stats0, "after": stats1} if (stats0 or stats1) \
            else None
        res["per_table"] = []
        totals = Counter()
        lat_all: list[float] = []
        lat_full_all: list[float] = []
        wrong_all: list[str] = []
        cpu_tables = 0.0
        end_rows = {r["table_id"]: r for r in (last_pit or {}).get("tables") or []}
        for tid in tables:
            tl, rounds = timelines[tid], dealt[tid]
            events = []
            for seen, ev in tails[tid].lines:
                events.append({**ev, "_seen_s": seen - start, "_after_stop": seen > t_stop})
            m = match_events(events, rounds)
            # the event's frame on the camera's clock (s after the start), estimated from the
            # product's frame index (it counts every frame it takes from the camera) and the
            # frames it had taken when the clock started: its stats' ``delivered`` where it
            # has them, else the pit's last processed frame index (which lags when behind)
            delivered0 = ((stats0.get(tid) or {}).get("totals") or {}).get("delivered")
            if isinstance(delivered0, int):
                idx0 = delivered0 + (start - t_stats0) * args.fps
            else:
                idx0 = int((base.get(tid) or {}).get("frame_index") or 0) \
                    + (start - t_base) * args.fps

            def frame_s(ev, idx0=idx0):
                fi = ev.get("frame_index")
                return None if fi is None else round((fi - idx0) / args.fps, 2)

            c = Counter(dealt=len(rounds), reported=0, once=0, missed=0, more_than_once=0,
                        unmatched=len(m["unmatched"]), events=len(events),
                        by_place=len(m["by_place"]), after_stop=sum(
                            e["_after_stop"] for e in events), right=0, wrong=0,
                        not_settled=0, phantom=0, settled_events=sum(
                            bool(e.get("settled")) for e in events))
            lats, lats_full, rows = [], [], []
            for rd, idx in zip(rounds, m["by_round"]):
                j = round_event(events, idx)
                first = events[j] if j is not None else None
                c["reported"] += bool(idx)
                c["once"] += len(idx) == 1
                c["missed"] += not idx
                c["more_than_once"] += len(idx) > 1
                s = score_seats(first, rd)
                for k in ("right", "wrong", "not_settled", "phantom"):
                    c[k] += s[k]
                wrong_all += s["wrong_seats"]
                sent_at = tl.first_sent.get(rd.first_frame)
                full_at = tl.first_sent.get(rd.full_frame)
                lat = lat_full = None
                if first is not None:
                    t0 = sent_at if sent_at is not None else start + rd.start_s
                    lat = round(first["_seen_s"] + start - t0, 3)
                    t1 = full_at if full_at is not None else \
                        start + rd.start_s + (rd.full_frame - rd.first_frame) / tl.fps
                    lat_full = round(first["_seen_s"] + start - t1, 3)
                    if not first["_after_stop"]:
                        lats.append(lat)
                        lats_full.append(lat_full)
                rows.append({"round": rd.index + 1, "seed": rd.seed, "style": rd.style,
                             "seats": [p for p in rd.deal if p != "dealer"],
                             "deal": rd.deal, "truth": rd.truth,
                             "deal_at_s": round((sent_at - start) if sent_at else rd.start_s,
                                                3),
                             "events": [{"round_id": events[i].get("round_id"),
                                         "seen_s": round(events[i]["_seen_s"], 3),
                          "frame_index": events[i].get("frame_index"),
                          "frame_s": frame_s(events[i]),
                                         "settled": events[i].get("settled"),
                                         "reason": events[i].get("reason"),
                                         "frame_index": events[i].get("frame_index"),
                                         "frame_s": frame_s(events[i]),
                                         "faces_read": m["read"][i],
                                         "match": m["score"][i]} for i in idx],
                             "latency_s": lat, "latency_full_s": lat_full,
                             "seats_right": s["right"], "seats_wrong": s["wrong"],
                             "seats_not_settled": s["not_settled"],
                             "wrong_seats": s["wrong_seats"]})
            unmatched = [{"round_id": events[i].get("round_id"),
                          "seen_s": round(events[i]["_seen_s"], 3),
                          "frame_index": events[i].get("frame_index"),
                          "frame_s": frame_s(events[i]),
                          "settled": events[i].get("settled"), "reason": events[i].get("reason"),
                          "positions": {p: e.get("tiles") for p, e in
                                        (events[i].get("positions") or {}).items()},
                          "faces_read": m["read"][i],
                          "match": m["score"][i]} for i in m["unmatched"]]
            b, e = base.get(tid) or {}, end_rows.get(tid) or {}
            processed = int(e.get("frames") or 0) - int(b.get("frames") or 0)
            received = int(e.get("frame_index") or 0) - int(b.get("frame_index") or 0)
            own = _stats_delta(stats0, stats1, tid)  # the product's own count, where it has one
            if own.get("processed") is not None:
                processed = own["processed"]
            pids = set()
            for pid in worker_pids.get(tid, set()):
                pids |= cpu.subtree(pid)
            cpu_t = cpu.used(pids)
            cpu_tables += cpu_t
            row = {"table": tid, **c, "latency": latency_stats(lats),
                   "latency_full": latency_stats(lats_full),
                   "frames": {"sent": tl.sent, "processed": processed,
                              "skipped": tl.sent - processed,
                              "received_index_delta": received,
                              "product_totals_delta": own or None,
                              "preroll_sent": tl.preroll_sent,
                              "connections": tl.connections},
                   "readings": _readings_delta(stats0, stats1, tid),
                   "worker_restarts": int((e.get("worker") or {}).get("restarts") or 0)
                   - int((b.get("worker") or {}).get("restarts") or 0),
                   "cpu_s": round(cpu_t, 1), "rounds": rows, "unmatched_events": unmatched}
            res["per_table"].append(row)
            totals.update({k: v for k, v in c.items()})
            totals["sent"] += tl.sent
            totals["processed"] += processed
            lat_all += lats
            lat_full_all += lats_full
        res["total"] = {**{k: totals[k] for k in (
            "dealt", "reported", "once", "missed", "more_than_once", "unmatched", "events",
            "by_place", "after_stop", "right", "wrong", "not_settled", "phantom",
            "settled_events")},
            "latency": latency_stats(lat_all),
            "latency_full": latency_stats(lat_full_all),
            "frames": {"sent": totals["sent"], "processed": totals["processed"],
                       "skipped": totals["sent"] - totals["processed"]},
            "readings": _sum_readings(res["per_table"]),
            "cpu_s": round(cpu.used(), 1),
            "cpu_s_tables": round(cpu_tables, 1),
            "cpu_s_per_processed_frame_ms": round(1000 * cpu.used()
                                                  / max(totals["processed"], 1), 1),
            "wall_s": round(t_stop - start, 1)}
        res["wrong_seats"] = wrong_all
        res["outputs"] = str(work) if keep else None
        if keep:
            (work / "result.json").write_text(json.dumps(res, indent=1))
        return res
    finally:
        if proc is not None and proc.poll() is None:
            stop_product(proc)
        stop_procs(load)
        if cams is not None:
            cams.close()
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------- the command line


class BadArgument(Exception):
    """A bad command line (one line, exit code 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # noqa: D401 - argparse's hook
        raise BadArgument(message)


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--size must be WxH, got {text!r}") from None
    if not (64 <= w <= 7680 and 64 <= h <= 4320):
        raise argparse.ArgumentTypeError(f"--size must be 64..7680 x 64..4320, got {text!r}")
    return w, h


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=1, help="tables (cameras) at once (1)")
    ap.add_argument("--deal", type=float, default=15.0,
                    help="seconds each deal lies on the table, its dealing included (15)")
    ap.add_argument("--clear", type=float, default=10.0,
                    help="seconds the table stays cleared after each deal (10)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per table (3)")
    ap.add_argument("--fps", type=float, default=15.0, help="camera frames per second (15)")
    ap.add_argument("--size", type=_size, default=(1920, 1080), help="frame size WxH "
                    "(1920x1080)")
    ap.add_argument("--seed", type=int, default=3_000_001,
                    help="first render seed (>= 1000000, the held-out range; 3000001)")
    ap.add_argument("--load", type=int, default=0,
                    help="busy CPU-bound processes of another program beside the product (0)")
    ap.add_argument("--spread", action="store_true",
                    help="offset table k's deals by k/K of a cycle (default: all at once)")
    ap.add_argument("--models", default=None, help="models folder (default: the product's)")
    ap.add_argument("--backend", default=None,
                    help="the tables' inference backend (the tables file's backend; default: "
                         "the product's)")
    ap.add_argument("--grace", type=float, default=8.0,
                    help="seconds the product is left after the last round's clear (8)")
    ap.add_argument("--start-timeout", type=float, default=300.0,
                    help="seconds the tables' workers may take to come up (300)")
    ap.add_argument("--warm-timeout", type=float, default=60.0,
                    help="seconds the tables may take, once up, to keep up with the empty "
                         "table before the clock starts anyway (60)")
    ap.add_argument("--video", action="store_true",
                    help="each table also writes its annotated video (default: events.jsonl "
                         "only, the tables file's video: false)")
    ap.add_argument("--product-root", default=None, metavar="DIR",
                    help="run the product from this checkout (another commit's git worktree: "
                         "before and after on the same cameras); default this repository")
    ap.add_argument("--keep", default=None, metavar="DIR",
                    help="keep the outputs (tables file, events, annotated videos, serve.log) "
                         "in DIR")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ap.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    return ap


def check_args(args) -> None:
    """Raise :class:`BadArgument` naming the first bad value."""
    if args.tables < 1:
        raise BadArgument(f"--tables must be >= 1, got {args.tables}")
    if args.rounds < 1:
        raise BadArgument(f"--rounds must be >= 1, got {args.rounds}")
    if not math.isfinite(args.deal) or args.deal < 2.0:
        raise BadArgument(f"--deal must be >= 2 seconds (a 1 s dealing, then the still "
                          f"table), got {args.deal:g}")
    if not math.isfinite(args.clear) or args.clear <= 0:
        raise BadArgument(f"--clear must be > 0 seconds, got {args.clear:g}")
    if not math.isfinite(args.fps) or not 1.0 <= args.fps <= 60.0:
        raise BadArgument(f"--fps must be 1..60, got {args.fps:g}")
    if args.seed < 1_000_000:
        raise BadArgument(f"--seed must be >= 1000000 (held out), got {args.seed}")
    if args.load < 0:
        raise BadArgument(f"--load must be >= 0, got {args.load}")
    if not math.isfinite(args.grace) or args.grace < 0:
        raise BadArgument(f"--grace must be >= 0 seconds, got {args.grace:g}")
    if not math.isfinite(args.start_timeout) or args.start_timeout <= 0:
        raise BadArgument(f"--start-timeout must be > 0 seconds, got {args.start_timeout:g}")
    if not math.isfinite(args.warm_timeout) or args.warm_timeout < 0:
        raise BadArgument(f"--warm-timeout must be >= 0 seconds, got {args.warm_timeout:g}")
    if args.keep and Path(args.keep).exists() and not Path(args.keep).is_dir():
        raise BadArgument(f"--keep: not a folder: {args.keep}")
    if args.product_root and not (Path(args.product_root) / "vision" / "cli.py").is_file():
        raise BadArgument(f"--product-root: not a checkout of this project: {args.product_root}")
    models = Path(args.models) if args.models else ROOT / "models"
    for name in ("tiles.onnx", "pips.onnx"):
        if not (models / name).is_file():
            raise BadArgument(f"--models: {name} not found in {models}")


def _line(row: dict, name: str) -> str:
    lat, fr = row["latency"], row["frames"]

    def s(v):
        return "-" if v is None else f"{v:.2f}"

    extra = [f"{row['events']} event(s), {row['settled_events']} settled"]
    if row["unmatched"]:
        extra.append(f"{row['unmatched']} event(s) matching no dealt round")
    if row["by_place"]:
        extra.append(f"{row['by_place']} matched only by where their tiles lie")
    if row.get("after_stop"):
        extra.append(f"{row['after_stop']} written at stop")
    if row.get("readings"):
        extra.append(f"{row['readings']['made']} still reading(s), "
                     f"{row['readings']['light']} light, "
                     f"{row['readings']['followed']} followed")
    return (f"{name}: rounds dealt {row['dealt']}, reported {row['reported']}, once "
            f"{row['once']} (missed {row['missed']}, more than once {row['more_than_once']}); "
            f"seats right {row['right']}, wrong {row['wrong']}, not settled "
            f"{row['not_settled']}; latency median {s(lat['median_s'])} p90 {s(lat['p90_s'])} "
            f"max {s(lat['max_s'])} s (from the complete table: median "
            f"{s(row['latency_full']['median_s'])} p90 {s(row['latency_full']['p90_s'])}); "
            f"frames sent {fr['sent']}, processed {fr['processed']}, "
            f"skipped {fr['skipped']}; CPU {row['cpu_s']:.1f} s"
            + f" [{'; '.join(extra)}]")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    try:
        args = build_parser().parse_args(argv)
        check_args(args)
    except BadArgument as exc:
        msg = " ".join(str(exc).split())
        print(f"{PROG}: error: {msg}", file=sys.stderr, flush=True)
        if as_json:
            print(json.dumps({"error": msg, "command": PROG, "exit_code": 2}), flush=True)
        return 2

    def say(line: str) -> None:
        if not args.no_progress:
            print(f"{PROG}: {line}", file=sys.stderr, flush=True)

    try:
        res = run_bench(args, say)
    except RuntimeError as exc:
        msg = " ".join(str(exc).split())
        print(f"{PROG}: error: {msg}", file=sys.stderr, flush=True)
        if args.json:
            print(json.dumps({"error": msg, "command": PROG, "exit_code": 1}), flush=True)
        return 1
    if args.json:
        print(json.dumps(res))
        return 0
    print_report(res)
    return 0


def print_report(res: dict) -> None:
    """The human-readable report of :func:`run_bench`'s result: a settings line, one line per
    table, the total line, the wrong seats."""
    st = res["settings"]
    print(f"{st['tables']} table(s) x {st['rounds']} round(s), deal {st['deal_s']:g} s + clear "
          f"{st['clear_s']:g} s, {st['fps']:g} fps {st['size'][0]}x{st['size'][1]}"
          f"{', spread' if st['spread'] else ''}"
          f"{', load ' + str(st['load']) if st['load'] else ''}; "
          f"code {res['code']}, clock {res['clock_start_utc']}, load average {res['load_avg_at_start']} -> "
          f"{res['load_avg_at_end']}, {res['cpus']} CPUs; product up in {res['startup_s']} s"
          f"{'' if res['warm'] else ' (not keeping up with the empty table: measured anyway)'}")
    for row in res["per_table"]:
        print(_line(row, f"table {row['table']}"))
    print(_line(res["total"], "total"))
    for w in res["wrong_seats"][:20]:
        print(f"  WRONG {w}")


if __name__ == "__main__":
    raise SystemExit(main())

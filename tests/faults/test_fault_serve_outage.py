"""Fault: the camera of a running dealer display goes away and comes back (issue 10, item 1).

The real ``paigow serve`` command runs in a child process on 127.0.0.1, reading a live MJPEG
stream from a local server (tests/faults/mjpeg_server.py) that plays a scripted table: rendered
deals (``vision.synth.render.render_table``, held-out seeds) held still long enough to settle, with
an empty table between them, over and over. The child is the CLI's own code path
(``vision.cli.main``) apart from the detectors: they answer from the renderer's ground truth
(``fakes.GroundTruthDetectors``, lossy mode for JPEG frames), so rounds settle whatever the
trained models' quality. The stream then goes down (connection refused) and comes back.

Checked: rounds settle before the outage and again after it; the display resumes by itself
(frames and fps advance again); ``/healthz`` answers 200 before, 200 within the grace, 503
(naming the state, the gap so far and since when) once the camera has been lost longer than
the grace, and 200 after; the page's state carries the outage (banner data) and the gap; the
gap's true length is logged once -- the time from the last frame the server sent before the
outage to the first it sent after it.

The slow test takes a 60 s outage with the default grace (10 s) and reconnection attempts at
most 1 s apart (``--reconnect-max 1``), so the logged gap is within about a second of the
camera's outage; the fast one a ~4 s outage with a grace of 1 s and the default backoff
(attempts 0.5, 1, 2, 4 s apart: the gap is the outage plus the wait for the next attempt).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
from helpers.children import CLI_WITH_FAKE_MODELS

from mjpeg_server import MjpegServer

httpx = pytest.importorskip("httpx")
synth = pytest.importorskip("vision.synth.render")

from fakes import GroundTruthDetectors, assert_valid_event, empty_table  # noqa: E402

from vision.io.live import ReconnectPolicy  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
SEEDS = (1_000_311, 1_000_312)
SIZE = (640, 360)
FPS = 10.0          # the camera's frame rate
N_EMPTY = 6         # empty-table frames before each deal (>= STABLE: a new round opens)
N_STILL = 12        # frames each deal is held still (STABLE + the decode budget + margin)
STABLE = 3          # --stable

CHILD = CLI_WITH_FAKE_MODELS


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """``{"frames": the stream's cycle, "fake": path of the pickled detectors}``."""
    d = tmp_path_factory.mktemp("table")
    scenes = [synth.render_table(s, size=SIZE) for s in SEEDS]
    empties = [empty_table(sc) for sc in scenes]
    frames = []
    for sc, em in zip(scenes, empties):
        frames += [em] * N_EMPTY + [sc.image] * N_STILL
    fake = d / "fake.pkl"
    with open(fake, "wb") as f:
        pickle.dump(GroundTruthDetectors(scenes, empties, lossy=True), f)
    return {"frames": frames, "fake": fake}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Display:
    """``paigow serve URL`` in a child process; its stdout (round events, one JSON line each)
    read by a thread, its stderr kept in a file."""

    def __init__(self, url: str, fake: Path, *options: str) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, PYTHONPATH=str(ROOT), YOLO_OFFLINE="1",
                   YOLO_AUTOINSTALL="false", YOLO_CONFIG_DIR=str(ROOT / ".yolo_config"))
        env.pop("PAIGOW_TOKEN", None)
        code = CHILD.format(tests=str(TESTS), fake=str(fake))
        self.err = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, "serve", url, "--port", str(self.port), "--json",
             "--stable", str(STABLE), "--table-id", "t-outage", *options],
            stdout=subprocess.PIPE, stderr=self.err, text=True, cwd=str(ROOT), env=env)
        self.events: list[tuple[float, dict]] = []   # (monotonic arrival, round event)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.client = httpx.Client(base_url=self.base, timeout=5.0)

    def _read(self) -> None:
        for line in self.proc.stdout:
            line = line.strip()
            if line.startswith("{"):
                self.events.append((time.monotonic(), json.loads(line)))

    def get(self, path: str):
        """``(status code, JSON body)``, or ``(None, None)`` when the server does not answer."""
        try:
            r = self.client.get(path)
        except httpx.HTTPError:
            return None, None
        return r.status_code, r.json()

    def settled_after(self, t: float) -> int:
        return sum(1 for at, ev in self.events if at > t and ev["settled"])

    def wait(self, cond, timeout: float, what: str, step: float = 0.2) -> None:
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end:
            assert self.proc.poll() is None, f"serve exited: {self.stderr()[-3000:]}"
            if cond():
                return
            time.sleep(step)
        raise AssertionError(f"timed out waiting for {what}; stderr: {self.stderr()[-3000:]}")

    def stop(self) -> int:
        """SIGTERM (what supervisors send), then the exit code."""
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.reader.join(10)
        return self.proc.returncode

    def stderr(self) -> str:
        self.err.seek(0)
        return self.err.read()


def _outage(table, seconds: float, options: tuple[str, ...], grace: float,
            rounds: int = 2) -> dict:
    """Run the display through one outage of ``seconds``, with ``rounds`` settled rounds before
    and after it; returns what was observed."""
    with MjpegServer(fps=FPS, frames=table["frames"]) as srv:
        disp = Display(srv.url, table["fake"], *options)
        try:
            # before: the display runs, rounds settle, healthy
            disp.wait(lambda: disp.get("/healthz")[0] == 200, 120, "the server")
            disp.wait(lambda: disp.settled_after(0) >= rounds, 120, "settled rounds")
            before = [disp.get("/healthz")]
            st_before = disp.get("/api/state")[1]
            # the camera goes away
            srv.down()
            t_down, wall_down = time.monotonic(), time.time()
            # (t0, t1, code, body, ts, state): /healthz asked at t0, answered by t1; /api/state
            # asked at ts (seconds after the server went down)
            during: list[tuple] = []
            while time.monotonic() - t_down < seconds:
                t0 = time.monotonic() - t_down
                code, body = disp.get("/healthz")
                t1 = ts = time.monotonic() - t_down
                state = disp.get("/api/state")[1]
                during.append((t0, t1, code, body, ts, state))
                time.sleep(0.25)
            frames_down = disp.get("/api/state")[1]["frames"]
            srv.up()
            t_up = time.monotonic()
            # after: the display resumes by itself, rounds settle again, healthy again
            disp.wait(lambda: (disp.get("/api/state")[1] or {}).get("frames", 0) > frames_down,
                      ReconnectPolicy().max_delay_s + 30, "frames after the outage")
            t_back = time.monotonic()
            disp.wait(lambda: disp.settled_after(t_back) >= rounds, 120,
                      "rounds after the outage")
            after = disp.get("/healthz")
            st_after = disp.get("/api/state")[1]
        finally:
            rc = disp.stop()
        sent = list(srv.sent_at)
    last_before = max(t for t, _ in sent if t < t_down)
    first_after = min(t for t, _ in sent if t > t_up)
    return {"before": before, "st_before": st_before, "during": during, "after": after,
            "st_after": st_after, "t_down": t_down, "wall_down": wall_down, "t_up": t_up,
            "t_back": t_back, "events": disp.events, "rc": rc, "err": disp.stderr(),
            "server_gap": first_after - last_before, "grace": grace, "seconds": seconds,
            "frames_down": frames_down, "rounds": rounds}


def _check(obs: dict, reconnect_max: float) -> float:
    """The assertions shared by both outages (``reconnect_max``: the most seconds between
    reconnection attempts in effect); returns the logged gap (s)."""
    grace = obs["grace"]
    err = obs["err"]
    # it ended when told to (how SIGTERM ends serve is issue 10 item 5's, not checked here)
    assert obs["rc"] is not None, err[-3000:]
    # before: healthy, the camera connected, rounds settled
    code, body = obs["before"][0]
    assert code == 200 and body["ok"] is True and body["state"] == "connected"
    assert body["status"] == "running" and body["grace_s"] == grace
    assert obs["st_before"]["feed"]["state"] == "connected"
    assert obs["st_before"]["feed"]["gaps"] == 0
    assert obs["st_before"]["round_count"] >= obs["rounds"]
    # during: 200 within the grace (the page already shows the outage), 503 after it
    # (the times: when each request was made and answered, so a slow answer cannot mislead)
    early = [d for d in obs["during"] if d[0] >= 1.0 and d[1] <= grace - 0.5]
    late = [d for d in obs["during"] if d[0] >= grace + 1.0]
    assert late, "the outage was not longer than the grace"
    for t0, t1, code, body, ts, state in early:
        assert code == 200 and body["state"] == "reconnecting", (t0, code, body)
        assert state["feed"]["state"] == "reconnecting"
        assert state["feed"]["current_gap_s"] >= ts - 0.3  # the banner's "lost for N s"
    for t0, t1, code, body, ts, state in late:
        assert code == 503, (t0, code, body)
        assert body["ok"] is False and body["state"] == "reconnecting"
        # the gap so far (from the last frame, which came just before the server went down)
        assert t0 - 0.3 <= body["lost_s"] <= t1 + 1.0, (t0, t1, body)
        since = datetime.fromisoformat(body["lost_since"].replace("Z", "+00:00")).timestamp()
        assert abs(since - obs["wall_down"]) <= 1.0, (body["lost_since"], obs["wall_down"])
        assert "camera lost for" in body["reason"] and body["feed"]["attempts"] >= 1
        assert state["feed"]["state"] == "reconnecting" and state["status"] == "running"
    # the picture stood still during the outage (no frame published)
    t_mid = [d[5]["frames"] for d in obs["during"] if d[4] >= 2.0]
    assert t_mid and min(t_mid) == max(t_mid) == obs["frames_down"]
    # after: resumed by itself, healthy, one gap of its true length, rounds settle again
    code, body = obs["after"]
    assert code == 200 and body["ok"] is True and body["state"] == "connected", body
    st = obs["st_after"]
    assert st["frames"] > obs["frames_down"] and st["fps"] > 0 and st["status"] == "running"
    assert st["feed"]["state"] == "connected" and st["feed"]["gaps"] == 1
    logged = [float(x) for x in re.findall(r"frames back after a gap of ([0-9.]+) s", err)]
    assert len(logged) == 1, err[-3000:]
    gap = logged[0]
    assert st["feed"]["last_gap_s"] == pytest.approx(gap, abs=0.01)
    # the true length: the server's own clock, last frame sent before -> first after
    assert gap == pytest.approx(obs["server_gap"], abs=1.0), (gap, obs["server_gap"])
    # at least the outage (the camera's own: down -> up), at most the outage plus one
    # reconnection delay and the stream's start
    outage = obs["t_up"] - obs["t_down"]
    assert outage - 0.5 <= gap <= outage + reconnect_max + 2.0, (gap, outage)
    before = [ev for at, ev in obs["events"] if at < obs["t_down"] and ev["settled"]]
    after = [ev for at, ev in obs["events"] if at > obs["t_back"] and ev["settled"]]
    assert len(before) >= obs["rounds"] and len(after) >= obs["rounds"]
    ids = [ev["round_id"] for _, ev in obs["events"]]
    assert len(ids) == len(set(ids))
    for _, ev in obs["events"]:
        assert_valid_event(ev)
        assert ev["table_id"] == "t-outage"
    return gap


@pytest.mark.faults
@pytest.mark.timeout(180)
def test_serve_short_outage_health_and_resume(table):
    """A ~4 s outage with a grace of 1 s: the whole cycle in seconds."""
    obs = _outage(table, 4.0, ("--health-grace", "1"), 1.0, rounds=1)
    gap = _check(obs, ReconnectPolicy().max_delay_s)
    print(f"outage {obs['t_up'] - obs['t_down']:.2f} s, logged gap {gap:.2f} s, "
          f"server-side gap {obs['server_gap']:.2f} s")


@pytest.mark.faults
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_serve_survives_a_60s_outage(table):
    """The acceptance line of issue 10: a 60 s outage under ``serve`` with the default grace
    (10 s), reconnection attempts at most 1 s apart (``--reconnect-max 1``): the display is
    back, and the logged gap within about a second of the camera's own outage."""
    obs = _outage(table, 60.0, ("--reconnect-max", "1"), 10.0)
    gap = _check(obs, 1.0)
    print(f"outage {obs['t_up'] - obs['t_down']:.2f} s, logged gap {gap:.2f} s, "
          f"server-side gap {obs['server_gap']:.2f} s")

"""Fault: SIGTERM (what systemd and docker send) lost the whole annotated video ("moov atom not
found"): only Ctrl-C closed it (issue 10, item 5). Now SIGTERM stops ``paigow run`` like the end
of the source: the open round is flushed, the video closed and playable, the store consistent,
exit code 143. The real CLI runs in a child process (only the model loader is replaced by
ground-truth detectors) and is sent SIGTERM at several moments."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import cv2
import pytest
from faultkit import N_STABLE, cli_child, make_video
from mjpeg_server import _free_port as free_port

from vision.audit import AuditStore
from vision.cli import main

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return make_video(tmp_path_factory.mktemp("sigterm"), delay=0.05)


def _frames_readable(path) -> int:
    cap = cv2.VideoCapture(str(path))
    assert cap.isOpened(), f"{path} does not open"
    n = 0
    while cap.read()[0]:
        n += 1
    cap.release()
    return n


@pytest.mark.parametrize("moment", ["first frames", "after 1 round", "after 3 rounds"])
def test_sigterm_closes_the_video_and_leaves_the_store_consistent(video, tmp_path, moment,
                                                                  capsys):
    db, out = tmp_path / "audit.db", tmp_path / "out"
    errf = tempfile.TemporaryFile("w+")
    proc = cli_child(video["fake"], ["run", video["path"], "--audit", db, "--out", out,
                                     "--json", "--stable", N_STABLE, "--no-progress"],
                     stdout=subprocess.PIPE, stderr=errf, text=True)
    printed = []
    try:
        if moment == "first frames":  # the video is being written, no round yet
            mp4 = out / "annotated.mp4"
            t0 = time.monotonic()
            while not (mp4.is_file() and mp4.stat().st_size > 0):
                assert proc.poll() is None and time.monotonic() - t0 < 120
                time.sleep(0.05)
        else:
            want = int(moment.split()[1])
            for line in proc.stdout:
                printed.append(json.loads(line))
                if len(printed) >= want:
                    break
        os.kill(proc.pid, signal.SIGTERM)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    errf.seek(0)
    err = errf.read()
    printed += [json.loads(x) for x in rest.splitlines() if x.strip()]
    assert proc.returncode == 143, err[-2000:]
    assert "stopped by SIGTERM" in err
    # the annotated video is closed: it opens and has frames
    assert _frames_readable(out / "annotated.mp4") > 0
    # the store verifies and holds exactly what was reported (the open round flushed too)
    assert main(["audit", "verify", str(db)]) == 0
    assert "ok:" in capsys.readouterr().out
    with AuditStore(db, create=False) as st:
        stored = [r.payload for r in st.rounds()]
    assert stored == printed
    lines = (out / "events.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == printed
    if moment != "first frames":
        assert sum(e["settled"] for e in printed) >= int(moment.split()[1])


def test_sigterm_during_a_stream_outage(video, tmp_path):
    """A live MJPEG stream goes down; the process waits for it (it never gives up) and is then
    sent SIGTERM: it stops promptly, with the video closed and playable."""
    from mjpeg_server import MjpegServer

    out, db = tmp_path / "out", tmp_path / "audit.db"
    errf = tempfile.TemporaryFile("w+")
    with MjpegServer(fps=20) as srv:
        proc = cli_child(video["fake"], ["run", srv.url, "--out", out, "--audit", db,
                                         "--no-progress"],
                         stdout=subprocess.PIPE, stderr=errf, text=True)
        try:
            mp4 = out / "annotated.mp4"
            t0 = time.monotonic()
            while not (mp4.is_file() and mp4.stat().st_size > 0):
                assert proc.poll() is None and time.monotonic() - t0 < 120
                time.sleep(0.05)
            time.sleep(0.5)
            srv.down()
            time.sleep(1.5)
            assert proc.poll() is None
            os.kill(proc.pid, signal.SIGTERM)
            proc.communicate(timeout=60)  # it stops (else it would wait for the stream forever)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    errf.seek(0)
    err = errf.read()
    assert proc.returncode == 143, err[-2000:]
    assert _frames_readable(out / "annotated.mp4") > 0
    assert main(["audit", "verify", str(db)]) == 0


def _sigterm_when(proc, ready, what: str) -> None:
    """Send ``proc`` SIGTERM once ``ready()`` is true (within 180 s, the child still
    running) and wait for it to exit (killed after 120 s)."""
    try:
        t0 = time.monotonic()
        while not ready():
            assert proc.poll() is None and time.monotonic() - t0 < 180, what
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigterm_stops_serve_like_ctrl_c(video, tmp_path, capsys):
    """issue 42: ``paigow serve V`` under SIGTERM stored the open round nowhere and left the
    annotated video without its moov atom (uvicorn raises the signal again once it has shut
    down, and the default handler killed the process before the feed was stopped). Now: exit
    143 after the feed stopped -- the video closed and playable, the store verifying and
    holding every round written to events.jsonl."""
    db, out = tmp_path / "audit.db", tmp_path / "out"
    errf = tempfile.TemporaryFile("w+")
    proc = cli_child(video["fake"], ["serve", video["path"], "--loop", "--audit", db,
                                     "--out", out, "--stable", N_STABLE,
                                     "--port", free_port()],
                     stdout=subprocess.DEVNULL, stderr=errf, text=True)
    events = out / "events.jsonl"
    _sigterm_when(proc, lambda: events.is_file() and events.read_text().count("\n") >= 1,
                  "no round")
    errf.seek(0)
    err = errf.read()
    assert proc.returncode == 143, err[-2000:]
    assert _frames_readable(out / "annotated.mp4") > 0
    assert main(["audit", "verify", str(db)]) == 0
    assert "ok:" in capsys.readouterr().out
    with AuditStore(db, create=False) as st:
        stored = [r.payload for r in st.rounds()]
    written = [json.loads(x) for x in events.read_text().splitlines()]
    assert stored == written and len(written) >= 1


PIT_CHILD = """
import pickle, sys
sys.path.insert(0, {tests!r})
import fakes  # noqa: F401  (the pickled GroundTruthDetectors)
with open({fake!r}, "rb") as f:
    fake = pickle.load(f)
import vision.commands.serve as serve
from vision.pit.supervisor import Pit
real = serve._serve_tables
serve._serve_tables = lambda args, token, pit_factory=None: real(
    args, token, pit_factory=lambda specs: Pit(specs, detectors={{s.table_id: fake for s in specs}}))
from vision.cli import main
sys.exit(main({argv!r}))
"""


def test_sigterm_stops_the_pit_and_its_workers(video, tmp_path):
    """issue 42: SIGTERM to ``paigow serve --tables`` left the table workers (and the detector
    process) running after the server was gone. Now the pit is stopped first: exit 143 and no
    worker left."""
    import urllib.request

    from faultkit import ROOT, TESTS

    port = free_port()
    tables = tmp_path / "tables.yaml"
    tables.write_text(f"tables:\n  - id: t1\n    source: {video['path']}\n    loop: true\n"
                      f"    out: {tmp_path / 'out'}\n    stable: {N_STABLE}\n")
    code = PIT_CHILD.format(tests=str(TESTS), fake=str(video["fake"]),
                            argv=["serve", "--tables", str(tables), "--port", str(port)])
    errf = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=str(ROOT),
                            env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            stdout=subprocess.DEVNULL, stderr=errf)
    pid = []

    def running() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/pit", timeout=2) as r:
                body = json.loads(r.read())
        except OSError:
            return False
        w = (body.get("tables") or [{}])[0].get("worker") or {}
        if w.get("state") == "running" and w.get("pid"):
            pid.append(int(w["pid"]))
        return bool(pid)

    _sigterm_when(proc, running, "no worker")
    pid = pid[0]
    errf.seek(0)
    assert proc.returncode == 143, errf.read()[-2000:]
    gone = False
    for _ in range(100):  # reaped by the pit's stop; give the kernel a moment
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            gone = True
            break
        time.sleep(0.05)
    assert gone, f"worker {pid} still runs"

"""Faults: camera credentials and a camera that is down when ``serve`` starts (issue 23).

A password (and a query token) in a camera URL appears nowhere: not in ``/api/state``,
``/api/events``, ``/healthz``, the page, stdout, stderr, the events file, the summary or the
audit store's payloads -- the source is shown as ``http://admin:***@.../stream.mjpg?token=***``
and stored with a stable ``source_id``. The real ``paigow serve`` runs in a child process
(tests/faults/test_fault_serve_outage.py's scripted MJPEG table, ground-truth detectors); the
camera is down when serve starts: serve starts anyway, ``/healthz`` answers 503 with the
state, and the rounds come once the camera does.
"""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from helpers.children import CLI_WITH_FAKE_MODELS

from mjpeg_server import MjpegServer

httpx = pytest.importorskip("httpx")
synth = pytest.importorskip("vision.synth.render")

from fakes import GroundTruthDetectors  # noqa: E402

from vision.sources import (expand_credentials, redact_text, redact_url,  # noqa: E402
                            source_id, with_password)

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
PASSWORD = "Sw0rdfish-7Q"
TOKEN = "Tk9-zzQ4"
SEED = 1_000_311  # a deal that settles without a layout (test_fault_serve_outage.py)
SIZE = (640, 360)

CHILD = CLI_WITH_FAKE_MODELS


def test_redact_url_masks_userinfo_and_query_secrets():
    assert redact_url("rtsp://admin:secret@cam7/live?ch=1&token=abc") == \
        "rtsp://admin:***@cam7/live?ch=1&token=***"
    assert redact_url("http://abcdef@cam/s") == "http://***@cam/s"
    assert redact_url("rtsp://cam/x?Password=zz&apikey=q") == "rtsp://cam/x?Password=***&apikey=***"
    assert redact_url("rtsp://admin:***@cam7/live") == "rtsp://admin:***@cam7/live"  # idempotent
    for plain in ("0", "/videos/t.mp4", "rtsp://cam7/live?ch=2"):
        assert redact_url(plain) == plain
    assert redact_text("cannot open stream rtsp://a:secret@c/x after 6 attempt(s)") == \
        "cannot open stream rtsp://a:***@c/x after 6 attempt(s)"


def test_credentials_from_the_environment_and_a_password_file(tmp_path):
    assert expand_credentials("rtsp://admin:${CAM_PW}@cam/x", {"CAM_PW": "p@ss"}) == \
        "rtsp://admin:p%40ss@cam/x"
    from scoring.errors import InputError

    with pytest.raises(InputError, match="CAM_PW is not set") as e:
        expand_credentials("rtsp://admin:${CAM_PW}@cam/x", {})
    assert "p@ss" not in str(e.value)
    assert with_password("rtsp://admin@cam/x", "a:b") == "rtsp://admin:a%3Ab@cam/x"
    # the tables file: password_file next to it, the URL opened with it, shown without it
    (tmp_path / "cam.txt").write_text(PASSWORD + "\n")
    (tmp_path / "tables.yaml").write_text(
        "tables:\n  - id: t1\n    source: rtsp://admin@cam7/live\n    password_file: cam.txt\n")
    from vision.pit.tables import load_tables

    (spec,) = load_tables(tmp_path / "tables.yaml")
    assert spec.source == f"rtsp://admin:{PASSWORD}@cam7/live"
    assert PASSWORD not in repr(spec)


def test_source_id_is_the_file_not_the_typed_path(tmp_path, monkeypatch):
    f = tmp_path / "v.mp4"
    f.write_bytes(b"x" * 10)
    (tmp_path / "link.mp4").symlink_to(f)
    monkeypatch.chdir(tmp_path)
    ids = {source_id(p) for p in ("v.mp4", "./v.mp4", str(f), "link.mp4")}
    assert len(ids) == 1 and next(iter(ids)).startswith("file-")
    assert source_id("rtsp://a:one@c/x") == source_id("rtsp://a:two@c/x")


def _table(d: Path):
    from vision.geometry import expand_polygon
    import cv2
    import numpy as np

    sc = synth.render_table(SEED, size=SIZE)
    mask = np.zeros(sc.image.shape[:2], np.uint8)
    for t in sc.tiles:
        cv2.fillConvexPoly(mask, np.round(expand_polygon(t.polygon, 0.25)).astype(np.int32), 255)
    empty = cv2.inpaint(sc.image, mask, 5, cv2.INPAINT_TELEA)
    fake = d / "fake.pkl"
    with open(fake, "wb") as f:
        pickle.dump(GroundTruthDetectors([sc], [empty], lossy=True), f)
    return [empty] * 6 + [sc.image] * 14, fake


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_no_password_anywhere_and_serve_waits_for_a_camera_down_at_start(tmp_path):
    frames, fake = _table(tmp_path)
    srv = MjpegServer(fps=10.0, frames=frames)  # not up yet: the camera is down at start
    url = srv.url.replace("http://", f"http://admin:{PASSWORD}@") + f"?token={TOKEN}"
    port = _free_port()
    out, db = tmp_path / "out", tmp_path / "audit.db"
    env = dict(os.environ, PYTHONPATH=str(ROOT), YOLO_OFFLINE="1", YOLO_AUTOINSTALL="false",
               YOLO_CONFIG_DIR=str(ROOT / ".yolo_config"))
    err = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(tests=str(TESTS), fake=str(fake)), "serve", url,
         "--port", str(port), "--json", "--stable", "3", "--table-id", "t-cred",
         "--audit", str(db), "--out", str(out), "--health-grace", "1", "--log-level", "info"],
        stdout=subprocess.PIPE, stderr=err, text=True, cwd=str(ROOT), env=env)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5.0)
    seen: dict[str, str] = {}

    def get(path):
        try:
            r = client.get(path)
        except httpx.HTTPError:
            return None, None
        seen[path] = r.text
        return r.status_code, r.json() if "json" in r.headers.get("content-type", "") else None

    def wait(cond, timeout, what):
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end:
            err.seek(0)
            assert proc.poll() is None, f"serve exited: {err.read()[-3000:]}"
            if cond():
                return
            time.sleep(0.25)
        err.seek(0)
        raise AssertionError(f"timed out waiting for {what}: {err.read()[-3000:]}")

    try:
        # serve is up although the camera is down; /healthz 503 with the state
        wait(lambda: get("/healthz")[0] == 503, 120, "/healthz 503 while the camera is down")
        code, body = get("/healthz")
        assert code == 503 and body["ok"] is False and body["state"] == "reconnecting", body
        time.sleep(2.5)
        assert proc.poll() is None  # still waiting, not given up
        srv.up()
        wait(lambda: any(x.startswith("{") and json.loads(x).get("settled") for x in lines),
             180, "a settled round")
        code, body = get("/healthz")
        assert code == 200, body
        st = get("/api/state")[1]
        assert st["source"] == srv.url.replace("http://", "http://admin:***@") + "?token=***"
        get("/")
        r = client.get("/api/events?replay=5&limit=1")
        seen["/api/events"] = r.text
        assert "event: round" in r.text
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        srv.close()
    err.seek(0)
    texts = {"stderr": err.read(), "stdout": "".join(lines), **seen}
    for p in out.rglob("*"):
        if p.is_file():
            texts[str(p)] = p.read_bytes().decode("utf-8", "replace")
    texts["audit.db"] = db.read_bytes().decode("utf-8", "replace")
    with sqlite3.connect(db) as con:
        payloads = [json.loads(r[0]) for r in con.execute("SELECT payload FROM paigow_rounds")]
    assert payloads, texts["stderr"][-2000:]
    for ev in payloads:
        assert ev["source"].startswith("http://admin:***@127.0.0.1:")
        assert ev["source_id"].startswith("live-")
    for where, text in texts.items():
        assert PASSWORD not in text, f"the password is in {where}"
        assert TOKEN not in text, f"the query token is in {where}"
    assert "admin:***@" in texts["stdout"]


def test_pit_refuses_a_missing_file_source_naming_the_table(tmp_path, capsys):
    from vision.cli import main

    (tmp_path / "tables.yaml").write_text(
        "tables:\n  - id: t-ok\n    source: rtsp://cam/live\n"
        "  - id: t-gone\n    source: gone.mp4\n")
    rc = main(["serve", "--tables", str(tmp_path / "tables.yaml"), "--port", "0"])
    err = capsys.readouterr().err
    assert rc == 2 and "table 't-gone': source not found" in err, err


def test_pit_healthz_is_503_for_a_table_whose_worker_keeps_dying(tmp_path):
    from fastapi.testclient import TestClient

    from vision.pit import Pit, load_tables
    from vision.pit.supervisor import FAILED_AFTER
    from vision.web.pit import create_pit_app

    (tmp_path / "tables.yaml").write_text(
        "tables:\n  - id: t1\n    source: rtsp://cam/a\n  - id: t2\n    source: rtsp://cam/b\n")
    pit = Pit(load_tables(tmp_path / "tables.yaml"))  # not started: book-keeping only
    c = TestClient(create_pit_app(pit))
    assert c.get("/healthz").status_code == 200
    w = pit.workers["t2"]
    w.state, w.failures, w.restarts = "restarting", FAILED_AFTER, FAILED_AFTER
    w.last_exit = {"code": 1, "error": "InputError: cannot open stream rtsp://cam/b"}
    r = c.get("/healthz")
    assert r.status_code == 503
    body = r.json()
    assert body["ok"] is False and body["failed"] == ["t2"] and body["tables"]["t2"] == "failed"
    assert "restarted" in body["errors"]["t2"]


def test_run_on_a_dead_camera_names_it_without_its_password(capsys):
    from vision.cli import main

    port = _free_port()
    rc = main(["run", f"http://admin:{PASSWORD}@127.0.0.1:{port}/x.mjpg?token={TOKEN}",
               "--json", "--no-progress", "--reconnect-max", "0.1"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert f"cannot open stream http://admin:***@127.0.0.1:{port}/x.mjpg?token=***" in err
    assert PASSWORD not in out + err and TOKEN not in out + err

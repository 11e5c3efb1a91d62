"""Fault: a pit table's camera is down when the pit starts (issue 23, item 4). Its worker
starts anyway and waits for the camera (retried forever, the same backoff as a
reconnection) instead of dying and being restarted with ``/healthz`` 200; the worker reports
the camera's state, so the table's ``/healthz`` answers 503 with ``reconnecting``."""

from __future__ import annotations

import socket
import time

import pytest
from fakes import GroundTruthDetectors

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.timeout(180)]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_pit_worker_waits_for_a_camera_down_at_start(tmp_path):
    from fastapi.testclient import TestClient

    from vision.pit import Pit, load_tables
    from vision.web.pit import create_pit_app

    url = f"http://admin:Pw-77x@127.0.0.1:{_closed_port()}/stream.mjpg"
    (tmp_path / "tables.yaml").write_text(f"tables:\n  - id: t1\n    source: {url}\n")
    specs = load_tables(tmp_path / "tables.yaml")
    fake = GroundTruthDetectors([], [], lossy=True)  # never asked: no frame comes
    with Pit(specs, detectors={"t1": fake}, restart_delay=(0.2, 1.0)) as pit:
        c = TestClient(create_pit_app(pit))
        t_end = time.monotonic() + 120
        body = None
        while time.monotonic() < t_end:
            r = c.get("/tables/t1/healthz")
            body = r.json()
            if r.status_code == 503 and body.get("state") == "reconnecting":
                break
            time.sleep(0.5)
        assert body and body["state"] == "reconnecting", body
        assert body["feed"]["attempts"] >= 1
        w = pit.state()["tables"][0]["worker"]
        assert w["state"] == "running" and w["restarts"] == 0, w  # waiting, not dying
        assert "Pw-77x" not in c.get("/api/pit").text + c.get("/tables/t1/api/state").text

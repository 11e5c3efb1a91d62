"""Pictures only while someone looks (issue 45: a table nobody watches costs no drawing or
JPEG encoding): the pit's worker sink, the supervisor's "pictures on" / "pictures off", and
the consumers that ask for them (vision/pit/worker.py, vision/pit/supervisor.py,
vision/web/hub.py, vision/web/app.py)."""

from __future__ import annotations

import types

import numpy as np

from vision.pit.worker import _PipeSink


class _Conn:
    def __init__(self) -> None:
        self.sent: list = []

    def send(self, msg) -> None:
        self.sent.append(msg)


def _frame(k: int):
    return types.SimpleNamespace(index=k, image=np.zeros((72, 128, 3), np.uint8))


def test_the_worker_draws_and_sends_no_picture_while_pictures_are_off():
    conn = _Conn()
    sink = _PipeSink(conn, "pa", max_picture_fps=1000.0)
    sink.pictures = False
    assert sink.wants_picture() is False  # the session then draws nothing
    sink.frame(None, _frame(1), types.SimpleNamespace())
    sink.pictures = True
    assert sink.wants_picture() is True
    sink.frame(np.zeros((72, 128, 3), np.uint8), _frame(2), types.SimpleNamespace())
    (k1, b1), (k2, b2) = conn.sent
    assert (k1, b1["frame_index"], b1["jpeg"]) == ("frame", 1, None)
    assert (k2, b2["frame_index"]) == ("frame", 2) and b2["jpeg"][:2] == b"\xff\xd8"


def test_the_supervisor_turns_a_tables_pictures_on_while_looked_at_and_off_after(tmp_path):
    from vision.pit import Pit, TableSpec
    from vision.web.hub import PICTURE_DEMAND_S

    pit = Pit([TableSpec("t1", str(tmp_path / "none.mp4"), {})])
    control = _Conn()
    pit.workers["t1"].control = control
    feed = pit.feeds["t1"]
    assert feed.pictures_on_demand and not feed.pictures_wanted()
    pit.sync_pictures("t1")  # the monitor: nobody looks
    assert control.sent == ["pictures off"]
    assert feed.want_pictures() is False  # a first look: on at once, not at the next tick
    assert control.sent == ["pictures off", "pictures on"] and feed.pictures_wanted()
    assert feed.want_pictures() is True  # looked at already
    pit.sync_pictures("t1")
    assert control.sent == ["pictures off", "pictures on"]  # nothing new to say
    feed._wanted_until -= PICTURE_DEMAND_S + 1  # nobody looked for longer than that
    pit.sync_pictures("t1")
    assert control.sent == ["pictures off", "pictures on", "pictures off"]


def test_a_snapshot_waits_for_a_fresh_picture_where_pictures_come_on_demand():
    """The table's pictures were off: the snapshot asks for them and returns the new one, not
    the stale picture of the last look."""
    import threading
    import time

    from fastapi.testclient import TestClient

    from vision.web.app import create_app
    from vision.web.hub import LiveFeed

    class OnDemand(LiveFeed):
        pictures_on_demand = True

        def _on_demand(self) -> None:
            def later():
                time.sleep(0.2)
                self.publish_frame(b"\xff\xd8fresh", frame_index=2)
            threading.Thread(target=later, daemon=True).start()

    feed = OnDemand(table_id="t1")
    feed.publish_frame(b"\xff\xd8stale", frame_index=1)
    with TestClient(create_app(feed)) as c:
        r = c.get("/snapshot.jpg")
    assert r.status_code == 200 and r.content == b"\xff\xd8fresh"

"""The parts :class:`vision.web.hub.LiveFeed` is composed of (issue 44 item 5): the rounds
shown (a manual record replaces its round), the subscribers, the live table's dealing streaks
and the JPEG encoder, each on its own, and the feed's consumer API over them."""

from __future__ import annotations

import numpy as np

from vision.io.images import encode_jpeg
from vision.web import hub
from vision.web.dealing import LiveTable
from vision.web.pubsub import RoundHistory, Subscribers


def test_a_manual_record_takes_its_rounds_place_once():
    h = RoundHistory(keep=3)
    for rid in ("r1", "r2"):
        h.add({"table_id": "t", "round_id": rid})
    h.add({"table_id": "other", "round_id": "r1"})  # another table's r1: a round of its own
    h.add({"table_id": "t", "round_id": "r1", "kind": "manual"})
    assert [(e["table_id"], e["round_id"]) for e in h] == \
        [("t", "r1"), ("other", "r1"), ("t", "r2")]
    assert h.count == 3 and h.last()["kind"] == "manual"


def test_subscribers_deliver_and_close():
    subs = Subscribers()
    a, b = subs.subscribe(), subs.subscribe(maxsize=1)
    Subscribers.send({"round_id": "r1"}, subs.members())
    Subscribers.send({"round_id": "r2"}, subs.members())
    assert [a.get(0)["round_id"], a.get(0)["round_id"]] == ["r1", "r2"]
    assert b.get(0)["round_id"] == "r2" and b.dropped == 1
    a.close()
    assert len(subs) == 1
    subs.close_all()
    assert len(subs) == 0 and b.closed and b.get(None) is None  # no wait once closed


def test_a_position_is_dealt_until_its_tiles_stay_and_its_alert_waits():
    t = LiveTable(dealing_frames=2)
    alert = [{"kind": "count", "position": "1", "detail": "2 tiles"}]
    t.see({"1": {"tiles": ["1-2", "3-4"], "detail": "2 tiles"}}, alert, False, None)
    assert t.positions["1"]["status"] == "dealing" and t.alerts == []
    t.see({"1": {"tiles": ["1-2", "3-4"], "detail": "2 tiles"}}, alert, False, None)
    assert t.positions["1"].get("status") is None and t.positions["1"]["say"]
    assert [a["position"] for a in t.alerts] == ["1"] and t.alerts[0]["say"]


def test_the_feed_keeps_its_consumer_api():
    assert hub.encode_jpeg is encode_jpeg
    jpg = encode_jpeg(np.zeros((10, 40, 3), np.uint8), max_width=20)
    import cv2

    assert cv2.imdecode(np.frombuffer(jpg, np.uint8), cv2.IMREAD_COLOR).shape == (5, 20, 3)
    f = hub.LiveFeed(table_id="t", dealing_frames=4, audit=None)
    assert f.dealing_frames == 4 and f.audit is None
    version, picture = f.latest_frame()
    f.publish_frame(jpg, frame_index=7)
    assert f.wait_frame(version, timeout=5)[1] == jpg and f.state()["frame_index"] == 7
    f.stop()
    assert f.subscribe().closed and f.subscriber_count == 0  # after stop: ends at once

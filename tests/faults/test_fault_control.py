"""Faults: hostile control requests and corrections users can trust (issue 23 item 7, issue 22
item 5).

* Bodies are capped before they are read (413); request models are validated by pydantic
  (422, never 500: ``tile`` 1e999999999 / -Infinity, ``entries`` not a list, 200k-deep JSON);
  ``by`` / ``note`` are bounded strings; a second identical acknowledgement is refused (409).
* A manual face is checked against the set: a civil face already shown twice, or a military
  face shown once, is refused with the reason (400); the picker offers only the faces still
  possible for the tile; a wrong manual entry is corrected by a later correction record that
  supersedes it (both in the chain; the report shows the final one; ``audit verify`` passes).
* Under ``serve --tables`` the table's display acknowledges and enters tiles into the tables
  file's audit store (it answered 409 "no audit store").
"""

from __future__ import annotations


import pytest
from fakes import FakeFeed, event_from_deal

from vision.audit import AuditStore, verify
from vision.audit.report import shift_report

TOKEN = "tok-23"
H = {"X-Token": TOKEN}
#: the dealer's 4-5 (military, once in a set) goes unread; seat 2 shows two 3-3 (civil)
DEAL = {"dealer": ["6-6", "1-3", "4-5", "2-2"], "1": ["1-1", "5-6", "3-4", "2-6"],
        "2": ["1-2", "2-4", "3-3", "3-3"], "3": ["4-4", "1-6", "2-3", "3-6"]}


def _unread_round(table="t1", rid="r000001"):
    """The round with the dealer's 4-5 not read (nothing settled), as the pipeline emits it."""
    ev = event_from_deal(DEAL, rid, table_id=table)
    k = next(n for n, t in enumerate(ev["tiles"]) if t["position"] == "dealer"
             and t["face"] == "4-5")
    ev["tiles"][k].update(face=None, state="unknown", confidence=0.2)
    why = "1 tile(s) unknown"
    ev.update(settled=False, reason=f"banker dealer not settled ({why})")
    del ev["bank"]
    for pos, p in ev["positions"].items():
        p.update(result="not_settled", net=None, commission=None,
                 reason=why if pos == "dealer" else ev["reason"])
    ev["positions"]["dealer"].update(high=None, low=None, high_hand=None, low_hand=None,
                                     house_way=None, is_house_way=None)
    ev["positions"]["dealer"]["tiles"] = ["6-6", "1-3", None, "2-2"]
    ev["alerts"] = [{"kind": "unknown_tile", "position": "dealer", "detail": why}]
    return ev, k


@pytest.fixture()
def app(tmp_path):
    from fastapi.testclient import TestClient

    from vision.web.app import create_app

    db = tmp_path / "audit.db"
    ev, k = _unread_round()
    with AuditStore(db) as st:
        st.append(ev)
    feed = FakeFeed(table_id="t1", audit=str(db))
    feed.publish_event(ev)
    return TestClient(create_app(feed, token=TOKEN), raise_server_exceptions=False), db, k, feed


@pytest.mark.faults
def test_bodies_are_capped_and_validated(app):
    c, db, k, _ = app
    # a big body: refused before it is read
    r = c.post("/api/control/ack", content=b"x" * (1 << 20), headers=H)
    assert r.status_code == 413
    bad = [b'{"round_id": "r000001", "tile": 1e999999999, "face": "3-3"}',
           b'{"round_id": "r000001", "tile": -Infinity, "face": "3-3"}',
           b'{"round_id": "r000001", "entries": "3-3"}',
           b'{"round_id": "r000001", "entries": [{"tile": "x", "face": "3-3"}]}',
           b"[" * 5000 + b"]" * 5000,
           b'{"round_id": "r000001", "tile": 1, "face": "3-3", "by": "' + b"b" * 500 + b'"}',
           b'{"round_id": ["r000001"], "tile": 1, "face": "3-3"}',
           b'{"round_id": "r000001", "tile": true, "face": "3-3"}',
           b'{"round_id": "r000001", "tile": 1, "face": "9-9"}',
           b"not json"]
    for body in bad:
        r = c.post("/api/control/manual", content=body, headers=H)
        assert r.status_code == 422, (body[:60], r.status_code, r.text[:200])
    r = c.post("/api/control/manual", content=b"{" * 200_000, headers=H)
    assert r.status_code == 413
    for body in ({"round_id": "r000001", "kind": "unknown_tile", "position": "dealer",
                  "note": "n" * 501},
                 {"round_id": "r000001", "kind": 7, "position": "dealer"},
                 {"round_id": "r000001", "kind": "unknown_tile", "by": {"a": 1}}):
        assert c.post("/api/control/ack", json=body, headers=H).status_code == 422
    # nothing of it reached the store
    with AuditStore(db, create=False) as st:
        assert len(list(st.rounds())) == 1


@pytest.mark.faults
def test_a_second_identical_ack_is_refused(app):
    c, db, _, _ = app
    body = {"round_id": "r000001", "kind": "unknown_tile", "position": "dealer", "by": "s1"}
    assert c.post("/api/control/ack", json=body, headers=H).status_code == 200
    r = c.post("/api/control/ack", json=body, headers=H)
    assert r.status_code == 409 and "already acknowledged" in r.json()["error"]
    with AuditStore(db, create=False) as st:
        assert sum(x.payload.get("kind") == "ack" for x in st.rounds()) == 1
    assert verify(db).ok


@pytest.mark.faults
def test_manual_faces_are_checked_against_the_set_and_corrected(app):
    c, db, k, feed = app
    # the picker offers only the faces still possible: no third 3-3, no second 1-2
    faces = c.get("/api/state").json()["manual_faces"][str(k)]
    assert "3-3" not in faces and "1-2" not in faces and "6-6" in faces and "4-5" in faces
    # 21 faces less 3-3 (civil, shown twice) and the six military faces shown once
    assert len(faces) == 21 - 1 - 6
    # a third 3-3 (civil, shown twice) and a second 1-2 (military) are refused with the reason
    r = c.post("/api/control/manual", json={"round_id": "r000001", "tile": k, "face": "3-3"},
               headers=H)
    assert r.status_code == 400 and "3-3 would be on the table 3 times" in r.json()["error"]
    assert "twice" in r.json()["error"]
    r = c.post("/api/control/manual", json={"round_id": "r000001", "tile": k, "face": "1-2"},
               headers=H)
    assert r.status_code == 400 and "military tile 1-2 once" in r.json()["error"]
    # a wrong face that the set allows (5-5) is entered ...
    r = c.post("/api/control/manual", json={"round_id": "r000001", "tile": k, "face": "5-5",
                                            "by": "sup-1"}, headers=H)
    assert r.status_code == 200, r.text
    first = r.json()["record"]
    # ... entering it again is refused; a correction supersedes it
    r = c.post("/api/control/manual", json={"round_id": "r000001", "tile": k, "face": "4-5"},
               headers=H)
    assert r.status_code == 400 and "correction" in r.json()["error"]
    r = c.post("/api/control/manual", json={"round_id": "r000001", "tile": k, "face": "4-5",
                                            "by": "sup-2", "correction": True}, headers=H)
    assert r.status_code == 200 and r.json()["settled"] is True, r.text
    with AuditStore(db, create=False) as st:
        recs = list(st.rounds())
    assert [x.payload.get("kind", "round") for x in recs] == ["round", "manual", "manual"]
    m = recs[-1].payload["manual"]
    assert m["correction"] is True and m["supersedes"] == first
    assert [e["face"] for e in m["entries"]] == ["4-5"]
    assert [e["face"] for e in m["superseded"]] == ["5-5"]
    assert recs[1].payload["tiles"][k]["face"] == "5-5"  # the wrong entry stays in the chain
    assert verify(db).ok
    # the report shows the final settlement: the corrected face's, the true deal's
    truth = event_from_deal(DEAL, "r000001", table_id="t1")
    (row,) = shift_report(db)["rounds"]
    assert row["settled_by"] == "manual"
    assert [e["face"] for e in row["manual_entries"]] == ["4-5"]
    assert row["house_net"] == truth["bank"]["house_net"]


@pytest.mark.faults
def test_ack_and_manual_entry_under_serve_tables(tmp_path):
    """The pit's table display uses the tables file's audit store (it answered 409)."""
    from fastapi.testclient import TestClient

    from vision.pit import Pit, load_tables
    from vision.web.pit import create_pit_app

    video = tmp_path / "t.mp4"
    video.write_bytes(b"0")
    db = tmp_path / "pit.db"
    (tmp_path / "tables.yaml").write_text(
        f"tables:\n  - id: t1\n    source: {video}\n    audit: {db}\n")
    specs = load_tables(tmp_path / "tables.yaml")
    ev, k = _unread_round()
    with AuditStore(db) as st:
        st.append(ev)
    pit = Pit(specs)  # not started: no worker, the feeds only
    pit.feeds["t1"].publish_event(ev)
    c = TestClient(create_pit_app(pit, token=TOKEN))
    r = c.post("/tables/t1/api/control/ack", json={"round_id": "r000001",
                                                  "kind": "unknown_tile",
                                                  "position": "dealer"}, headers=H)
    assert r.status_code == 200, r.text
    r = c.post("/tables/t1/api/control/manual", json={"round_id": "r000001", "tile": k,
                                                     "face": "4-5"}, headers=H)
    assert r.status_code == 200 and r.json()["settled"] is True, r.text
    assert verify(db).ok
    with AuditStore(db, create=False) as st:
        assert [x.payload.get("kind", "round") for x in st.rounds()] == ["round", "ack", "manual"]

"""``paigow reaudit --compare LIVE_DB`` verifies the live store first (docs/reaudit.md): a
broken chain, or a store that differs from its anchor, is exit 1 with the first broken record
named, before any recording is read; ``--force`` compares anyway and marks the differences
from the break on. The live rounds compared are the camera's records: a supervisor's
acknowledgement or manual entry is not a round of its own. No Ray: the re-read is replaced by
the live store's own rounds (what a faithful re-read returns)."""

from __future__ import annotations

import json

import pytest
from helpers.audit_events import make_event
from helpers.tamper import edited_payload, forge, sql

import vision.reaudit as mod
from vision.audit import AuditStore, verify
from vision.audit.entries import append_ack
from vision.cli import main


def _live(path, n=4):
    """Rounds r000001..r000004 of table-1 (seat 2 of round 2 with a mis-set alert to ack)."""
    with AuditStore(path) as st:
        for i in range(1, n + 1):
            st.append(make_event(i))
    return path


def _fake_reread(monkeypatch, events):
    """``mod.reaudit`` replaced: returns one recording whose rounds are ``events``; records
    whether it was called (it must not be, for a store refused)."""
    calls = []

    def fake(paths, **kw):
        calls.append(paths)
        return [{"path": str(paths[0]), "table_id": "table-1", "frames": 10, "stored": 0,
                 "wall_s": 0.0, "events": [dict(e) for e in events]}]

    monkeypatch.setattr(mod, "reaudit", fake)
    return calls


@pytest.fixture
def video(tmp_path):
    p = tmp_path / "table-1.mp4"
    p.write_bytes(b"not read: the re-read is faked")
    return p


def test_broken_live_store_is_refused_before_any_recording_is_read(tmp_path, video,
                                                                   monkeypatch, capsys):
    db = _live(tmp_path / "live.db")
    events = [make_event(i) for i in range(1, 5)]
    calls = _fake_reread(monkeypatch, events)
    assert main(["reaudit", str(video), "--compare", str(db)]) == 0  # intact: compared
    assert calls and "0 difference(s)" in capsys.readouterr().out
    calls.clear()
    # a payout edited in record 3 (the hash no longer matches)
    new = edited_payload(db, 3, lambda p: p["positions"]["1"].update(net="100"))
    sql(db, ("UPDATE paigow_rounds SET payload = ? WHERE seq = 3", (new,)))
    assert main(["reaudit", str(video), "--compare", str(db), "--json"]) == 1
    out, err = capsys.readouterr()
    assert calls == []  # refused before the re-read
    assert "paigow reaudit: audit store" in err and "BROKEN at record 3 (round r000003)" in err
    assert len(err.strip().splitlines()) == 1
    obj = json.loads(out)
    assert (obj["exit_code"], obj["command"]) == (1, "reaudit")
    assert obj["verify"]["broken_seq"] == 3
    # --force: compared all the same; the output says so first and marks rounds from 3 on
    assert main(["reaudit", str(video), "--compare", str(db), "--force"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("STORE BROKEN AT record 3 (round r000003)")
    (diff,) = [ln for ln in lines if ln.startswith("field:")]
    assert diff == ("field: round r000003 of table-1 position 1: net: live '100', re-read "
                    "'0.95' -- BROKEN (record 3 on)")
    assert lines[-1].endswith("; STORE BROKEN AT record 3: not a comparison with the store "
                              "as written")
    assert main(["reaudit", str(video), "--compare", str(db), "--force", "--json"]) == 1
    obj = json.loads(capsys.readouterr().out)
    assert obj["store_broken"]["record"] == 3 and obj["store_broken"]["marked_from"] == 3
    assert [(d["round_id"], d["field"], d["after_break"]) for d in obj["differences"]] == \
        [("r000003", "net", True)]


def test_a_rechained_forgery_is_refused_against_the_anchor(tmp_path, video, monkeypatch,
                                                           capsys):
    """A record appended and every hash recomputed (no key): the chain verifies, the anchor
    taken before does not."""
    db = _live(tmp_path / "live.db")
    with AuditStore(db, create=False, read_only=True) as st:
        head, n = st.head()
    anchor = f"{head}:{n}"
    calls = _fake_reread(monkeypatch, [make_event(i) for i in range(1, 5)])
    forge(db, 5, net1="50")
    assert verify(db).ok
    assert main(["reaudit", str(video), "--compare", str(db), "--anchor", anchor]) == 1
    assert "BROKEN at record" in capsys.readouterr().err and calls == []
    assert main(["reaudit", str(video), "--compare", str(db), "--anchor", anchor,
                 "--allow-after"]) == 1  # accepted, then round r000005 differs (live only)
    out = capsys.readouterr().out
    assert "missing_reread: round r000005 of table-1" in out and len(calls) == 1


def test_verification_options_need_compare(tmp_path, video, capsys):
    assert main(["reaudit", str(video), "--audit", str(tmp_path / "a.db"), "--force"]) == 2
    assert "need --compare" in capsys.readouterr().err
    assert main(["reaudit", str(video), "--compare", str(tmp_path / "none.db")]) == 2


def test_acknowledged_round_is_compared_with_the_cameras_record(tmp_path, video,
                                                                monkeypatch, capsys):
    """An acknowledgement stored for a round (same table and round id) is not the round:
    before, it replaced the round in the comparison and every position showed as missing."""
    db = tmp_path / "live.db"
    events = [make_event(1), make_event(2, dealer=(["1-3", "2-2"], ["6-6", "4-5"]))]
    with AuditStore(db) as st:
        for ev in events:
            st.append(ev)
        (alert,) = [a for a in st.get(2).payload["alerts"] if a["kind"] == "mis_set"]
        append_ack(st, "table-1", "r000002", alert, by="floor-2")
    assert verify(db).ok
    _fake_reread(monkeypatch, events)
    assert main(["reaudit", str(video), "--compare", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["differences"] == []

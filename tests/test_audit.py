"""Audit store (vision/audit.py): hash chain, tamper detection, foreign files, payout check,
CLI exit codes, crash safety. Events are hand-written (no pipeline)."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from scoring.errors import InputError
from vision.audit import AuditStore, canonical_json, check_payouts, verify
from vision.audit.chain import HASHED_COLUMNS, meta_hash, record_hash_v2
from vision.cli import main

from helpers.audit_events import jpeg as _jpeg, make_event, write_csv as _csv  # noqa: E402,F401

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def store_path(tmp_path):
    p = tmp_path / "audit.db"
    with AuditStore(p) as s:
        for i in range(1, 6):
            s.append(make_event(i), frame=_jpeg(i) if i in (2, 4) else None)
    return p


def _raw(path):
    return sqlite3.connect(str(path), isolation_level=None)


# --------------------------------------------------------------------------- chain


def test_chain_verifies_and_hashes_recompute(store_path):
    res = verify(store_path)
    assert res.ok and res.rounds == 5 and res.frames_checked == 2
    assert verify(store_path, deep=True).ok
    with AuditStore(store_path) as s:
        recs = list(s.rounds())
        assert [r.seq for r in recs] == [1, 2, 3, 4, 5]
        meta = dict(s._db.execute("SELECT key, value FROM paigow_audit_meta").fetchall())
        schema = s._db.execute("SELECT version, applied_at FROM paigow_audit_schema").fetchall()
        assert recs[0].prev_hash == meta_hash(meta, schema)  # the meta table is chained
        for a, b in zip(recs, recs[1:]):
            assert b.prev_hash == a.hash
        r2 = recs[1]
        assert r2.frame_path.parent == Path(str(store_path) + ".frames")
        assert r2.frame_sha256 == __import__("hashlib").sha256(_jpeg(2)).hexdigest()
        assert r2.hash == _rehash(store_path, 2)
        assert recs[2].frame_sha256 == "" and recs[2].frame_path is None
    assert res.head_hash == recs[-1].hash


def test_reopen_continues_chain(store_path):
    with AuditStore(store_path) as s:
        last = s.get(5)
        rec = s.append(make_event(6))
    assert rec.seq == 6 and rec.prev_hash == last.hash
    assert verify(store_path).rounds == 6


def test_last_record_per_table(store_path, tmp_path):
    with AuditStore(store_path) as s:
        s.append(make_event(7, table="table-2"))
        assert s.last_record().round_id == "r000007"
        assert s.last_record("table-2").seq == 6
        assert s.last_record("table-1").round_id == "r000005"
        assert s.last_record("table-9") is None
    with AuditStore(tmp_path / "empty.db") as s:
        assert s.last_record() is None


def test_sqlite_settings_and_triggers(store_path):
    con = _raw(store_path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        con.execute("UPDATE paigow_rounds SET payload = '{}' WHERE seq = 1")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        con.execute("DELETE FROM paigow_rounds WHERE seq = 5")
    con.close()
    assert verify(store_path).rounds == 5


def _tamper(path, sql, *triggers):
    con = _raw(path)
    for t in triggers:
        con.execute(f"DROP TRIGGER {t}")
    con.execute(sql)
    con.close()


def test_payload_change_names_record(store_path):
    with AuditStore(store_path) as s:
        p = s.get(3).payload
    p["positions"]["1"]["net"] = "9.95"
    _tamper(store_path, f"UPDATE paigow_rounds SET payload = '{canonical_json(p)}' "
                        "WHERE seq = 3", "paigow_rounds_no_update")
    res = verify(store_path)
    assert not res.ok and res.broken_seq == 3 and res.broken_round_id == "r000003"
    assert res.reason.startswith("record changed")


def _rehash(path, seq, **changes) -> str:
    """The version 2 hash of record ``seq`` with ``changes`` to its columns."""
    con = _raw(path)
    con.row_factory = sqlite3.Row
    row = dict(con.execute("SELECT * FROM paigow_rounds WHERE seq = ?", (seq,)).fetchone())
    con.close()
    row.update(changes)
    return record_hash_v2({c: row[c] for c in HASHED_COLUMNS})


def test_rehashed_record_breaks_next_link(store_path):
    with AuditStore(store_path) as s:
        r = s.get(2)
    p = dict(r.payload, source="elsewhere")
    text = canonical_json(p)
    h = _rehash(store_path, 2, payload=text)
    _tamper(store_path, f"UPDATE paigow_rounds SET payload = '{text}', hash = '{h}' "
                        "WHERE seq = 2", "paigow_rounds_no_update")
    res = verify(store_path)
    assert not res.ok and res.broken_seq == 3 and res.reason.startswith("prev link broken")


def test_deleted_record_is_named(store_path):
    _tamper(store_path, "DELETE FROM paigow_rounds WHERE seq = 2", "paigow_rounds_no_delete")
    res = verify(store_path)
    assert not res.ok and res.broken_seq == 3 and "record missing" in res.reason


def test_column_change_is_named(store_path):
    _tamper(store_path, "UPDATE paigow_rounds SET round_id = 'r999999' WHERE seq = 4",
            "paigow_rounds_no_update")
    res = verify(store_path)
    assert not res.ok and res.broken_seq == 4 and "round_id" in res.reason


def test_byte_edit_of_file_is_named(store_path):
    data = bytearray(store_path.read_bytes())  # WAL checkpointed when the store closed
    needle = b'"round_id":"r000004"'
    assert data.count(needle) == 1
    i = data.index(needle)
    data[i:i + len(needle)] = b'"round_id":"r000094"'
    store_path.write_bytes(bytes(data))
    res = verify(store_path)  # the payload no longer agrees with its round_id column
    assert not res.ok and res.broken_seq == 4 and res.reason.startswith("column round_id")


def test_frame_changed_and_missing_are_named(store_path):
    with AuditStore(store_path) as s:
        f2, f4 = s.get(2).frame_path, s.get(4).frame_path
    f4.write_bytes(_jpeg(99))
    res = verify(store_path)
    assert not res.ok and res.broken_seq == 4 and res.reason.startswith("frame changed")
    f2.unlink()
    res = verify(store_path)
    assert not res.ok and res.broken_seq == 2 and res.reason.startswith("frame missing")
    assert verify(store_path, check_frames=False).ok


def test_frame_array_is_encoded_and_bad_frame_refused(tmp_path):
    p = tmp_path / "a.db"
    img = np.zeros((40, 60, 3), np.uint8)
    img[:, 30:] = 200
    with AuditStore(p) as s:
        rec = s.append(make_event(1), frame=img)
        assert rec.frame_path.read_bytes()[:2] == b"\xff\xd8"
        with pytest.raises(InputError, match="JPEG"):
            s.append(make_event(2), frame=b"not a jpeg")
        assert len(s) == 1
    assert [q.name for q in (tmp_path / "a.db.frames").iterdir()] == [rec.frame_path.name]
    assert verify(p).ok


# --------------------------------------------------------------------------- input errors


def test_foreign_and_corrupt_files_raise_input_error(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello, not a database\n")
    with pytest.raises(InputError, match="notes.txt"):
        AuditStore(text)
    foreign = tmp_path / "other.db"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE customers (id INTEGER)")
    con.commit()
    con.close()
    before = foreign.read_bytes()
    with pytest.raises(InputError, match="other.db.*not an audit store"):
        AuditStore(foreign)
    with pytest.raises(InputError, match="other.db"):
        verify(foreign)
    assert foreign.read_bytes() == before  # a foreign file is never modified
    with pytest.raises(InputError, match="missing.db.*does not exist"):
        verify(tmp_path / "missing.db")
    assert main(["audit", "verify", str(text)]) == 2
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 64)
    with pytest.raises(InputError, match="corrupt.db"):
        verify(corrupt)


def test_newer_schema_refused(store_path):
    con = _raw(store_path)
    con.execute("INSERT INTO paigow_audit_schema (version, applied_at) VALUES (99, 'x')")
    con.close()
    with pytest.raises(InputError, match="schema version 99"):
        AuditStore(store_path)


def test_event_errors(tmp_path):
    with AuditStore(tmp_path / "a.db", table_id="table-1") as s:
        s.append(make_event(1))
        with pytest.raises(InputError, match="already recorded"):
            s.append(make_event(1))
        with pytest.raises(InputError, match="table-9"):
            s.append(make_event(2, table="table-9"))
        with pytest.raises(InputError, match="not an ISO-8601"):
            s.append(make_event(3, time="yesterday"))
        with pytest.raises(InputError, match="net"):
            s.append(make_event(4, net1="lots"))
        ev = make_event(5)
        del ev["table_id"]
        assert s.append(ev).table_id == "table-1"
        assert len(s) == 2


def test_alerts_stored_with_round(tmp_path):
    ev = make_event(1, dealer=(["6-6", "4-5"], ["6-6", "2-2"]))
    ev["positions"]["1"]["tiles"][0] = "6-6"
    ev["alerts"] = [{"kind": "unknown_tile", "position": "5", "detail": "seat 5 tile 2"}]
    with AuditStore(tmp_path / "a.db") as s:
        rec = s.append(ev)
        kinds = [(a["kind"], a["position"]) for a in rec.alerts]
        assert ("unknown_tile", "5") in kinds and ("duplicate_face", "1") in kinds
        assert s.get(1).alerts == rec.alerts
    con = _raw(tmp_path / "a.db")
    assert con.execute("SELECT alert_kinds FROM paigow_rounds").fetchone()[0] == \
        "duplicate_face,unknown_tile"
    con.close()


def test_append_many_is_one_transaction(tmp_path):
    with AuditStore(tmp_path / "a.db") as s:
        with pytest.raises(InputError):
            s.append_many([make_event(1), make_event(2), make_event(2)])
        assert len(s) == 0
        s.append_many([make_event(i) for i in range(1, 4)])
        assert len(s) == 3
    assert verify(tmp_path / "a.db").ok


# --------------------------------------------------------------------------- payouts


def test_payouts_exact_differences(store_path, tmp_path):
    csv = _csv(tmp_path / "pay.csv", [
        "r000001,1,0.95,ann", "r000001,2,-1.00,ann",   # exact (-1.00 == -1)
        "r000002,1,1.00,bob", "r000002,2,-1,bob",      # seat 1 overpaid 0.05
        "r000003,1,0.95,ann",                           # seat 2 not collected
        "r000003,5,2,ann",                              # seat 5 did not play
        "r000004,1,0.50,ann", "r000004,1,0.45,ann", "r000004,2,-1,ann",  # two rows add up
        "r000005,1,0.95,ann", "r000005,2,-1,ann",
    ])
    diffs = check_payouts(store_path, csv)
    got = [(d["kind"], d["round_id"], d["seat"], d["paid"], d["computed"], d["difference"])
           for d in diffs]
    assert got == [
        ("amount", "r000002", "1", "1.00", "0.95", "0.05"),
        ("not_paid", "r000003", "2", None, "-1", "1"),
        ("seat_not_in_round", "r000003", "5", "2", None, None),
    ]


def test_payouts_house_bank_net_needs_no_row(tmp_path):
    """The pipeline's events carry the dealer bank's net; the house pays itself nothing, so no
    dealer row is needed -- but a dealer row that is given is compared."""
    db = tmp_path / "a.db"
    with AuditStore(db) as s:
        ev = make_event(1)
        ev["positions"]["dealer"].update(role="banker", net="0.05", commission="0.05")
        s.append(ev)
    rows = ["r000001,1,0.95", "r000001,2,-1"]
    assert check_payouts(db, _csv(tmp_path / "p.csv", rows, "round_id,seat,amount_paid")) == []
    diffs = check_payouts(db, _csv(tmp_path / "q.csv", rows + ["r000001,dealer,1"],
                                   "round_id,seat,amount_paid"))
    assert [(d["kind"], d["seat"], d["difference"]) for d in diffs] == \
        [("amount", "dealer", "0.95")]


def test_payouts_by_time_and_all_rounds_checked(store_path, tmp_path):
    csv = _csv(tmp_path / "pay.csv", [
        "2026-11-29T12:00:01Z,1,0.95", "2026-11-29T12:00:01.000+00:00,2,-1",
        "2026-11-29T13:00:02+01:00,1,0.95", "2026-11-29 12:00:02,2,-1",
    ], header="time,seat,amount_paid")
    assert check_payouts(store_path, csv) == []  # the rounds the CSV covers are paid right
    diffs = check_payouts(store_path, csv, all_rounds=True)
    assert sorted({d["round_id"] for d in diffs}) == ["r000003", "r000004", "r000005"]
    assert all(d["kind"] == "not_paid" for d in diffs) and len(diffs) == 6


def test_payouts_cli_exit_codes(store_path, tmp_path, capsys):
    full = [f"r{i:06d},{s},{a}" for i in range(1, 6) for s, a in (("1", "0.95"), ("2", "-1"))]
    ok = _csv(tmp_path / "ok.csv", full)
    assert main(["audit", "check-payouts", str(store_path), str(ok)]) == 0
    assert capsys.readouterr().out.strip() == "0 difference(s)"
    bad = _csv(tmp_path / "bad.csv", full[:-1] + ["r000005,2,-2"])
    assert main(["audit", "check-payouts", str(store_path), str(bad), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["count"] == 1 and out["differences"][0]["difference"] == "-1"

    nocol = _csv(tmp_path / "nocol.csv", ["r000001,1"], header="round_id,seat")
    assert main(["audit", "check-payouts", str(store_path), str(nocol)]) == 2
    assert "amount_paid" in capsys.readouterr().err
    nonnum = _csv(tmp_path / "nonnum.csv", ["r000001,1,0.95", "r000002,1,abc"])
    assert main(["audit", "check-payouts", str(store_path), str(nonnum)]) == 2
    err = capsys.readouterr().err
    assert "line 3" in err and "'abc'" in err
    unknown = _csv(tmp_path / "unk.csv", full + ["r000777,1,5"])
    assert main(["audit", "check-payouts", str(store_path), str(unknown)]) == 2
    assert "r000777" in capsys.readouterr().err
    assert main(["audit", "check-payouts", str(store_path), str(unknown), "--report-unknown",
                 "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [d["kind"] for d in out["differences"]] == ["round_not_in_store"]


def test_payouts_file_that_is_not_csv_text_is_one_line_exit_2(store_path, tmp_path, capsys):
    """A picture, a binary file, a CSV saved in another encoding or a CSV the csv module
    cannot parse: one line naming the file and the problem, exit 2 (and the error object
    under --json), never a UnicodeDecodeError traceback."""
    png = tmp_path / "some.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    nul = tmp_path / "nul.csv"
    nul.write_bytes(b"round_id,seat,amount_paid\nr000001,1,0.95\x00\n")
    latin = tmp_path / "latin1.csv"
    latin.write_bytes("round_id,seat,amount_paid,cashier\nr000001,1,0.95,ann\n"
                      "r000001,2,-1,Zo\u00eb\n".encode("latin-1"))
    huge = tmp_path / "huge.csv"
    huge.write_text("round_id,seat,amount_paid\nr000001,1,\"" + "9" * 200_000 + "\"\n")
    cases = [(png, "not UTF-8 text (byte 0x89 at offset 0, line 1)"),
             (nul, "binary data (a NUL byte on line 2)"),
             (latin, "not UTF-8 text (byte 0xeb at offset"),
             (huge, "line 2: field larger than field limit")]
    for path, why in cases:
        with pytest.raises(InputError, match="is not a CSV payout log"):
            check_payouts(store_path, path)
        assert main(["audit", "check-payouts", str(store_path), str(path)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and "Traceback" not in err
        assert f"payouts file {str(path)!r} is not a CSV payout log" in err and why in err
        assert main(["audit", "check-payouts", str(store_path), str(path), "--json"]) == 2
        obj = json.loads(capsys.readouterr().out)
        assert set(obj) == {"error", "command", "exit_code"} and obj["exit_code"] == 2
        assert str(path) in obj["error"] and why in obj["error"]
    assert "line 3" in str(pytest.raises(InputError, check_payouts, store_path, latin).value)
    folder = tmp_path / "a_folder"
    folder.mkdir()
    assert main(["audit", "check-payouts", str(store_path), str(folder)]) == 2
    assert "cannot read payouts file" in capsys.readouterr().err
    bom = tmp_path / "bom.csv"  # a UTF-8 BOM (spreadsheets write one) is still accepted
    bom.write_bytes(b"\xef\xbb\xbfround_id,seat,amount_paid\nr000001,1,0.95\nr000001,2,-1\n")
    assert check_payouts(store_path, bom) == []


def test_verify_cli(store_path, capsys):
    assert main(["audit", "verify", str(store_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rounds"] == 5
    _tamper(store_path, "UPDATE paigow_rounds SET time = '2026-01-01T00:00:00Z' WHERE seq = 5",
            "paigow_rounds_no_update")
    assert main(["audit", "verify", str(store_path)]) == 1
    assert "record 5" in capsys.readouterr().out


# --------------------------------------------------------------------------- crash safety

CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {tests!r})
    from helpers.audit_events import make_event, jpeg as _jpeg
    from vision.audit import AuditStore
    s = AuditStore({db!r})
    i = 0
    while True:
        i += 1
        rec = s.append(make_event(i), frame=_jpeg(i) if i % 3 == 0 else None)
        print(rec.seq, flush=True)
""")


def test_sigkill_mid_append_loses_at_most_the_round_in_progress(tmp_path):
    """Start a writer, SIGKILL it after it reports 15 committed rounds (it keeps appending),
    then verify: the chain is intact and holds every reported round (plus at most one that
    committed before its id was printed)."""
    db = tmp_path / "crash.db"
    code = CHILD.format(root=str(ROOT), tests=str(ROOT / "tests"), db=str(db))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    reported = 0
    try:
        for line in proc.stdout:
            reported = int(line)
            if reported >= 15:
                break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    # what the writer reported before it died (on a loaded machine it runs ahead of this
    # reader: the pipe still holds ids it printed after the 15th)
    for line in proc.stdout.read().split():
        reported = max(reported, int(line))
    assert reported >= 15, "writer died before reporting 15 rounds"
    res = verify(db)
    assert res.ok, str(res)
    assert reported <= res.rounds <= reported + 1


def test_version_1_store_is_verified_but_not_appended_to(tmp_path):
    """A store written by the schema version 1 code (hash over payload and frame hash only)
    still verifies; appending to it is refused with a line that says why."""
    import hashlib

    from vision.audit.chain import APPLICATION_ID, MAGIC

    db = tmp_path / "v1.db"
    con = _raw(db)
    con.execute(f"PRAGMA application_id={APPLICATION_ID}")
    con.execute("CREATE TABLE paigow_audit_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("CREATE TABLE paigow_audit_schema (version INTEGER PRIMARY KEY, "
                "applied_at TEXT NOT NULL)")
    con.execute("CREATE TABLE paigow_rounds (seq INTEGER PRIMARY KEY, round_id TEXT NOT NULL, "
                "table_id TEXT NOT NULL, time TEXT NOT NULL, rules TEXT, model_version TEXT, "
                "alert_kinds TEXT NOT NULL, frame_file TEXT NOT NULL, frame_sha256 TEXT NOT NULL,"
                " payload TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, "
                "UNIQUE (table_id, round_id, time))")
    con.execute("INSERT INTO paigow_audit_meta VALUES ('magic', ?)", (MAGIC,))
    con.execute("INSERT INTO paigow_audit_schema VALUES (1, '2026-11-29T00:00:00.000Z')")
    prev = "0" * 64
    for i in (1, 2):
        ev = dict(make_event(i), alerts=[])
        text = canonical_json(ev)
        h = hashlib.sha256((prev + text).encode()).hexdigest()
        con.execute("INSERT INTO paigow_rounds VALUES (?, ?, 'table-1', ?, 'pa', "
                    "'tiles-v1+pips-v1', '', '', '', ?, ?, ?)",
                    (i, ev["round_id"], ev["time"], text, prev, h))
        prev = h
    con.close()
    res = verify(db)
    assert res.ok and res.rounds == 2 and res.head_hash == prev
    with AuditStore(db, create=False, read_only=True) as s:
        assert [r.round_id for r in s.rounds()] == ["r000001", "r000002"]
    with pytest.raises(InputError, match="schema version 1"):
        AuditStore(db)


def test_a_round_not_settled_with_no_position_is_stored_a_settled_one_is_refused(tmp_path):
    """A round whose tiles lay in no position (no layout, or all outside it) is reported not
    settled and stored all the same (a round is never lost); a settled round without
    positions is no round."""
    ev = make_event(1)
    ev.update(positions={}, settled=False, reason="no layout: the positions could not be placed")
    ev.pop("bank", None)
    with AuditStore(tmp_path / "a.db") as s:
        s.append(ev)
        assert len(s) == 1
        bad = make_event(2)
        bad.update(positions={}, settled=True)
        with pytest.raises(InputError, match="has no positions"):
            s.append(bad)
        assert len(s) == 1
    assert verify(tmp_path / "a.db").ok

"""The audit store on both backends, each against a real database: SQLite (a file) and
PostgreSQL (a throwaway cluster, tests/pgserver.py). Append, per-table chains, verify, tamper
detection, payout checks, two concurrent writers, a writer SIGKILLed mid-append."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.audit_events import jpeg as _jpeg, make_event, write_csv as _csv

from scoring.errors import InputError
from vision.audit import AuditStore, check_payouts, verify
from vision.audit.chain import HASHED_COLUMNS, record_hash_v2
from vision.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """An empty audit store location: an SQLite file path or a PostgreSQL database URL."""
    if request.param == "sqlite":
        return str(tmp_path / "audit.db")
    return request.getfixturevalue("pg_cluster").new_database()


def _frames(tmp_path) -> Path:
    return tmp_path / "frames"


def _open(url, tmp_path, **kw) -> AuditStore:
    return AuditStore(url, frames_dir=_frames(tmp_path), **kw)


def _tamper(url, sql, params=()):
    """Run ``sql`` with the append-only guards off (what an attacker with database rights can
    do; the chain must name it)."""
    if url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as c:
            c.execute("ALTER TABLE paigow_rounds DISABLE TRIGGER paigow_rounds_append_only")
            c.execute(sql.replace("?", "%s"), params)
            c.execute("ALTER TABLE paigow_rounds ENABLE TRIGGER paigow_rounds_append_only")
    else:
        c = sqlite3.connect(url, isolation_level=None)
        for op in ("update", "delete"):
            c.execute(f"DROP TRIGGER paigow_rounds_no_{op}")
        c.execute(sql, params)
        c.close()


def _rehash(store, seq, **changes) -> str:
    """The hash (schema version 2: every column) of record ``seq`` with ``changes``."""
    row = store._db.execute(f"SELECT {', '.join(HASHED_COLUMNS)} FROM paigow_rounds "
                            "WHERE seq = ?", (seq,)).fetchone()
    cols = dict(zip(HASHED_COLUMNS, row))
    cols.update(changes)
    return record_hash_v2(cols)


def _fill(url, tmp_path, n=6):
    """Rounds 1..n alternating between two tables (odd: table-1, even: table-2); frames on
    rounds 2 and 5."""
    with _open(url, tmp_path) as s:
        for i in range(1, n + 1):
            s.append(make_event(i, table="table-1" if i % 2 else "table-2"),
                     frame=_jpeg(i) if i in (2, 5) else None)


def test_append_and_per_table_chains_verify(store_url, tmp_path):
    _fill(store_url, tmp_path)
    with _open(store_url, tmp_path) as s:
        recs = list(s.rounds())
        assert [r.seq for r in recs] == [1, 2, 3, 4, 5, 6]
        # one chain per table: each record links to the previous record of its own table
        last: dict[str, str] = {}
        for r in recs:  # a table's first record is chained to the meta tables
            assert r.prev_hash == last.get(r.table_id, s._genesis())
            assert r.hash == _rehash(s, r.seq)
            last[r.table_id] = r.hash
        assert s.last_record("table-2").round_id == "r000006"
        assert s.last_record("table-1").round_id == "r000005"
        assert recs[1].frame_path.read_bytes() == _jpeg(2)
        # reopened, the table's chain continues from its own head
        rec = s.append(make_event(7, table="table-2"))
        assert rec.seq == 7 and rec.prev_hash == last["table-2"]
        res = s.verify()
    assert res.ok and res.rounds == 7 and res.frames_checked == 2 and res.head_hash == rec.hash
    res = verify(store_url, frames_dir=_frames(tmp_path))
    assert res.ok and res.rounds == 7


def test_duplicate_round_and_other_table_refused(store_url, tmp_path):
    _fill(store_url, tmp_path, 2)
    with _open(store_url, tmp_path) as s:
        with pytest.raises(InputError, match="already recorded"):
            s.append(make_event(2, table="table-2"))
        assert len(s) == 2  # the refused append left nothing behind
    with _open(store_url, tmp_path, table_id="table-1") as s:
        with pytest.raises(InputError, match="is from table 'table-2'"):
            s.append(make_event(9, table="table-2"))


def test_update_and_delete_refused(store_url, tmp_path):
    _fill(store_url, tmp_path, 2)
    if store_url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store_url, autocommit=True) as c:
            for sql in ("UPDATE paigow_rounds SET payload = 'x'", "DELETE FROM paigow_rounds",
                        "TRUNCATE paigow_rounds"):
                with pytest.raises(psycopg.Error, match="append-only"):
                    c.execute(sql)
    else:
        c = sqlite3.connect(store_url, isolation_level=None)
        for sql in ("UPDATE paigow_rounds SET payload = 'x'", "DELETE FROM paigow_rounds"):
            with pytest.raises(sqlite3.DatabaseError, match="append-only"):
                c.execute(sql)
        c.close()
    assert verify(store_url, frames_dir=_frames(tmp_path)).rounds == 2


def test_payload_change_is_named(store_url, tmp_path):
    _fill(store_url, tmp_path)
    with _open(store_url, tmp_path) as s:
        payload = s.get(4).payload_json
    _tamper(store_url, "UPDATE paigow_rounds SET payload = ? WHERE seq = 4",
            (payload.replace('"net":"-1"', '"net":"1"'),))
    res = verify(store_url, frames_dir=_frames(tmp_path))
    assert not res.ok and res.broken_seq == 4 and res.broken_round_id == "r000004"
    assert res.reason.startswith("record changed")


def test_rehashed_record_breaks_its_tables_next_link(store_url, tmp_path):
    """Recomputing the changed record's own hash moves the break to the next record of the
    SAME table (record 4 is table-2's; its next is record 6, not 5)."""
    _fill(store_url, tmp_path)
    with _open(store_url, tmp_path) as s:
        r = s.get(4)
        payload = r.payload_json.replace('"net":"-1"', '"net":"1"')
        h = _rehash(s, 4, payload=payload)
    _tamper(store_url, "UPDATE paigow_rounds SET payload = ?, hash = ? WHERE seq = 4",
            (payload, h))
    res = verify(store_url, frames_dir=_frames(tmp_path))
    assert not res.ok and res.broken_seq == 6
    assert res.reason.startswith("prev link broken") and "of record 4" in res.reason


def test_deleted_record_and_changed_frame_are_named(store_url, tmp_path):
    _fill(store_url, tmp_path)
    (_frames(tmp_path) / next(p.name for p in _frames(tmp_path).glob("00000005_*.jpg"))
     ).write_bytes(_jpeg(99))
    res = verify(store_url, frames_dir=_frames(tmp_path))
    assert not res.ok and res.broken_seq == 5 and res.reason.startswith("frame changed")
    _tamper(store_url, "DELETE FROM paigow_rounds WHERE seq = 3")
    res = verify(store_url, frames_dir=_frames(tmp_path), check_frames=False)
    assert not res.ok and res.broken_seq == 4 and res.reason.startswith("record missing")


def test_verify_reads_a_long_chain_in_batches(store_url, tmp_path):
    """2,500 rounds (verify reads 2,000 at a time; PostgreSQL through a server-side cursor): a
    change in the last batch is still found and named."""
    n = 2500
    with _open(store_url, tmp_path) as s:
        s.append_many([make_event(i, table=f"t{i % 3}") for i in range(1, n + 1)],
                      compute_alerts=False)
    res = verify(store_url, frames_dir=_frames(tmp_path))
    assert res.ok and res.rounds == n
    with _open(store_url, tmp_path) as s:
        payload = s.get(n - 10).payload_json
    _tamper(store_url, "UPDATE paigow_rounds SET payload = ? WHERE seq = ?",
            (payload.replace('"net":"-1"', '"net":"-2"'), n - 10))
    res = verify(store_url, frames_dir=_frames(tmp_path))
    assert not res.ok and res.broken_seq == n - 10 and res.rounds == n


def test_check_payouts_and_cli(store_url, tmp_path, capsys):
    _fill(store_url, tmp_path, 3)
    csv = _csv(tmp_path / "pay.csv", [
        "r000001,1,0.95,ann", "r000001,2,-1,ann",
        "r000002,1,1.00,bob", "r000002,2,-1,bob",   # seat 1 overpaid 0.05
        "r000003,1,0.95,ann",                        # seat 2 not collected
    ])
    diffs = check_payouts(store_url, csv)
    assert [(d["kind"], d["round_id"], d["seat"], d["difference"]) for d in diffs] == [
        ("amount", "r000002", "1", "0.05"), ("not_paid", "r000003", "2", "1")]
    # the store is verified first: its key frames are not where the command looks for them
    assert main(["audit", "check-payouts", store_url, str(csv), "--json"]) == 1
    assert "frame missing" in json.loads(capsys.readouterr().out)["error"]
    assert main(["audit", "check-payouts", store_url, str(csv), "--json", "--frames-dir",
                 str(_frames(tmp_path))]) == 1
    assert json.loads(capsys.readouterr().out)["count"] == 2
    assert main(["audit", "verify", store_url, "--frames-dir", str(_frames(tmp_path)),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rounds"] == 3


def test_foreign_database_refused(store_url, tmp_path):
    if store_url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store_url, autocommit=True) as c:
            c.execute("CREATE TABLE customers (id INTEGER)")
    else:
        c = sqlite3.connect(store_url)
        c.execute("CREATE TABLE customers (id INTEGER)")
        c.commit()
        c.close()
    with pytest.raises(InputError, match="not an audit store .*customers"):
        AuditStore(store_url)


WRITER = textwrap.dedent("""
    import sys
    sys.path[:0] = [{root!r}, {tests!r}]
    from helpers.audit_events import make_event, jpeg as _jpeg
    from vision.audit import AuditStore
    table, n = sys.argv[1], int(sys.argv[2])
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    with AuditStore({url!r}, frames_dir={frames!r}) as s:
        i = 0
        while n == 0 or i < n:
            i += 1
            rec = s.append(make_event(i, table=table), frame=_jpeg(i) if i % 4 == 0 else None)
            print(rec.round_id, flush=True)
""")


def _writer(url, tmp_path, table, n):
    code = WRITER.format(root=str(ROOT), tests=str(ROOT / "tests"), url=url,
                         frames=str(_frames(tmp_path)))
    p = subprocess.Popen([sys.executable, "-c", code, table, str(n)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def test_two_concurrent_writers_on_an_empty_store(store_url, tmp_path):
    """Two table workers start at once on an empty store (both create the schema) and append
    interleaved: every round of both is stored and both chains verify."""
    n = 15
    procs = [_writer(store_url, tmp_path, t, n) for t in ("table-1", "table-2")]
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=240)[0].split() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert all(o == [f"r{i:06d}" for i in range(1, n + 1)] for o in outs)
    res = verify(store_url, frames_dir=_frames(tmp_path))
    assert res.ok, str(res)
    assert res.rounds == 2 * n and res.frames_checked == 2 * (n // 4)
    with AuditStore(store_url, create=False, frames_dir=_frames(tmp_path)) as s:
        tables = [r.table_id for r in s.rounds()]
    assert tables.count("table-1") == tables.count("table-2") == n


def test_sigkill_mid_append_loses_no_committed_round(store_url, tmp_path):
    """Two writers keep appending; one is SIGKILLed after it reported 10 committed rounds. The
    store verifies, holds every reported round (plus at most the one whose id was not printed
    yet), and the other writer goes on and finishes (no lock left behind)."""
    survivor = _writer(store_url, tmp_path, "table-2", 25)
    victim = _writer(store_url, tmp_path, "table-1", 0)
    for p in (victim, survivor):
        p.stdin.write("go\n")
        p.stdin.flush()
    reported = []
    try:
        for line in victim.stdout:
            reported.append(line.strip())
            if len(reported) >= 10:
                break
    finally:
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=60)
    out = survivor.communicate(timeout=240)[0].split()
    assert survivor.returncode == 0 and len(out) == 25
    res = verify(store_url, frames_dir=_frames(tmp_path))
    assert res.ok, str(res)
    with AuditStore(store_url, create=False, frames_dir=_frames(tmp_path)) as s:
        stored = [r.round_id for r in s.rounds(table_id="table-1")]
        assert stored[:len(reported)] == reported
        assert len(reported) <= len(stored) <= len(reported) + 1
        # the killed table's chain continues where it stopped
        head = s.last_record("table-1").hash
        rec = s.append(make_event(len(stored) + 1, table="table-1"))
        assert rec.prev_hash == head
    assert verify(store_url, frames_dir=_frames(tmp_path)).ok


# --------------------------------------------------------------------------- a session


from helpers.videos import N_STABLE  # noqa: E402  (small_video: tests/conftest.py)


def test_session_stores_rounds_and_key_frames_on_both_backends(store_url, small_video,
                                                               tmp_path):
    """The frame loop of `paigow run --audit STORE --audit-frames DIR` on a rendered video:
    every round is stored with its key frame, the chain and frames verify."""
    import pickle

    from vision.session import run

    with open(small_video["fake"], "rb") as f:
        fake = pickle.load(f)
    fake.delay = 0.0
    frames = tmp_path / "frames"
    s = run(str(small_video["path"]), audit=store_url, audit_frames=str(frames),
            table_id="t-live", n_stable=N_STABLE, progress=False, tile_detector=fake,
            pip_detector=fake)
    assert s["audit"]["appended"] == len(s["events"]) == len(small_video["scenes"])
    res = verify(store_url, frames_dir=frames)
    assert res.ok and res.rounds == res.frames_checked == len(small_video["scenes"])
    assert res.head_hash == s["audit"]["head_hash"]
    with AuditStore(store_url, create=False, frames_dir=frames) as st:
        assert [r.payload for r in st.rounds()] == s["events"]


def test_postgresql_store_needs_a_frames_folder(capsys):
    url = "postgresql://paigow@/audit?host=/nonexistent"
    assert main(["run", "x.mp4", "--audit", url]) == 2
    assert "--audit-frames" in capsys.readouterr().err

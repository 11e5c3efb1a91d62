"""Fault: the audit database goes away under a running session (issue 42, item 1).

Before: a 20 s PostgreSQL outage (``pg_ctl -m fast stop``, then ``start``) stopped ``serve`` for
good (``AdminShutdown``: /api/state "error", /healthz 503, every later round lost) and ``run``
exited 1 with a traceback; an SQLite file made immutable mid-run did the same. Now the audit
sink (:class:`vision.io.sinks.AuditSink`) spools each round durably while the store cannot be
reached, says so (:meth:`status`, /healthz's ``warning``), retries with backoff and drains the
spool in order once the store answers: every round stored once, the chain intact.

- a real PostgreSQL server (tests/pgserver.py, its own cluster: the test stops and starts
  it), rounds with key frames appended through the sink before, during and after the outage;
- a spool left by a SIGKILLed writer (one of its rounds already committed, a torn last line)
  drained when the next sink opens the store: nothing lost, nothing doubled;
- ``paigow run --audit FILE`` whose SQLite file (and its write-ahead log) is made immutable
  (``chattr +i``) after two rounds: the run ends with a warning line and exit code 3, no
  traceback, and the next session on the store stores the spooled rounds.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from faultkit import N_STABLE, make_video
from fakes import event_from_deal
from helpers.audit_events import DEALS, jpeg
from helpers.children import wait_for

import vision.recognition.engine
from vision.audit import AuditStore, verify
from vision.cli import main
from vision.io.sinks import AuditSink
from vision.schema import RoundEvent
from vision.web.health import health

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.timeout(300)]

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
TABLE = "t-pg"


@pytest.fixture
def own_cluster():
    """A PostgreSQL cluster of this test alone (stopping the shared one would break others)."""
    from pgserver import PgCluster

    cluster = PgCluster()
    try:
        yield cluster
    finally:
        cluster.stop()


def _round(i: int) -> dict:
    """Round ``i`` of a recording: a real settled deal (the scoring engine's), frame 100 i."""
    ev = event_from_deal(DEALS[i % len(DEALS)], f"r{i:06d}", table_id=TABLE,
                         frame_index=100 * i, source="table.mp4")
    # a file source: the frame index tells rounds of one deal apart (round_key)
    ev["source_file"], ev["source_id"] = "table.mp4", "file-00000000000000aa"
    ev["time"] = f"2026-12-05T10:{i // 60:02d}:{i % 60:02d}.000Z"
    return ev


def _event(i: int) -> RoundEvent:
    return RoundEvent.from_dict(_round(i))


class _Feed:
    """What ``/healthz`` reads of a dealer display: the frame loop's status and the session's
    audit sink (:func:`vision.web.health.audit_view`)."""

    def __init__(self, sink) -> None:
        self.session = SimpleNamespace(audit=sink)

    def state(self) -> dict:
        return {"status": "running", "error": None}


def _stored(url, frames) -> list:
    with AuditStore(url, create=False, frames_dir=frames) as st:
        return list(st.rounds())


def test_pg_outage_rounds_spooled_then_stored_once(own_cluster, tmp_path):
    url, frames = own_cluster.new_database(), tmp_path / "frames"
    sink = AuditSink(url, frames)
    reported = []
    try:
        assert sink.attach(TABLE) == 0
        for i in (1, 2, 3):
            reported.append(sink.store_round(_event(i), jpeg(i)).round_id)
        assert sink.appended == 3

        own_cluster.pause()  # pg_ctl -m fast stop: the sink's session gets AdminShutdown
        for i in (4, 5, 6, 7):  # a 20 s outage, a round every 5 s (key frames on some only)
            ev = sink.store_round(_event(i), jpeg(i) if i % 2 else None)
            reported.append(ev.round_id)
            time.sleep(5.0)
        st = sink.status()
        assert st["reachable"] is False and st["spooled"] == 4
        assert st["attempts"] >= 1  # retried (reconnecting) meanwhile, in vain
        assert "AdminShutdown" in st["error"] or "connect" in st["error"], st
        assert st["message"].startswith("audit store unreachable, 4 round(s) spooled")
        assert sink.appended == 3
        # /healthz stays 200 (the display is usable, nothing is lost) and says so
        ok, body = health(_Feed(sink))
        assert ok and body["warning"].startswith("audit store unreachable, 4 round(s) spooled")
        assert body["audit"]["reachable"] is False and body["audit"]["spooled"] == 4
        lines = Path(st["spool"]).read_text().splitlines()
        assert [json.loads(x)["event"]["frame_index"] for x in lines] == [400, 500, 600, 700]
        assert [bool(json.loads(x)["frame"]) for x in lines] == [False, True, False, True]

        own_cluster.resume()
        # no new round needed: the retry thread reconnects and drains the spool
        wait_for(lambda: sink.status()["reachable"] and sink.spooled == 0,
                 "the spool drained after the server came back", 120)
        assert sink.appended == 7 and not Path(st["spool"]).exists()
        for i in (8, 9):
            reported.append(sink.store_round(_event(i), jpeg(i)).round_id)
    finally:
        sink.close()
    assert sink.summary()["spooled"] == 0 and sink.summary()["spooled_total"] == 4
    recs = _stored(url, frames)
    # every round stored once, in order, under the number it was reported with
    assert [r.payload["frame_index"] for r in recs] == [100 * i for i in range(1, 10)]
    assert [r.round_id for r in recs] == reported == [f"r{i:06d}" for i in range(1, 10)]
    res = verify(url, frames_dir=frames)
    assert res.ok and res.rounds == 9, str(res)
    assert res.frames_checked == 7  # 1, 2, 3, 5, 7, 8, 9: the spooled frames kept


CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    from fakes import event_from_deal
    from helpers.audit_events import DEALS, jpeg
    from vision.io.sinks import AuditSink
    from vision.schema import RoundEvent
    sink = AuditSink({url!r}, {frames!r})
    sink.attach({table!r})

    def ev(i):  # the test's _round(i)
        e = event_from_deal(DEALS[i % len(DEALS)], "r%06d" % i, table_id={table!r},
                            frame_index=100 * i, source="table.mp4")
        e["source_file"], e["source_id"] = "table.mp4", "file-00000000000000aa"
        e["time"] = "2026-12-05T10:%02d:%02d.000Z" % (i // 60, i % 60)
        return RoundEvent.from_dict(e)

    for i in (1, 2):
        sink.store_round(ev(i), jpeg(i))
    print("stored", flush=True)
    sys.stdin.readline()  # the server is stopped now
    for i in (3, 4, 5):
        sink.store_round(ev(i), jpeg(i))
    print("spooled", sink.spooled, flush=True)
    time.sleep(600)  # killed here
""")


def test_spool_of_a_killed_writer_drained_at_the_next_start(own_cluster, tmp_path):
    url, frames = own_cluster.new_database(), tmp_path / "frames"
    code = CHILD.format(tests=str(TESTS), url=url, frames=str(frames), table=TABLE)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=str(ROOT),
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "stored", proc.stderr.read()
        own_cluster.pause()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "spooled 3", proc.stderr.read()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    own_cluster.resume()
    spool = frames / "spool.jsonl"
    assert len(spool.read_text().splitlines()) == 3
    # the crash window between a commit and the spool's rewrite: round 3 is already stored
    with AuditStore(url, create=False, frames_dir=frames) as st:
        st.append(_round(3), frame=jpeg(3), renumber=True)
    with open(spool, "ab") as f:  # and the process died while writing one more line
        f.write(b'{"v":1,"store":"x","event":{"round_')

    sink = AuditSink(url, frames)  # drains the spool first
    try:
        assert sink.spooled == 0 and not spool.exists()
        assert sink.appended == 2 and sink.already_recorded == 1  # round 3 not stored twice
        assert sink.attach(TABLE) == 5
        assert sink.store_round(_event(6), None).round_id == "r000006"
    finally:
        sink.close()
    recs = _stored(url, frames)
    assert [r.payload["frame_index"] for r in recs] == [100, 200, 300, 400, 500, 600]
    assert [r.round_id for r in recs] == [f"r{i:06d}" for i in range(1, 7)]
    res = verify(url, frames_dir=frames)
    assert res.ok and res.rounds == 6 and res.frames_checked == 5, str(res)


def _chattr(flag: str, *paths: Path) -> bool:
    r = subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, text=True)
    return r.returncode == 0


def test_run_with_an_sqlite_store_made_immutable_mid_run(tmp_path, monkeypatch, capsys):
    (tmp_path / "video").mkdir()
    video = make_video(tmp_path / "video")
    db = tmp_path / "store" / "audit.db"
    db.parent.mkdir()
    wal = Path(str(db) + "-wal")
    probe = tmp_path / "probe"
    probe.write_text("x")
    if not _chattr("+i", probe):
        pytest.skip("chattr +i is not allowed here (needs root and a file system with it)")
    _chattr("-i", probe)

    with open(video["fake"], "rb") as f:
        fake = pickle.load(f)
    monkeypatch.setattr(vision.recognition.engine, "load_detectors", lambda *a, **k: (fake, fake))
    real = AuditStore.append
    calls = [0]

    def append(self, *a, **k):  # after the 2nd round is stored the file becomes immutable
        rec = real(self, *a, **k)
        calls[0] += 1
        if calls[0] == 2:
            assert _chattr("+i", db, wal)
        return rec

    monkeypatch.setattr(AuditStore, "append", append)
    try:
        rc = main(["run", str(video["path"]), "--audit", str(db), "--out",
                   str(tmp_path / "out"), "--json", "--stable", str(N_STABLE),
                   "--no-progress"])
    finally:
        _chattr("-i", db, wal)
    cap = capsys.readouterr()
    assert rc == 3, cap.err[-3000:]
    assert "Traceback" not in cap.err
    warn = [x for x in cap.err.splitlines() if x.startswith("paigow run: warning:")]
    assert len(warn) == 1 and "round(s) spooled" in warn[0], cap.err[-3000:]
    printed = [json.loads(x) for x in cap.out.splitlines() if x.startswith("{")]
    n = len(video["scenes"])
    assert len(printed) == n and "error" not in printed[-1]
    spooled = n - 2
    assert f"{spooled} round(s) spooled" in warn[0]
    spool = Path(str(db) + ".frames") / "spool.jsonl"
    assert len(spool.read_text().splitlines()) == spooled
    with AuditStore(db, create=False) as st:
        assert len(st) == 2  # the two rounds stored before

    # the store writable again: the next session stores the spooled rounds first
    monkeypatch.setattr(AuditStore, "append", real)
    sink = AuditSink(str(db))
    try:
        assert sink.spooled == 0 and sink.appended == spooled
    finally:
        sink.close()
    with AuditStore(db, create=False) as st:
        stored = [r.payload for r in st.rounds()]
    # every reported round stored once, as reported
    assert [e["round_id"] for e in stored] == [e["round_id"] for e in printed]
    assert [e["frame_index"] for e in stored] == [e["frame_index"] for e in printed]
    assert [e["positions"] for e in stored] == [e["positions"] for e in printed]
    res = verify(db)
    assert res.ok and res.rounds == n and res.frames_checked == n, str(res)


def test_serve_rides_out_a_20s_pg_outage(own_cluster, tmp_path):
    """The issue's own case: ``paigow serve VIDEO --loop --audit postgresql://...`` while the
    server is stopped for 20 s and started again: the display keeps running (/api/state
    "running", /healthz 200 saying "audit store unreachable, N round(s) spooled"), and every
    round it reported is stored once, under the id it was reported with."""
    import threading

    from helpers.children import CLI_WITH_FAKE_MODELS, free_port

    httpx = pytest.importorskip("httpx")

    (tmp_path / "video").mkdir()
    video = make_video(tmp_path / "video")
    url, frames = own_cluster.new_database(), tmp_path / "frames"
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PAIGOW_TOKEN", None)
    code = CLI_WITH_FAKE_MODELS.format(tests=str(TESTS), fake=str(video["fake"]))
    err = tmp_path / "serve.err"
    with open(err, "w") as ef:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, "serve", str(video["path"]), "--loop", "--port",
             str(port), "--json", "--stable", str(N_STABLE), "--table-id", TABLE, "--audit",
             url, "--audit-frames", str(frames)],
            stdout=subprocess.PIPE, stderr=ef, text=True, cwd=str(ROOT), env=env)
    events: list[dict] = []

    def read():
        for line in proc.stdout:
            if line.startswith("{"):
                events.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5.0)

    def get(path):
        assert proc.poll() is None, err.read_text()[-3000:]
        try:
            r = client.get(path)
        except httpx.HTTPError:
            return None, None
        return r.status_code, r.json()

    during = []
    try:
        wait_for(lambda: get("/healthz")[0] == 200 and len(events) >= 2, "rounds", 120)
        own_cluster.pause()
        t_down = time.monotonic()
        n_down = len(events)
        while time.monotonic() - t_down < 20.0:
            during.append((get("/healthz"), get("/api/state")[1]))
            time.sleep(1.0)
        own_cluster.resume()

        def drained():
            st = get("/api/state")[1] or {}
            audit = (st.get("feed") or {}).get("audit") or {}
            return audit.get("reachable") and audit.get("spooled") == 0 and st
        st = wait_for(drained, "the spool drained after the server came back", 120)
        n_back = len(events)
        wait_for(lambda: len(events) >= n_back + 2, "rounds after the outage", 120)
        assert st["status"] == "running"
        code_after, body_after = get("/healthz")
    finally:
        client.close()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        reader.join(10)
    log = err.read_text()
    assert "Traceback" not in log, log[-3000:]
    # during the outage: running, healthy, saying how many rounds wait
    assert len(events) > n_down  # rounds went on being reported while the database was down
    assert all(s["status"] == "running" for _, s in during if s), during[-1]
    assert all(code == 200 for (code, _), _ in during if code is not None), during[-1]
    warned = [b["warning"] for (_, b), _ in during if b and b.get("warning")]
    assert warned and all(w.startswith("audit store unreachable, ") for w in warned), during
    spooled = [s["feed"]["audit"]["spooled"] for _, s in during if s]
    assert max(spooled) >= 1
    assert code_after == 200 and body_after["warning"] is None, body_after
    # every round reported is stored once, under the id it was reported with; chain intact
    recs = _stored(url, frames)
    assert [r.round_id for r in recs] == [e["round_id"] for e in events]
    assert len({r.round_key for r in recs}) == len(recs)
    res = verify(url, frames_dir=frames)
    assert res.ok and res.rounds == len(events), str(res)
    print(f"{len(events)} round(s) reported and stored, {len(events) - n_down} from the "
          f"outage on; at most {max(spooled)} spooled at once")


def test_a_symlink_in_place_of_the_spool_is_refused(tmp_path):
    """The spool is opened ``O_NOFOLLOW``: a symlink planted where it lives is refused with
    one line naming it, never followed (its target is left as it was)."""
    from scoring.errors import InputError

    db = tmp_path / "audit.db"
    with AuditStore(db):
        pass
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    frames = Path(str(db) + ".frames")
    frames.mkdir()
    (frames / "spool.jsonl").symlink_to(target)
    with pytest.raises(InputError, match="is a symlink"):
        AuditSink(str(db))
    assert target.read_text() == "keep\n"

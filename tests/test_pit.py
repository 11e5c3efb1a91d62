"""Many tables on one machine (`paigow serve --tables`, vision/pit/, vision/web/pit.py): the
tables file, and two tables from two rendered videos through the real command -- one worker
process per table, each running the real session loop (vision.session.Session: capture, the
real Pipeline, table, audit store) with detectors that return the renderer's ground truth
(tests/fakes.py; the trained models are not needed) -- seen on the pit view in headless
Chromium (/usr/bin/chromium driven by Playwright; never `playwright install`); one worker is
SIGKILLed, restarted, and the pit view says so while the other table keeps settling. Both
workers write one SQLite audit store at once (one chain per table); it verifies at the end."""

from __future__ import annotations

import functools
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from helpers.children import free_port, wait_for
from fakes import GroundTruthDetectors
from helpers.videos import N_STABLE, SMALL, empty_table, write_video

from scoring.errors import InputError
from vision.synth import render as synth
from vision.audit import AuditStore, verify
from vision.cli import main
from vision.pit import load_tables

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
WAIT_S = 120.0  # an upper bound for slow shared machines, not a speed assertion
TABLE_SEEDS = {"t-east": (1_000_311, 1_000_312), "t-west": (1_000_313, 1_000_314)}


# --------------------------------------------------------------------------- the tables file


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_tables_file_resolves_paths_and_defaults(tmp_path):
    f = _write(tmp_path / "tables.yaml", """
defaults:
  audit: pit.db
  stable: 4
tables:
  - id: t1
    source: videos/t1.mp4
    banker: "2"
    loop: true
  - id: t2
    source: "0"
    audit: postgresql://paigow@/audit?host=/run/postgresql
""")
    t1, t2 = load_tables(f)
    assert (t1.table_id, t1.source, t1.loop) == ("t1", str(tmp_path / "videos/t1.mp4"), True)
    assert t1.options == {"audit": str(tmp_path / "pit.db"), "stable": 4, "banker": "2"}
    assert (t2.source, t2.loop, t2.realtime) == ("0", False, True)  # a camera: kept as is
    assert t2.options["audit"].startswith("postgresql://paigow@/audit")
    cfg = t1.run_config()
    assert cfg.pipeline.table.table_id == "t1" and cfg.pipeline.table.banker == "2"
    assert cfg.pipeline.table.n_stable == 4 and str(cfg.output.audit).endswith("pit.db")
    # a live table reads with the live backend unless the file names one
    from vision.recognition.backends import live_backend
    assert cfg.pipeline.recognition.backend == live_backend()


@pytest.mark.parametrize("text, error", [
    ("tables: []", "non-empty 'tables:' list"),
    ("tables:\n  - source: a.mp4", "id must be"),
    ("tables:\n  - id: t1", "no source"),
    ("tables:\n  - {id: t1, source: a.mp4}\n  - {id: t1, source: b.mp4}", "used by two tables"),
    ("tables:\n  - {id: t1, source: a.mp4, speed: 3}", "unknown key 'speed'"),
    ("tables:\n  - {id: t1, source: a.mp4, loop: 'yes'}", "loop must be true or false"),
    ("tables:\n  - {id: 'a/b', source: a.mp4}", "id must be"),
])
def test_tables_file_errors_name_the_value(tmp_path, text, error):
    with pytest.raises(InputError, match=error):
        load_tables(_write(tmp_path / "tables.yaml", text))


def test_the_pit_view_sends_the_same_hardening_headers_as_a_table():
    # one middleware (vision.web.app.secure_headers) for the pit and each table's display
    from fastapi.testclient import TestClient

    from vision.web.pit import create_pit_app

    class NoTables:
        feeds: dict = {}

        def state(self):
            return {"tables": []}

    with TestClient(create_pit_app(NoTables())) as c:
        for path in ("/", "/api/pit", "/healthz"):
            h = c.get(path).headers
            assert "default-src 'self'" in h["content-security-policy"], path
            assert h["x-content-type-options"] == "nosniff" and h["referrer-policy"] == "no-referrer"


def test_serve_tables_bad_input_is_exit_2(tmp_path, capsys):
    assert main(["serve", "--tables", str(tmp_path / "missing.yaml")]) == 2
    assert "tables file not found" in capsys.readouterr().err
    f = _write(tmp_path / "t.yaml", "tables:\n  - {id: t1, source: a.mp4}\n")
    assert main(["serve", "x.mp4", "--tables", str(f)]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["serve", "--tables", str(f), "--audit", "a.db"]) == 2
    assert "--audit is a per-table setting" in capsys.readouterr().err
    f = _write(tmp_path / "u.yaml", "tables:\n  - {id: t1, source: a.mp4, banker: '9'}\n")
    assert main(["serve", "--tables", str(f)]) == 2
    assert "table 't1'" in capsys.readouterr().err


# --------------------------------------------------------------------------- two tables


@pytest.fixture(scope="module")
def two_tables(tmp_path_factory):
    """Two rendered videos (two deals each) and their ground-truth detectors."""
    d = tmp_path_factory.mktemp("pit")
    out = {}
    for tid, seeds in TABLE_SEEDS.items():
        scenes = [synth.render_table(s, size=SMALL) for s in seeds]
        empties = [empty_table(sc) for sc in scenes]
        path, _ = write_video(d / tid, scenes, empties)
        out[tid] = (path, GroundTruthDetectors(scenes, empties, lossy=True))
    return d, out


def _free_port() -> int:
    return free_port()


def _wait(cond, what: str, timeout: float = WAIT_S):
    return wait_for(cond, what, timeout)


@pytest.mark.slow
def test_two_tables_pit_view_and_a_killed_worker_restarted(two_tables, monkeypatch):
    import httpx

    import vision.commands.serve as serve_cmd
    import vision.pit as pit_pkg

    d, tables = two_tables
    db = d / "pit.db"
    yaml_text = "defaults:\n  audit: pit.db\n  stable: %d\n  loop: true\ntables:\n" % N_STABLE
    for tid, (path, _) in tables.items():
        yaml_text += f"  - id: {tid}\n    source: {path.name}\n"
    # a third table whose camera cannot be opened (the file is there but holds no video; a
    # file that is not there is refused before any worker starts, tests/faults): its worker
    # fails and is retried, and never stops the others
    _write(d / "broken-camera.mp4", "not a video\n")
    yaml_text += "  - id: t-dead\n    source: broken-camera.mp4\n"
    tables_file = _write(d / "tables.yaml", yaml_text)
    monkeypatch.setattr(pit_pkg, "Pit", functools.partial(
        pit_pkg.Pit, detectors={tid: fake for tid, (_, fake) in tables.items()},
        restart_delay=(0.2, 2.0)))
    made = {}
    real_make_server = serve_cmd.make_server

    def capture(app, pit, log_level="warning"):
        made["server"] = real_make_server(app, pit, log_level)
        return made["server"]

    monkeypatch.setattr(serve_cmd, "make_server", capture)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    rc = {}
    t = threading.Thread(target=lambda: rc.setdefault("rc", main(
        ["serve", "--tables", str(tables_file), "--port", str(port)])))
    t.start()

    def pit_state():
        return {x["table_id"]: x for x in httpx.get(base + "/api/pit", timeout=10).json()["tables"]}

    try:
        _wait(lambda: "server" in made and made["server"].started or not t.is_alive(),
              "the server to start")
        assert t.is_alive(), rc
        # both tables settle rounds (each worker loops its video)
        _wait(lambda: all(x["round_count"] >= 2 and x["worker"]["state"] == "running"
                          for t, x in pit_state().items() if t != "t-dead"),
              "both tables to settle rounds")
        st = pit_state()
        assert sorted(st) == sorted([*TABLE_SEEDS, "t-dead"])
        dead = _wait(lambda: (lambda x: x if x["worker"]["restarts"] >= 1 else None)(
            pit_state()["t-dead"]), "the failing table's worker to be retried")
        assert dead["round_count"] == 0 and "exit code 1" in dead["worker"]["note"]
        assert "broken-camera.mp4" in dead["worker"]["note"], dead["worker"]["note"]
        for tid, x in st.items():
            if tid == "t-dead":
                continue
            assert x["status"] == "running" and x["fps"] > 0 and x["url"] == f"/tables/{tid}/"
            assert x["last_round"]["round_id"].startswith("r") and x["worker"]["restarts"] == 0
        # each table's dealer display is served under its own path, with its own rounds
        for tid in TABLE_SEEDS:
            ds = httpx.get(f"{base}/tables/{tid}/api/state", timeout=10).json()
            assert ds["table_id"] == tid and ds["last_round"]["table_id"] == tid
            assert httpx.get(f"{base}/tables/{tid}/snapshot.jpg", timeout=10).content[:2] == \
                b"\xff\xd8"
        with _browser() as browser:
            page = browser.new_page() if browser else None
            if page is not None:
                page.goto(base + "/")
                for tid in TABLE_SEEDS:
                    row = f'#pit-body tr[data-table="{tid}"]'
                    page.wait_for_selector(row, timeout=WAIT_S * 1000)
                    assert page.locator(f"{row} .feed-status").inner_text() == "running"
                    assert page.locator(f"{row} a.table-link").get_attribute("href") == \
                        f"/tables/{tid}/"
                page.screenshot(path="/tmp/paigow_pit.png")
                # the link opens the table's dealer display, which shows that table's round
                page.click('#pit-body tr[data-table="t-east"] a.table-link')
                page.wait_for_function(
                    "() => /^r\\d+/.test((document.getElementById('round-id') || {}).textContent)",
                    timeout=WAIT_S * 1000)
                assert page.locator("#table-id").inner_text() == "t-east"
                page.goto(base + "/")

            # SIGKILL t-east's worker: it is restarted, t-west keeps settling meanwhile
            victim = st["t-east"]["worker"]["pid"]
            west_before = pit_state()["t-west"]["round_count"]
            os.kill(victim, signal.SIGKILL)
            after = _wait(lambda: (lambda s: s if s["t-east"]["worker"]["restarts"] == 1
                                   and s["t-east"]["worker"]["state"] == "running"
                                   and s["t-east"]["worker"]["pid"] != victim else None)(
                pit_state()), "the killed worker to be restarted")
            note = after["t-east"]["worker"]["note"]
            assert "restarted 1x" in note and "signal 9" in note and "SIGKILL" in note, note
            east_after = after["t-east"]["round_count"]
            _wait(lambda: pit_state()["t-west"]["round_count"] > west_before + 1,
                  "the other table to keep settling")
            _wait(lambda: pit_state()["t-east"]["round_count"] > east_after,
                  "the restarted table to settle again")
            st = pit_state()
            assert st["t-west"]["worker"]["restarts"] == 0
            assert st["t-east"]["status"] == st["t-west"]["status"] == "running"
            if page is not None:
                row = '#pit-body tr[data-table="t-east"]'
                page.wait_for_function(
                    "sel => (document.querySelector(sel + ' .restart-note') || {}).textContent"
                    " && document.querySelector(sel + ' .restart-note').textContent"
                    ".includes('restarted 1x')", arg=row, timeout=WAIT_S * 1000)
                assert "SIGKILL" in page.locator(f"{row} .restart-note").inner_text()
                # the pit page redraws its rows: between two draws the row may not be there
                page.wait_for_function(
                    "sel => (document.querySelector(sel + ' .feed-status') || {}).textContent"
                    " === 'running'", arg=row, timeout=WAIT_S * 1000)
                page.screenshot(path="/tmp/paigow_pit_restarted.png")
    finally:
        if "server" in made:
            made["server"].stop()
        t.join(60)
    assert rc == {"rc": 0}
    # both workers wrote one store at once; a SIGKILL mid-session lost no committed round
    res = verify(db)
    assert res.ok, str(res)
    with AuditStore(db, create=False) as s:
        by_table = {}
        for r in s.rounds():
            by_table.setdefault(r.table_id, []).append(r.round_id)
    assert sorted(by_table) == sorted(TABLE_SEEDS)  # t-dead never stored a round
    for tid, ids in by_table.items():  # round numbering continued across the restart
        assert ids == [f"r{i:06d}" for i in range(1, len(ids) + 1)], (tid, ids)


class _browser:
    """Headless Chromium (Debian's) when present, else None (the HTTP checks still run)."""

    def __enter__(self):
        self.pw = self.browser = None
        if not os.path.exists(CHROMIUM):
            return None
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            return None
        self.pw = sync_playwright().start()
        self.browser = self.pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        return self.browser

    def __exit__(self, *exc):
        if self.browser is not None:
            self.browser.close()
        if self.pw is not None:
            self.pw.stop()


def test_a_worker_whose_file_ends_is_ended_not_restarted(two_tables):
    """A table without `loop`: its worker plays the file once (not paced), every round reaches
    the table's feed, then the worker is `ended` -- not restarted."""
    from vision.pit import Pit, TableSpec

    d, tables = two_tables
    path, fake = tables["t-east"]
    spec = TableSpec("t-east", str(path), {"stable": N_STABLE}, loop=False, realtime=False)
    with Pit([spec], detectors={"t-east": fake}, restart_delay=(0.2, 1.0)) as pit:
        st = _wait(lambda: (lambda x: x if x["worker"]["state"] == "ended" else None)(
            pit.state()["tables"][0]), "the worker to end")
        time.sleep(1.0)  # a restart would show within the back-off
        st = pit.state()["tables"][0]
    assert st["worker"]["state"] == "ended" and st["worker"]["restarts"] == 0
    assert st["status"] == "ended" and st["worker"]["last_exit"]["code"] == 0
    assert st["round_count"] == len(TABLE_SEEDS["t-east"])  # one round per deal
    assert [e["round_id"] for e in reversed(pit.feeds["t-east"].history())] == \
        ["r000001", "r000002"]


def test_a_hung_detector_service_is_restarted_with_every_worker(two_tables):
    """The pit's monitor asks its detector service whether it answers
    (DetectorService.answering); one that does not is restarted, and every running worker
    with it (their handles held the old service's queues), the table's note saying why."""
    from vision.pit import Pit, TableSpec

    d, tables = two_tables
    path, fake = tables["t-east"]
    spec = TableSpec("t-east", str(path), {"stable": N_STABLE}, loop=True, realtime=True)

    class Service:  # a detector service the test can hang (the workers use `fake`)
        def __init__(self):
            self.hung, self.restarts, self.asked = False, 0, []

        def alive(self):
            return True

        def answering(self, hang_s):
            self.asked.append(hang_s)
            return not self.hung

        def restart(self):
            self.hung, self.restarts = False, self.restarts + 1
            return self

        def handle(self, slot):
            return None

        def stop(self):
            pass

    with Pit([spec], detectors={"t-east": fake}, restart_delay=(0.2, 1.0),
             service_hang_s=7.5) as pit:
        svc = pit.service = Service()
        first = _wait(lambda: (lambda x: x if x["worker"]["state"] == "running" else None)(
            pit.state()["tables"][0]), "the worker to run")
        assert first["worker"]["restarts"] == 0 and svc.restarts == 0
        # the worker's live figures reach the pit about once a second (/api/stats)
        figures = _wait(lambda: (lambda x: x if x and x["totals"]["processed"] > 0 else None)(
            pit.table_stats("t-east")), "the worker's live figures")
        assert figures["table_id"] == "t-east" and figures["processed_fps"] > 0
        assert figures["totals"]["delivered"] >= figures["totals"]["processed"]
        assert figures["detector"]["infer_ms_mean"] is not None
        assert figures["detector"]["pending"] is None  # its own detectors: no service client
        svc.hung = True
        st = _wait(lambda: (lambda x: x if x["worker"]["restarts"] >= 1 and
                            x["worker"]["state"] == "running" else None)(
            pit.state()["tables"][0]), "the worker to be restarted")
    assert svc.restarts == 1 and set(svc.asked) == {7.5}
    assert st["worker"]["pid"] != first["worker"]["pid"]
    assert "the detector service did not answer for 7.5 s and was restarted" in \
        st["worker"]["note"], st["worker"]["note"]

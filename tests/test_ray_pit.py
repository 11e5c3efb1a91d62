"""The pit on Ray (vision.pit.ray_pit, docs/pit.md): a local cluster of two Ray nodes started by
the test (``ray start --head`` and ``ray start --address``, loopback only, stopped in teardown:
only the processes of this cluster, found by its own temp folder), two tables placed as actors,
one actor killed and re-placed by Ray, and every round shown stored exactly once in the shared
audit store (its chain verifies, round ids continue across the restart)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from helpers.children import free_port, wait_for
from fakes import GroundTruthDetectors, empty_table
from helpers.videos import write_video

from vision.synth import render as synth
from vision.audit import AuditStore, verify
from vision.pit import load_tables

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[1]
SEEDS = {"t-north": (1_000_341, 1_000_342), "t-south": (1_000_343, 1_000_344)}
SMALL = (640, 360)
WAIT_S = 240.0  # an upper bound for a loaded machine, not a speed assertion


def _free_port() -> int:
    return free_port()


def _wait(cond, what: str, timeout: float = WAIT_S):
    return wait_for(cond, what, timeout)


def _our_pids(temp_dir: str) -> list[int]:
    """Processes whose command line names this cluster's temp folder (its raylets, GCS,
    workers): the only ones the teardown stops."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if temp_dir in cmd:
            pids.append(int(d))
    return pids


@pytest.fixture(scope="module")
def two_nodes():
    ray_bin = Path(sys.executable).with_name("ray")
    temp_dir = tempfile.mkdtemp(prefix="rp", dir="/tmp")  # short: Ray's socket paths
    port = _free_port()
    # RAY_AUTH_MODE=disabled for every process of this throwaway loopback cluster: with the
    # mode unset, Ray turns token auth on in whichever process finds ~/.ray/auth_token (left
    # by any earlier local ray.init, e.g. a re-audit), and a node started without it is then
    # refused by the head ("InvalidAuthToken") -- the test must not depend on that file
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), str(ROOT / "tests")] + [p for p in os.environ.get(
            "PYTHONPATH", "").split(os.pathsep) if p]), "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_AUTH_MODE": "disabled"}
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "RAY_AUTH_MODE")}
    common = ["--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
    started = False
    try:
        subprocess.run([str(ray_bin), "start", "--head", "--port", str(port),
                        "--include-dashboard", "false", "--temp-dir", temp_dir,
                        "--min-worker-port", "0", "--max-worker-port", "0", *common],
                       env=env, check=True, capture_output=True, timeout=300)
        started = True
        subprocess.run([str(ray_bin), "start", "--address", f"127.0.0.1:{port}", *common],
                       env=env, check=True, capture_output=True, timeout=300)
        os.environ["PYTHONPATH"] = env["PYTHONPATH"]
        os.environ["RAY_AUTH_MODE"] = "disabled"
        ray.init(address=f"127.0.0.1:{port}", include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        _wait(lambda: len([n for n in ray.nodes() if n["Alive"]]) == 2, "two Ray nodes")
        yield f"127.0.0.1:{port}"
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"ray start failed: {exc.stderr.decode(errors='replace')[-2000:]}")
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if started:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for pid in _our_pids(temp_dir):
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
                time.sleep(2)
        shutil.rmtree(temp_dir, ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_ray_pit_places_tables_and_re_places_a_killed_worker(two_nodes, tmp_path):
    from vision.pit.ray_pit import RayPit

    fakes = {}
    text = "defaults:\n  audit: pit.db\n  stable: 3\n  loop: true\ntables:\n"
    for tid, seeds in SEEDS.items():
        scenes = [synth.render_table(s, size=SMALL) for s in seeds]
        empties = [empty_table(sc) for sc in scenes]
        path = write_video(tmp_path / tid, scenes, empties, codecs=(("MJPG", False),))[0]
        fakes[tid] = GroundTruthDetectors(scenes, empties, lossy=True)
        text += f"  - id: {tid}\n    source: {path.name}\n"
    (tmp_path / "tables.yaml").write_text(text)
    specs = load_tables(tmp_path / "tables.yaml")
    pit = RayPit(specs, address=two_nodes, detectors=fakes).start()
    try:
        def tables():
            return {t["table_id"]: t for t in pit.state()["tables"]}

        _wait(lambda: all(t["round_count"] >= 1 and t["worker"]["state"] == "running"
                          for t in tables().values()), "both tables to settle a round")
        # one actor per node: each holds the node's one CPU
        assert len({ray.get(a.node.remote()) for a in pit.actors.values()}) == 2
        victim = tables()["t-north"]["worker"]["pid"]
        south_before = tables()["t-south"]["round_count"]
        ray.kill(pit.actors["t-north"], no_restart=False)  # the process dies; Ray re-places it
        after = _wait(lambda: (lambda t: t if t["worker"]["restarts"] >= 1
                               and t["worker"]["state"] == "running"
                               and t["worker"]["pid"] != victim else None)(tables()["t-north"]),
                      "the killed worker to be re-placed")
        north_after = after["round_count"]
        _wait(lambda: tables()["t-north"]["round_count"] > north_after,
              "the re-placed table to settle again")
        assert tables()["t-south"]["round_count"] >= south_before
        assert tables()["t-south"]["worker"]["restarts"] == 0
    finally:
        pit.stop()
    shown = {t["table_id"]: t["round_count"] for t in pit.state()["tables"]}
    res = verify(tmp_path / "pit.db")
    assert res.ok, str(res)
    with AuditStore(tmp_path / "pit.db", create=False) as s:
        by_table: dict[str, list[str]] = {}
        for r in s.rounds():
            by_table.setdefault(r.table_id, []).append(r.round_id)
    assert sorted(by_table) == sorted(SEEDS)
    for tid, ids in by_table.items():
        # stored once: consecutive ids across the restart, none twice
        assert ids == [f"r{i:06d}" for i in range(1, len(ids) + 1)], (tid, ids)
        assert len(ids) >= shown[tid], (tid, ids, shown)  # shown only once stored

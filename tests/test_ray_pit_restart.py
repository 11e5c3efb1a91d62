"""A Ray pit's killed table actor is re-placed when nothing else holds its creation arguments
(vision.pit.ray_pit, docs/pit.md).

Ray keeps an actor's large creation arguments (here the fake detectors, which carry the table's
pictures) in its object store and frees them once the first actor is built unless something
holds them; the re-placed actor then never starts (ray-project/ray#53727). A running actor that
keeps arrays read from the store pins them, which hid this in the two-node test until a loaded
CI machine lost the race after the kill (the actor stayed "restarting" for 240 s). Here the
detectors copy what they unpickle, so nothing pins the arguments: without the pit holding them
this failed every time."""

from __future__ import annotations

import copy
import gc
import os
import time
from pathlib import Path

import pytest
from helpers.children import wait_for
from fakes import GroundTruthDetectors, empty_table
from helpers.videos import write_video

from vision.synth import render as synth
from vision.pit import load_tables

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[1]
WAIT_S = 240.0  # an upper bound for a loaded machine, not a speed assertion


class CopyingDetectors(GroundTruthDetectors):
    """The fakes, copying their arrays when unpickled (no view into Ray's object store)."""

    def __setstate__(self, state):
        self.__dict__.update(copy.deepcopy(state))


@pytest.fixture()
def local_ray(monkeypatch):
    """A one-node local Ray (2 CPUs), shut down after the test."""
    if ray.is_initialized():
        ray.shutdown()
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    # the actors unpickle the fakes: the workers need the repository and tests/ on their path
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT), str(ROOT / "tests")] + [p for p in os.environ.get(
            "PYTHONPATH", "").split(os.pathsep) if p]))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


def test_killed_actor_is_re_placed_after_its_arguments_would_be_freed(local_ray, tmp_path):
    from vision.pit.ray_pit import RayPit

    scenes = [synth.render_table(s, size=(640, 360)) for s in (1_000_345, 1_000_346)]
    empties = [empty_table(sc) for sc in scenes]
    path = write_video(tmp_path / "t1", scenes, empties, codecs=(("MJPG", False),))[0]
    (tmp_path / "tables.yaml").write_text(
        "defaults:\n  audit: pit.db\n  stable: 3\n  loop: true\ntables:\n"
        f"  - id: t1\n    source: {path.name}\n")
    fakes = {"t1": CopyingDetectors(scenes, empties, lossy=True)}
    pit = RayPit(load_tables(tmp_path / "tables.yaml"), detectors=fakes).start()
    try:
        def table():
            return pit.state()["tables"][0]

        wait_for(lambda: table()["worker"]["state"] == "running", "the table to run", WAIT_S)
        victim = table()["worker"]["pid"]
        assert victim != os.getpid()
        fakes.clear()
        gc.collect()
        time.sleep(3.0)  # Ray's reference counting frees what nothing holds
        ray.kill(pit.actors["t1"], no_restart=False)
        after = wait_for(lambda: (lambda t: t if t["worker"]["restarts"] >= 1
                                  and t["worker"]["state"] == "running"
                                  and t["worker"]["pid"] != victim else None)(table()),
                         "the killed actor to be re-placed", WAIT_S)
        assert after["worker"]["restarts"] == 1
        n = after["round_count"]
        wait_for(lambda: table()["round_count"] > n, "the re-placed table to settle again",
                 WAIT_S)
    finally:
        pit.stop()

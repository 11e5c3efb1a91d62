"""Re-audit of recorded video on Ray (`paigow reaudit`, vision/reaudit.py): four rendered round
videos, each first run live (vision.session.run, the loop of `paigow run`, into a live audit
store), then re-read by `paigow reaudit` as Ray tasks on two Ray workers into a second store:
the same rounds are recorded; `--compare` finds no difference, then flags a round whose
recorded payout was altered in the live store. Detectors return the renderer's ground truth
(tests/fakes.py). One local Ray per module (2 CPUs, no dashboard)."""

from __future__ import annotations

import functools
import json
import os
import sqlite3
from pathlib import Path

import pytest
from fakes import GroundTruthDetectors
from helpers.videos import N_STABLE, SMALL, empty_table, write_video

from scoring.errors import InputError
from vision.synth import render as synth
from vision.audit import AuditStore, verify
from vision.cli import main
from vision.reaudit import compare_rounds, recordings
from vision.session import run

ROOT = Path(__file__).resolve().parents[1]
SEEDS = (1_000_321, 1_000_322, 1_000_323, 1_000_324)
_IGNORED = ("time", "source", "source_file")  # when / from where it was read, not what


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    # the Ray workers import the project and the pickled test doubles (tests/fakes.py)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), str(ROOT / "tests")] + [p for p in os.environ.get("PYTHONPATH", "").split(
            os.pathsep) if p])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    d = tmp_path_factory.mktemp("recordings")
    scenes = [synth.render_table(s, size=SMALL) for s in SEEDS]
    empties = [empty_table(sc) for sc in scenes]
    paths = [write_video(d / f"table{i + 1}", [sc], [em])[0]
             for i, (sc, em) in enumerate(zip(scenes, empties))]
    return d, paths, GroundTruthDetectors(scenes, empties, lossy=True)


def _what(ev: dict) -> dict:
    return {k: v for k, v in ev.items() if k not in _IGNORED}


def test_recordings_expand_folders_and_name_bad_paths(tmp_path):
    (tmp_path / "b.mp4").write_bytes(b"x")
    (tmp_path / "a.avi").write_bytes(b"x")
    (tmp_path / "notes.txt").write_text("x")
    assert [p.name for p in recordings([tmp_path])] == ["a.avi", "b.mp4"]
    with pytest.raises(InputError, match="does not exist"):
        recordings([tmp_path / "missing.mp4"])
    with pytest.raises(InputError, match="named twice"):
        recordings([tmp_path, tmp_path / "a.avi"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="holds no video"):
        recordings([tmp_path / "empty"])


def test_reaudit_bad_input_is_exit_2(tmp_path, capsys):
    assert main(["reaudit", str(tmp_path / "none.mp4"), "--audit", str(tmp_path / "a.db")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["reaudit", str(tmp_path)]) == 2
    assert "--audit" in capsys.readouterr().err
    assert main(["reaudit", str(tmp_path), "--compare", str(tmp_path / "none.db")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_compare_names_each_disagreement():
    a = {"table_id": "t", "round_id": "r000001", "settled": True,
         "positions": {"dealer": {"tiles": ["6-6"], "net": "1"}, "1": {"net": "-1"}},
         "bank": {"net": "1"}}
    b = json.loads(json.dumps(a))
    b["positions"]["1"]["net"] = "0.95"
    b["bank"]["net"] = "-0.95"
    c = dict(a, round_id="r000002")
    got = [(d["kind"], d["round_id"], d["position"], d["field"], d["live"], d["reread"])
           for d in compare_rounds([a, c], [b])]
    assert got == [("field", "r000001", "1", "net", "0.95", "-1"),
                   ("bank", "r000001", None, "net", "-0.95", "1"),
                   ("missing_live", "r000002", None, None, None, True)]


@pytest.mark.slow
def test_reaudit_on_ray_records_what_run_recorded_and_compare_flags_an_altered_payout(
        videos, ray_local, tmp_path, monkeypatch, capsys):
    import vision.reaudit as mod

    d, paths, fake = videos
    live_db, re_db = tmp_path / "live.db", tmp_path / "reaudit.db"
    for p in paths:  # live: the loop of `paigow run VIDEO --audit live.db --table-id STEM`
        run(str(p), audit=str(live_db), table_id=p.stem, n_stable=N_STABLE, progress=False,
            tile_detector=fake, pip_detector=fake)
    with AuditStore(live_db, create=False) as s:
        live = [r.payload for r in s.rounds()]
    assert sorted({e["table_id"] for e in live}) == ["table1", "table2", "table3", "table4"]
    assert sum(e["settled"] for e in live) >= 3  # there are settled payouts to compare

    monkeypatch.setattr(mod, "reaudit", functools.partial(mod.reaudit, detectors=fake))
    rc = main(["reaudit", str(d), "--audit", str(re_db), "--workers", "2", "--stable",
               str(N_STABLE), "--compare", str(live_db), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["differences"] == [], out["differences"][:3]
    assert [Path(r["path"]).name for r in out["recordings"]] == [p.name for p in paths]
    assert verify(re_db).ok
    with AuditStore(re_db, create=False) as s:
        reread = [r.payload for r in s.rounds()]
    # the same rounds, in the same order, with the same tiles, hands, results and money
    assert [_what(e) for e in reread] == [_what(e) for e in live]

    # alter the payout recorded live for one seat of one round: --compare flags that round
    victim = next(e for e in live if e["table_id"] == "table3" and e["settled"])
    seat = next(p for p, v in victim["positions"].items() if v.get("net") not in (None, "0")
                and v.get("role") == "player")
    old = victim["positions"][seat]["net"]
    altered = json.loads(json.dumps(victim))
    altered["positions"][seat]["net"] = "100"
    c = sqlite3.connect(str(live_db), isolation_level=None)
    c.execute("DROP TRIGGER paigow_rounds_no_update")
    c.execute("UPDATE paigow_rounds SET payload = ? WHERE table_id = ? AND round_id = ?",
              (json.dumps(altered, sort_keys=True, separators=(",", ":")), "table3",
               victim["round_id"]))
    c.close()
    # the live store is verified first: the altered record breaks its chain, so it is read
    # only with --force (the comparison then carries store_broken, docs/reaudit.md)
    rc = main(["reaudit", *map(str, paths), "--workers", "2", "--stable", str(N_STABLE),
               "--compare", str(live_db), "--json", "--no-progress", "--force"])
    diffs = json.loads(capsys.readouterr().out)["differences"]
    assert rc == 1
    assert [(x["kind"], x["table_id"], x["round_id"], x["position"], x["field"], x["live"],
             x["reread"]) for x in diffs] == \
        [("field", "table3", victim["round_id"], seat, "net", "100", old)]
    assert not verify(live_db).ok  # the chain also names the altered record

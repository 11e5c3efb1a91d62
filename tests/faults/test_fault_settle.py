"""Faults in settling what the camera read: a stand-in face chosen for an unread tile must
never count as a tile of the set, and any exception raised while settling a round becomes a
round not settled, with the reason and an alert -- never an exit 2, a stopped feed or a dead
pit worker (issue 23; docs/round-event.md, alerts).

The slow test runs every picture of ../shared/scenes and ../shared/scenes_flush through
``paigow run`` with a layout drawn around the truth seats (one Python process, the models
loaded once) and asserts that none ends early."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from scoring.errors import InputError
from scoring.settle import settle_round
from vision.recognition.decode import TileRead
from vision.table.rounds import FrameHeader, RoundTracker, build_positions

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"


def _reads(k: int, faces: list[str | None]) -> list[TileRead]:
    """Four tiles lying as two hands at place ``k`` (None: a tile not read)."""
    out = []
    for i, face in enumerate(faces):
        x = 1000.0 * k + (0 if i < 2 else 300) + 60 * (i % 2)
        poly = np.array([[x, 0], [x + 50, 0], [x + 50, 100], [x, 100]], np.float32)
        box = np.array([x, 0, x + 50, 100], np.float32)
        out.append(TileRead(face, "face_up", 0.99, poly, box) if face else
                   TileRead(None, "unknown", 0.3, poly, box, reason="not read"))
    return out


#: the dealer holds the Teen pair over the Day pair: no seat below can win or push whatever
#: its unread tile is, so both open seats settle with a stand-in. The first face still
#: possible (scoring.tiles order) is 4-4 for both, and a 4-4 is seen at seat 4: three 4-4
#: counted if the stand-ins were tiles of the set.
DEAL = {"dealer": ["6-6", "6-6", "1-1", "1-1"],
        "4": ["4-4", "2-6", "3-5", None],
        "7": ["2-5", "3-4", "1-5", None]}


def _positions(deal=DEAL):
    return build_positions({p: _reads(k, f) for k, (p, f) in enumerate(deal.items())})


def test_two_stand_ins_of_one_face_are_no_tiles_of_the_set():
    rnd = RoundTracker(n_stable=1).update(_positions(), FrameHeader(index=0))
    assert rnd is not None and rnd.result is not None, rnd and rnd.reason
    assert rnd.final == ["dealer", "4", "7"]
    assert {p: rnd.result.seats[p].result for p in ("4", "7")} == {"4": "lose", "7": "lose"}
    assert set(rnd.unread) == {"4", "7"}
    assert not [a for a in rnd.alerts if a.kind in ("duplicate_face", "settle_error")]


def test_settle_round_leaves_a_stand_in_out_of_the_set_check():
    hands = {"dealer": "6-6 6-6 / 1-1 1-1", "4": "4-4 2-6 / 3-5 4-4", "7": "2-5 3-4 / 1-5 4-4"}
    with pytest.raises(InputError, match="4-4 appears 3 times"):
        settle_round(hands)
    res = settle_round(hands, stand_in={"4": "4-4", "7": "4-4"})
    assert res.seats["4"].result == "lose" and res.seats["7"].result == "lose"
    # only the stand-in tile is left out: the tiles seen still count
    with pytest.raises(InputError, match="6-6 appears 3 times"):
        settle_round({"dealer": "6-6 6-6 / 1-1 1-1", "4": "6-6 2-6 / 3-5 4-4"},
                     stand_in={"4": "4-4"})
    with pytest.raises(InputError, match="stand-in face '5-5'"):
        settle_round(hands, stand_in={"4": "5-5"})


def test_any_exception_while_settling_is_a_round_not_settled(monkeypatch):
    import vision.table.rounds as table

    def broken(*a, **k):
        raise ZeroDivisionError("a reading nobody foresaw")

    monkeypatch.setattr(table, "settle_round", broken)
    deal = {"dealer": ["6-6", "6-6", "1-1", "1-1"], "1": ["4-4", "2-6", "3-5", "2-5"]}
    rnd = RoundTracker(n_stable=1).update(_positions(deal), FrameHeader(index=3))
    assert rnd is not None and rnd.result is None and rnd.final == []
    assert rnd.reason == "settlement failed: a reading nobody foresaw"
    assert rnd.not_settled == {"dealer": rnd.reason, "1": rnd.reason}
    assert [a.kind for a in rnd.alerts] == ["settle_error"]
    assert rnd.frame == FrameHeader(index=3)
    # the round event is still built and valid
    from vision.table.events import round_event

    ev = round_event(rnd, "r000001", table_id="t", source="s", frame_index=3,
                     model_version="m")
    assert ev["settled"] is False and ev["reason"] == rnd.reason
    assert ev["positions"]["1"]["result"] == "not_settled"


def _layout_from_truth(rec: dict) -> dict:
    """One polygon per truth seat, as scripts/eval_scenes.py draws it (the convex hull of its
    tiles' corners grown by 1.3, two overlapping ones shrunk until they do not: a layout
    ``paigow run`` accepts)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "eval_scenes", Path(__file__).resolve().parents[2] / "scripts" / "eval_scenes.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.layout_from_truth(rec)


def _scene_records():
    out = []
    for folder in ("scenes", "scenes_flush"):
        tp = SHARED / folder / "truth.jsonl"
        if tp.is_file():
            out += [(folder, json.loads(line)) for line in tp.read_text().splitlines()
                    if line.strip()]
    return out


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "scenes_flush" / "truth.jsonl").is_file(),
                    reason="the shared validation scenes are not on this machine")
def test_no_shared_scene_ends_a_run_early(tmp_path, monkeypatch, capsys):
    """Every shared scene, with a layout drawn around its truth seats: exit 0 and one round
    event (settled or not, with the reason) -- no reading ends the run."""
    import yaml

    import vision.recognition.engine as pipeline
    from vision.cli import main

    monkeypatch.setenv("YOLO_OFFLINE", "1")
    monkeypatch.setattr(pipeline, "load_detectors", functools.lru_cache(None)(
        pipeline.load_detectors))
    monkeypatch.setattr(pipeline, "load_second_tile_detector", functools.lru_cache(None)(
        pipeline.load_second_tile_detector))
    ended: list[str] = []
    for folder, rec in _scene_records():
        lay = tmp_path / f"{folder}_{Path(rec['image']).stem}.yaml"
        lay.write_text(yaml.safe_dump(_layout_from_truth(rec)))
        rc = main(["run", str(SHARED / folder / rec["image"]), "--layout", str(lay), "--json",
                   "--no-progress"])
        out, err = capsys.readouterr()
        events = [json.loads(x) for x in out.splitlines() if x.startswith('{"')]
        rounds = [e for e in events if "positions" in e]
        if rc != 0 or len(rounds) != 1:
            ended.append(f"{folder}/{rec['image']}: rc {rc}, {len(rounds)} round(s), "
                         f"{err.strip().splitlines()[-1:] }")
        elif not rounds[0]["settled"]:
            assert rounds[0]["reason"], f"{folder}/{rec['image']}: not settled, no reason"
        print(f"{folder}/{rec['image']} rc={rc}", file=sys.__stderr__, flush=True)
    assert not ended, ended

"""scripts/eval_ceiling.py: which seats a covered tile decides (issue 20's denominator).

A hand-made scene (no ../shared data): the banker's high hand is a pair of Mooy (5-5 5-5), which
beats every player's high hand here, and its low hand holds a covered 1-3 beside a 2-5 (a
pair above any low hand it can make, so no face re-sets it). Seat 2 (low 2-2 5-6, 5 points)
pushes with the 1-3 (the banker's low is 1 point) but loses with a 1-1 (9 points) and, seeing
the 3 half, with a 3-4 (a pair of mixed sevens) or a 3-6 (6 points): whichever half a reading
sees, a covered tile decides the seat. Seat 3 (low 3-3 1-4, 1 point) loses its low hand to
every face with a 1 the tile could be (1 point with a Gor above the Chong, or more): it loses
whatever the tile, so it stays settleable.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import eval_ceiling as C  # noqa: E402

sys.path.pop(0)


def _tile(face, hand, occluded=False):
    return {"face": face, "hand": hand, "occluded": occluded,
            "polygon": [[0, 0], [1, 0], [1, 2], [0, 2]]}


def _seat(seat, high, low, covered=()):
    return {"seat": seat, "hands": {"high": high, "low": low},
            "tiles": [_tile(f, "high", f in covered) for f in high]
            + [_tile(f, "low", f in covered) for f in low]}


def _scene():
    return {"image": "x.jpg", "style": "render_mine", "profile": "PA", "commission": 0.05,
            "seats": [_seat("dealer", ["5-5", "5-5"], ["1-3", "2-5"], covered=("1-3",)),
                      _seat(2, ["6-6", "4-5"], ["2-2", "5-6"]),
                      _seat(3, ["4-6", "1-5"], ["3-3", "1-4"])],
            "settlement": {"2": "push", "3": "lose"}}


def test_a_covered_banker_tile_decides_one_seat_and_not_the_other():
    rec = _scene()
    two = C.seat_ceiling(rec, "2")
    assert two["decided_by_cover"] and two["covered"] == 1 and two["truth"][0] == "push"
    assert set(two["proof"]) == {"1", "3"}
    for pair in two["proof"].values():  # two fillings, two different results
        assert len({p["outcome"][0] for p in pair}) == 2
        assert "1-3" in {p["fill"][0] for p in pair}
    assert {p["fill"][0]: p["outcome"][0] for p in two["proof"]["1"]} == {"1-1": "lose",
                                                                        "1-3": "push"}
    three = C.seat_ceiling(rec, "3")
    assert not three["decided_by_cover"] and three["truth"][0] == "lose"
    assert three["settled_seeing"] == [1]


def test_the_denominator_leaves_out_only_the_decided_seats_the_reading_did_not_settle(tmp_path):
    (tmp_path / "truth.jsonl").write_text(json.dumps(_scene()) + "\n")
    res = C.evaluate(tmp_path)
    assert res["mine"]["seats"] == 2 and res["mine"]["decided_by_cover"] == 1
    assert [(d["image"], d["seat"]) for d in res["mine"]["excluded"]] == [("x.jpg", "2")]
    assert res["all"]["settleable"] == 1 and res["all"]["mismatch"] == []
    # the reading settled seat 2 anyway (it saw more than a half): it stays in
    ev = {k: {"seats": {"settled": 2}, "unsettled": []} for k in ("mine", "all")}
    res = C.evaluate(tmp_path, ev)
    assert res["all"]["settleable"] == 2 and res["all"]["settled_of_settleable_pct"] == 100.0
    ev = {k: {"seats": {"settled": 1}, "unsettled": [{"image": "x.jpg", "seat": "2"}]}
          for k in ("mine", "all")}
    res = C.evaluate(tmp_path, ev)
    assert res["all"]["settleable"] == 1 and res["all"]["settled_of_settleable_pct"] == 100.0


def test_a_truth_that_scoring_settles_otherwise_is_reported(tmp_path):
    rec = _scene()
    rec["settlement"]["3"] = "win"
    (tmp_path / "truth.jsonl").write_text(json.dumps(rec) + "\n")
    assert C.evaluate(tmp_path)["all"]["mismatch"] == ["x.jpg seat 3: truth win, scoring lose"]


def test_bad_input_is_one_line_and_exit_code_2(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "eval_ceiling.py"),
                        str(tmp_path / "none"), "--json"], capture_output=True, text=True)
    assert r.returncode == 2
    assert json.loads(r.stdout) == {"error": f"no truth.jsonl in {str(tmp_path / 'none')!r}"}
    (tmp_path / "truth.jsonl").write_text(json.dumps(_scene()) + "\n")
    (tmp_path / "old.json").write_text(json.dumps({"mine": {"seats": {"settled": 1}}}))
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "eval_ceiling.py"),
                        str(tmp_path), "--eval", str(tmp_path / "old.json")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "'unsettled'" in r.stderr

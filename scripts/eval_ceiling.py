#!/usr/bin/env python
"""The player seats of a scene folder that no legitimate reading can settle: a covered tile
decides them.

Issue 20's acceptance counts settled seats over the seats a reading could settle: "a seat that
no legitimate reading can settle -- a covered tile that decides it -- is listed and excluded
from the denominator, with the proof". This script gives that list from the folder's truth
alone (``truth.jsonl`` in the ``../shared/scenes`` format), with no model run.

The proof for one player seat (docs/rules.md sections 1, 3 and 5). When the dealer banks, a
seat's result depends only on its own four tiles and the banker's. Take the tiles the truth
marks ``occluded`` (partly covered, by a hand or a chip) among those eight. A reading may see
at most one half of a covered tile (a tile whose both halves show is not covered), and never
its other half; the faces such a tile can then be are every face holding that half which the
set still has a copy of, after the face-up tiles on the whole table that are not covered (the
same count :mod:`vision.table.open_tile` uses). The seat is *decided by a covered tile* when,
for every choice of the half seen on each covered tile, two of those faces (two fillings, for
two covered tiles) give the seat a different result, net or commission
(:func:`scoring.settle.settle_round` with the scene's rule profile and commission). No reading
that sees at most one half of each covered tile can then settle the seat without guessing. A
covered tile may show more than one half (a half and a few spots of the other), and a reading
that uses those spots may still settle the seat (:func:`vision.table.open_tile.shown_spots`):
so with ``--eval`` a seat is left out of the denominator only where a covered tile decides it
*and* the reading did not settle it; a seat settled by some choice of half, or settled by the
reading, stays in.

Every other seat is checked against the truth's own settlement (``mismatch``: should be 0; a
mismatch means the truth and :mod:`scoring` disagree, and is printed).

Usage::

    .venv/bin/python scripts/eval_ceiling.py ../shared/scenes_flush [--eval EVAL.json] [--json]

``--eval`` takes the JSON of ``scripts/eval_scenes.py FOLDER --json`` and adds the settled
seats over the settleable ones per style. Exit code 0; 2 for bad arguments (one line naming
the value; JSON under ``--json``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from itertools import product
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eval_scenes import load_truth  # noqa: E402  (this folder is on sys.path)
from scoring.errors import InputError  # noqa: E402
from scoring.setting import make_setting  # noqa: E402
from scoring.settle import settle_round  # noqa: E402
from scoring.tiles import FACES, TILES_BY_FACE  # noqa: E402


def _hands(seat: dict) -> dict[str, list[str]]:
    """``{"high": [face, face], "low": [face, face]}`` of a truth seat (a copy)."""
    return {k: list(v) for k, v in seat["hands"].items()}


def _covered(seat: dict) -> list[tuple[str, int, str]]:
    """(hand, index in the hand, face) of each covered tile of a truth seat.

    The truth lists a seat's tiles with their hand; the n-th tile of a hand with that face is
    the hand's entry with that face (a hand may hold the face twice: a pair)."""
    out = []
    taken: Counter = Counter()
    for t in seat["tiles"]:
        hand = seat["hands"][t["hand"]]
        idx = [i for i, f in enumerate(hand) if f == t["face"]][taken[(t["hand"], t["face"])]]
        taken[(t["hand"], t["face"])] += 1
        if t.get("occluded"):
            out.append((t["hand"], idx, t["face"]))
    return out


def _outcome(rec: dict, banker: dict, seat: dict, seat_id: str) -> tuple:
    """(result, net, commission) of one player seat against the banker's hands (text)."""
    res = settle_round(
        {"dealer": make_setting(banker["high"], banker["low"]),
         seat_id: make_setting(seat["high"], seat["low"])},
        rules=rec.get("profile", "PA"), commission=str(rec["commission"]))
    s = res.seats[seat_id]
    return (s.result, str(s.net), str(s.commission))


def seat_ceiling(rec: dict, seat_id: str) -> dict:
    """Whether a covered tile decides one player seat of a scene (module docstring).

    Returns:
        ``{"covered": n, "decided_by_cover": bool, "truth": outcome, "proof": {...}}``:
        ``proof`` (only where decided) maps each half choice to two fillings with different
        outcomes.
    """
    seats = {str(s["seat"]): s for s in rec["seats"]}
    dealer, mine = seats["dealer"], seats[seat_id]
    covers = [("dealer", *c) for c in _covered(dealer)] + [(seat_id, *c) for c in _covered(mine)]
    truth = _outcome(rec, _hands(dealer), _hands(mine), seat_id)
    if not covers:
        return {"covered": 0, "decided_by_cover": False, "truth": truth}
    shown = Counter(t["face"] for s in rec["seats"] for t in s["tiles"] if not t.get("occluded"))
    left = {f.face: f.copies - shown[f.face] for f in FACES}
    halves = [sorted({TILES_BY_FACE[c[3]].low, TILES_BY_FACE[c[3]].high}) for c in covers]
    proof = {}
    for seen in product(*halves):
        options = [[f.face for f in FACES if h in (f.low, f.high) and left[f.face] > 0]
                   for h in seen]
        outcomes: dict[tuple, tuple] = {}
        for fill in product(*options):
            if any(n > left[f] for f, n in Counter(fill).items()):
                continue
            hands = {"dealer": _hands(dealer), seat_id: _hands(mine)}
            for (pos, hand, idx, _), face in zip(covers, fill):
                hands[pos][hand][idx] = face
            outcomes.setdefault(_outcome(rec, hands["dealer"], hands[seat_id], seat_id), fill)
        if len(outcomes) == 1:
            return {"covered": len(covers), "decided_by_cover": False, "truth": truth,
                    "settled_seeing": list(seen)}
        two = list(outcomes.items())[:2]
        proof["/".join(map(str, seen))] = [
            {"fill": list(fill), "outcome": list(out)} for out, fill in two]
    return {"covered": len(covers), "decided_by_cover": True, "truth": truth, "proof": proof}


def evaluate(folder: Path, eval_json: dict | None = None) -> dict:
    """Per style (and ``all``): player seats, those a covered tile decides, those left out
    (``excluded``, with the proof: every such seat, or with ``eval_json`` those the reading did
    not settle), the settleable rest, truth mismatches; with ``eval_json`` (eval_scenes JSON)
    the settled seats over the settleable ones.

    Raises:
        InputError: for a folder without ``truth.jsonl``, or ``eval_json`` without a style's
            per-seat ``unsettled`` list.
    """
    styles: dict[str, dict] = defaultdict(lambda: {"seats": 0, "decided_by_cover": [],
                                                   "mismatch": []})
    for rec in load_truth(folder):
        st = styles[rec["style"].removeprefix("render_")]
        for seat_id, result in rec["settlement"].items():
            st["seats"] += 1
            c = seat_ceiling(rec, str(seat_id))
            if c["decided_by_cover"]:
                st["decided_by_cover"].append({"image": rec["image"], "seat": seat_id,
                                               "proof": c["proof"]})
            elif c["truth"][0] != result:
                st["mismatch"].append(f"{rec['image']} seat {seat_id}: truth {result}, "
                                      f"scoring {c['truth'][0]}")
    out = {}
    names = sorted(styles)
    for name in names + ["all"]:
        group = [styles[n] for n in (names if name == "all" else [name])]
        seats = sum(g["seats"] for g in group)
        decided = [d for g in group for d in g["decided_by_cover"]]
        excluded = decided
        row = {"seats": seats, "decided_by_cover": len(decided)}
        if eval_json is not None:
            ev = eval_json.get(name)
            if ev is None or "unsettled" not in ev:
                raise InputError(f"--eval has no per-seat 'unsettled' list for {name!r} "
                                 "(run scripts/eval_scenes.py FOLDER --json again)")
            open_ = {(u["image"], str(u["seat"])) for u in ev["unsettled"]}
            excluded = [d for d in decided if (d["image"], str(d["seat"])) in open_]
            row["settled"] = int(ev["seats"]["settled"])
        row.update({"excluded": excluded, "settleable": seats - len(excluded),
                    "mismatch": [m for g in group for m in g["mismatch"]]})
        if "settled" in row:
            row["settled_of_settleable_pct"] = round(
                100 * row["settled"] / max(row["settleable"], 1), 1)
        out[name] = row
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="folder with truth.jsonl (../shared/scenes format)")
    ap.add_argument("--eval", type=Path, default=None,
                    help="JSON of scripts/eval_scenes.py FOLDER --json (adds settled / settleable)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    try:
        ev = None
        if args.eval is not None:
            try:
                ev = json.loads(args.eval.read_text())
            except (OSError, ValueError) as exc:
                raise InputError(f"--eval {str(args.eval)!r} is not eval_scenes JSON: {exc}")
        res = evaluate(args.folder, ev)
    except InputError as exc:
        print(json.dumps({"error": str(exc)}) if args.json else f"error: {exc}",
              file=sys.stdout if args.json else sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    for name, r in res.items():
        extra = (f", settled {r['settled']} / {r['settleable']} ({r['settled_of_settleable_pct']} %)"
                 if "settled" in r else "")
        print(f"{name:12s} seats {r['seats']}, a covered tile decides {r['decided_by_cover']}, "
              f"left out {len(r['excluded'])}, settleable {r['settleable']}{extra}, "
              f"truth mismatches {len(r['mismatch'])}")
        if name != "all":
            for d in r["excluded"]:
                print(f"    left out {d['image']} seat {d['seat']}: " + "; ".join(
                    f"seeing {k}: {' '.join(p[0]['fill'])} -> {p[0]['outcome'][0]} but "
                    f"{' '.join(p[1]['fill'])} -> {p[1]['outcome'][0]}"
                    for k, p in d["proof"].items()))
            for m in r["mismatch"]:
                print(f"    MISMATCH {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

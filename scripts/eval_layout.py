#!/usr/bin/env python
"""Layout proposal on tables the project did not draw: propose, then settle with it.

For every scene of a folder in the ``../shared/scenes`` format (``truth.jsonl`` + images; see
that folder's README):

1. ``paigow layout propose SCENE`` from the picture alone. Where the table's shape does not
   tell the dealer (the command asks for ``--dealer-at``), the scene is counted under
   ``asked`` with the reason, and proposed again with ``--dealer-at`` at the truth dealer's
   tiles (the fact a user gives);
2. ``paigow run SCENE --layout PROPOSED``; each settled position is matched to a dealt seat by
   its four faces (a position settled with one tile unread, ``vision.table.open_tile``: by its three
   read faces, when one dealt seat alone holds them). A player seat is **right** when a
   settled position holds its four faces,
   the banker's position holds the dealer's four faces and the result equals the truth's;
   **wrong** when settled otherwise (another result, a banker with other tiles, or four faces
   that are no dealt seat's) -- the one outcome that must never happen.

Figures per style: scenes, scenes proposed from the picture alone, scenes asking for the
dealer, player seats, settled right and wrong (from the picture alone, and with the dealer
given where asked), groups of tiles left out (listed by the proposal); and, in process,
``paigow run SCENE`` without a layout on the same reading: scenes with a round event, player
seats settled right and wrong.

By default each scene is read once in this process (``vision.pipeline.Pipeline``, still
image) and that reading serves both the proposal (``propose_from_reads``) and the run with the
proposed layout (the same ``Pipeline`` table stage ``paigow run`` uses, fed the same reads);
``--command`` runs the two real commands per scene instead (reads each picture twice). The
data are read at run time and never copied or fitted to.

Usage::

    .venv/bin/python scripts/eval_layout.py ../shared/scenes [--limit N] [--json] [--command]
        [--cache DIR]

Exit code 0; 2 for bad input (missing folder or truth file).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def load_truth(folder: Path) -> list[dict]:
    from scoring.errors import InputError

    tp = folder / "truth.jsonl"
    if not tp.is_file():
        raise InputError(f"no truth.jsonl in {folder}")
    return [json.loads(x) for x in tp.read_text().splitlines() if x.strip()]


def dealer_point(rec: dict) -> list[float]:
    """The truth dealer's tiles' centre (px): the fact a user gives with --dealer-at."""
    d = next(s for s in rec["seats"] if str(s["seat"]) == "dealer")
    return np.mean([np.mean(t["polygon"], 0) for t in d["tiles"]], 0).round(1).tolist()


def faces_of(seat: dict) -> tuple:
    return tuple(sorted(seat["hands"]["high"] + seat["hands"]["low"]))


def score_event(rec: dict, event: dict | None) -> dict:
    """Seat outcomes of one scene's round event against its truth (module docstring)."""
    c = Counter()
    wrong = []
    truth = {str(s["seat"]): faces_of(s) for s in rec["seats"]}
    players = {s: f for s, f in truth.items() if s != "dealer"}
    c["seats"] = len(players)
    if not event:
        return {"counts": c, "wrong": wrong}
    pos = event["positions"]
    banker = pos.get(event["banker_position"], {})
    held = tuple(sorted(f or "?" for f in banker.get("tiles", ())))
    # the banker settled with one tile unread (vision.table.open_tile: every face it could be gives
    # the same results) holds the dealer's tiles when its three read faces are the dealer's
    banker_ok = held == truth["dealer"] or (
        len(held) == 4 and held.count("?") == 1
        and not Counter(x for x in held if x != "?") - Counter(truth["dealer"]))
    by_faces = {f: s for s, f in players.items()}
    for p, o in pos.items():
        if p == event["banker_position"] or o.get("result") not in ("win", "lose", "push"):
            continue
        f = tuple(sorted(x or "?" for x in o["tiles"]))
        seat = by_faces.get(f)
        if seat is None and "?" in f and len(f) == 4:
            # settled with a tile unread (vision.table.open_tile): the seat whose four faces hold
            # the three read ones, when only one does
            known = Counter(x for x in f if x != "?")
            cands = [s for s, faces in players.items() if not known - Counter(faces)]
            seat = cands[0] if len(cands) == 1 else None
        if seat is None:
            c["wrong"] += 1
            wrong.append(f"{rec['image']}: position {p} settled with {f}, no dealt seat's tiles")
        elif not banker_ok or o["result"] != rec["settlement"][seat]:
            c["wrong"] += 1
            wrong.append(f"{rec['image']}: seat {seat} (position {p}) {o['result']}, truth "
                         f"{rec['settlement'][seat]}" + ("" if banker_ok else
                                                         " (banker holds other tiles)"))
        else:
            c["right"] += 1
    return {"counts": c, "wrong": wrong}


def _in_process(folder: Path, rec: dict, pipe, dealer_at=None, reads=None, cache=None):
    """``(proposal dict | None, why asked | None, event with the proposed layout | None, reads,
    event without a layout | None)`` reading the scene once (the last only without
    ``dealer_at``)."""
    import cv2

    from scoring.errors import InputError
    from vision.table.propose import DealerUnknown, propose_from_reads
    from vision.pipeline import Pipeline
    from vision.recognition.engine import Reads
    from vision.table.rounds import Layout

    img = cv2.imread(str(folder / rec["image"]), cv2.IMREAD_COLOR)
    if reads is None and cache is not None:
        import pickle

        f = cache / (Path(rec["image"]).stem + ".reads.pkl")
        if f.is_file():
            reads = pickle.loads(f.read_bytes())
        else:
            reads = list(pipe.engine.read(img, "still"))
            cache.mkdir(parents=True, exist_ok=True)
            f.write_bytes(pickle.dumps(reads))
    if reads is None:
        reads = list(pipe.engine.read(img, "still"))
    size = (img.shape[1], img.shape[0])
    if dealer_at is None:  # `paigow run SCENE` without a layout, the same reading
        bare = Pipeline(tile_detector=pipe.engine.tile_detector,
                        pip_detector=pipe.engine.pip_detector, n_stable=1, draw=False)
        bare.still_images = True
        bare.engine.read = lambda image, mode: Reads(tuple(reads))
        _, res = bare.process(img)
        fl = bare.flush()
        bare_event = res.event or (fl.event if fl is not None else None)
    else:
        bare_event = None
    try:
        layout, info, left = propose_from_reads(reads, size, dealer_at=dealer_at)
    except DealerUnknown as exc:
        return None, str(exc), None, reads, bare_event
    except InputError as exc:
        return None, f"failed: {exc}", None, reads, bare_event
    run = Pipeline(tile_detector=pipe.engine.tile_detector,
                   pip_detector=pipe.engine.pip_detector, layout=Layout.from_dict(layout),
                   n_stable=1, draw=False)
    run.still_images = True
    run.engine.read = lambda image, mode: Reads(tuple(reads))
    _, res = run.process(img)
    ev = res.event
    if ev is None:
        fl = run.flush()
        ev = fl.event if fl is not None else None
    return {"layout": layout, "positions": info, "left_out": left}, None, ev, reads, bare_event


def _by_command(folder: Path, rec: dict, tmp: Path, dealer_at=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    lay = tmp / (Path(rec["image"]).stem + ".yaml")
    cmd = [sys.executable, "-m", "vision.cli", "layout", "propose", str(folder / rec["image"]),
           "--out", str(lay), "--json"]
    if dealer_at is not None:
        cmd += ["--dealer-at", f"{dealer_at[0]},{dealer_at[1]}"]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    out = json.loads(p.stdout) if p.stdout.strip() else {}  # one JSON document
    if p.returncode != 0:
        err = out.get("error", p.stderr.strip())
        return None, (err if "--dealer-at" in err else f"failed: {err}"), None, None
    p = subprocess.run([sys.executable, "-m", "vision.cli", "run", str(folder / rec["image"]),
                        "--layout", str(lay), "--json", "--no-progress"],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    events = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    return out, None, (events[-1] if events else None), None


def evaluate(folder: Path, limit: int | None = None, command: bool = False,
             cache: Path | None = None) -> dict:
    """Per-style figures (module docstring) and per-scene lines."""
    from vision import MODELS_DIR
    from vision.pipeline import Pipeline

    recs = load_truth(folder)[:limit]
    pipe = None
    if not command:
        pipe = Pipeline(models_dir=MODELS_DIR, n_stable=1, draw=False)
        pipe.still_images = True
    per = defaultdict(Counter)
    scenes, wrong = [], []
    with tempfile.TemporaryDirectory() as td:
        for rec in recs:
            style = rec["style"]
            bare = None
            if command:
                prop, asked, ev, _ = _by_command(folder, rec, Path(td))
            else:
                prop, asked, ev, reads, bare = _in_process(folder, rec, pipe, cache=cache)
            c = per[style]
            c["scenes"] += 1
            line = {"image": rec["image"], "style": style, "players": rec["n_players"]}
            if not command:
                s0 = score_event(rec, bare)
                c["no_layout_events"] += bare is not None
                for k in ("right", "wrong"):
                    c["no_layout_" + k] += s0["counts"][k]
                wrong += [f"(no layout) {w}" for w in s0["wrong"]]
                line.update(no_layout_right=s0["counts"]["right"],
                            no_layout_wrong=s0["counts"]["wrong"])
            if prop is not None:
                c["proposed"] += 1
                c["left_out_groups"] += len(prop["left_out"])
                s = score_event(rec, ev)
                for k in ("seats", "right", "wrong"):
                    c[k] += s["counts"][k]
                    c["given_" + k] += s["counts"][k]
                wrong += s["wrong"]
                line.update(proposal="picture", positions=list(prop["layout"]["positions"]),
                            left_out=[g["why"] for g in prop["left_out"]], **s["counts"])
            else:
                c["asked" if "--dealer-at" in asked else "failed"] += 1
                c["seats"] += rec["n_players"]
                line.update(asked=asked)
                if command:
                    prop, asked2, ev, _ = _by_command(folder, rec, Path(td), dealer_point(rec))
                else:
                    prop, asked2, ev, _, _ = _in_process(folder, rec, pipe, dealer_point(rec),
                                                         reads)
                s = score_event(rec, ev) if prop is not None else {
                    "counts": Counter(seats=rec["n_players"]), "wrong": []}
                for k in ("seats", "right", "wrong"):
                    c["given_" + k] += s["counts"][k]
                wrong += s["wrong"]
                line.update(proposal="dealer given" if prop else f"failed: {asked2}",
                            **{"given_" + k: v for k, v in s["counts"].items()})
            scenes.append(line)
            print(json.dumps(line), file=sys.stderr, flush=True)
    total = Counter()
    for c in per.values():
        total.update(c)
    return {"per_style": {k: dict(v) for k, v in per.items()}, "all": dict(total),
            "scenes": scenes, "wrong": wrong}


def print_table(res: dict) -> None:
    cols = ("scenes", "proposed", "asked", "failed", "seats", "right", "wrong", "given_seats",
            "given_right", "given_wrong", "left_out_groups", "no_layout_events",
            "no_layout_right", "no_layout_wrong")
    print("style".ljust(16) + "".join(c.rjust(max(len(c) + 1, 7)) for c in cols))
    for style, c in list(res["per_style"].items()) + [("all", res["all"])]:
        print(style.ljust(16) + "".join(str(c.get(k, 0)).rjust(max(len(k) + 1, 7)) for k in cols))
    a = res["all"]
    if a.get("seats"):
        print(f"picture alone: {a.get('right', 0)}/{a['seats']} player seats settled right "
              f"({100 * a.get('right', 0) / a['seats']:.1f} %), {a.get('wrong', 0)} wrong")
    if a.get("given_seats"):
        print(f"dealer given where asked: {a.get('given_right', 0)}/{a['given_seats']} right "
              f"({100 * a.get('given_right', 0) / a['given_seats']:.1f} %), "
              f"{a.get('given_wrong', 0)} wrong")
    for w in res["wrong"]:
        print("WRONG", w)
    for s in res["scenes"]:
        if s.get("asked"):
            print(f"asked: {s['image']} ({s['players']} players): {s['asked'].split(': ', 1)[-1]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cache", type=Path, default=None, metavar="DIR",
                    help="keep each scene's reading here (pickles, outside the repository) and "
                         "reuse it on the next run: the proposal and settling are re-run, the "
                         "picture is not re-read")
    ap.add_argument("--command", action="store_true",
                    help="run the real `paigow layout propose` and `paigow run` per scene")
    args = ap.parse_args(argv)
    from scoring.errors import InputError

    try:
        res = evaluate(args.folder, args.limit, args.command, args.cache)
    except InputError as exc:
        print(f"eval_layout: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print_table(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())

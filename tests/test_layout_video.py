"""Fixed-camera multi-round videos with a layout proposed from the first dealt frame (issue 22
acceptance): every dealt round reported exactly once, seats settled right, none wrong, and the
overlay never shows a round's results over another round's tiles.

The normal tier feeds hand-made tile reads of a turned, tilted table (the dealer at the
picture's left) through the real table stage (``Pipeline.process`` with its reading replaced
by the reads: grouping by the layout, tracking over frames, round events, the overlay view).
The slow tier composes videos from ``../shared/scenes`` (tables the renderer did not draw):
each scene's picture is one table; its rounds deal the dealer and a changing set of its
players (the others' tiles covered with the picture's own bare table from nearby,
:func:`_paint_out`), the table cleared between rounds (every tile and stack covered); the
shipped models read every frame as video.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.recognition.engine import Reads
from vision.recognition.decode import TileRead
from vision.table.propose import DealerUnknown, propose_from_reads
from vision.pipeline import Pipeline
from vision.table.rounds import Layout

FRAME = (1920, 1080)
TW, TH = 34.0, 76.0

#: four rounds of one table: each position's four faces (one 32-tile set per round)
ROUNDS = [
    {"dealer": ["6-6", "4-5", "1-3", "2-2"], "1": ["1-1", "3-6", "5-5", "1-6"],
     "2": ["2-4", "1-2", "4-4", "3-4"], "3": ["5-6", "4-6", "1-5", "2-3"],
     "4": ["3-3", "2-6", "1-4", "2-5"]},
    {"dealer": ["5-6", "4-6", "1-5", "2-3"], "1": ["3-3", "2-6", "1-4", "2-5"],
     "3": ["6-6", "3-5", "1-3", "2-2"], "4": ["1-1", "5-5", "1-6", "4-4"]},
    {"dealer": ["1-1", "5-5", "1-6", "4-4"], "2": ["6-6", "4-5", "1-3", "2-2"],
     "3": ["2-4", "1-2", "4-4", "3-4"], "4": ["5-6", "4-6", "1-5", "3-3"]},
    {"dealer": ["2-4", "1-2", "4-4", "3-4"], "1": ["1-1", "3-6", "5-5", "1-6"],
     "2": ["5-6", "4-6", "1-5", "2-3"], "3": ["3-3", "2-6", "1-4", "2-5"],
     "4": ["6-6", "3-5", "1-3", "2-2"]},
]


def _homography():
    """The camera: table turned 100 degrees (the dealer at the picture's left), tilted."""
    c = np.array(FRAME, np.float64) / 2
    M = np.vstack([cv2.getRotationMatrix2D(tuple(c), 100, 0.7), [0, 0, 1]])
    P = np.array([[1, 0, 0], [0, 1, 0], [0, 0.0003, 1]], np.float64)
    T = np.array([[1, 0, -c[0]], [0, 1, -c[1]], [0, 0, 1]])
    return np.linalg.inv(T) @ P @ T @ M


M = _homography()
#: table places (px before the camera): the dealer at the top centre, seats 1-4 on an arc
PLACES = {"dealer": (960, 260), "1": (1500, 600), "2": (1200, 820), "3": (720, 820),
          "4": (420, 600)}


def _reads(deal):
    out = []
    for pos, faces in deal.items():
        cx, cy = PLACES[pos]
        for k, f in enumerate(faces):
            x = cx + (-1.5 * TW - 17, -0.5 * TW - 15, 0.5 * TW + 15, 1.5 * TW + 17)[k]
            q = np.array([[x - TW / 2, cy - TH / 2], [x + TW / 2, cy - TH / 2],
                          [x + TW / 2, cy + TH / 2], [x - TW / 2, cy + TH / 2]], np.float32)
            q = cv2.perspectiveTransform(q[None], M)[0]
            out.append(TileRead(f, "face_up", 0.95, q, np.r_[q.min(0), q.max(0)]))
    return out


def _truth(deal):
    from scoring.settle import settle_round
    from scoring.setting import Setting
    from scoring.tiles import TILES_BY_FACE
    from vision.table.rounds import pair_hands

    reads = {p: [r for r in _reads({p: f})] for p, f in deal.items()}
    sets = {}
    for p, rs in reads.items():
        h, lo = pair_hands(rs)
        sets[p] = Setting(tuple(TILES_BY_FACE[r.face] for r in h),
                          tuple(TILES_BY_FACE[r.face] for r in lo))
    res = settle_round(sets)
    return {p: s.result for p, s in res.seats.items()}


class Feed:
    def __init__(self, frames):
        self.frames = list(frames)

    def __call__(self, image, mode, clock=None):
        return Reads(tuple(self.frames.pop(0)))


def test_rounds_of_a_turned_table_each_reported_once_no_stale_overlay():
    n, cleared, dealt = 4, 6, 10
    frames, segment = [], []
    for k, deal in enumerate(ROUNDS):
        frames += [[]] * cleared + [_reads(deal)] * dealt
        segment += [None] * cleared + [k] * dealt
    frames += [[]] * cleared
    segment += [None] * cleared
    first = next(f for f in frames if f)
    layout, info, left = propose_from_reads(first, FRAME)
    assert left == [] and len(layout["positions"]) == len(ROUNDS[0])
    # seat numbers are names (settlement goes by the tiles in each polygon): ours -> layout's
    from vision.table.rounds import position_of

    lay = Layout.from_dict(layout)
    name = {}
    for pos in ROUNDS[0]:
        where = set(position_of(_reads({pos: ROUNDS[0][pos]}), lay))
        assert len(where) == 1 and None not in where
        name[pos] = where.pop()
    assert name["dealer"] == "dealer" and len(set(name.values())) == len(name)
    pipe = Pipeline(tile_detector=object(), pip_detector=object(), n_stable=n, draw=False,
                    layout=lay)
    pipe.still_images = True
    pipe.engine.read = Feed(frames)
    image = np.zeros((FRAME[1], FRAME[0], 3), np.uint8)
    events, round_of = [], {}
    for k in range(len(frames)):
        _, res = pipe.process(image)
        if res.event:
            events.append(res.event)
            round_of[res.event["round_id"]] = segment[k]
        view = pipe.round_view(res)
        if view["round_id"] is not None:  # results shown only over their own round's tiles
            assert round_of[view["round_id"]] == segment[k], k
    assert pipe.flush() is None
    assert [round_of[e["round_id"]] for e in events] == [0, 1, 2, 3]  # each exactly once
    right = wrong = seats = 0
    for ev, deal in zip(events, ROUNDS):
        truth = {name[p]: r for p, r in _truth(deal).items()}
        faces = {name[p]: sorted(f) for p, f in deal.items()}
        assert sorted(ev["positions"]["dealer"]["tiles"]) == sorted(deal["dealer"])
        for p, o in ev["positions"].items():
            if p == "dealer":
                continue
            seats += 1
            if o["result"] == truth.get(p) and sorted(o["tiles"]) == faces[p]:
                right += 1
            elif o["result"] in ("win", "lose", "push"):
                wrong += 1
    assert seats == sum(len(d) - 1 for d in ROUNDS) and right == seats and wrong == 0


# ------------------------------------------------------------------ shared scenes, real models

SCENES = Path(__file__).resolve().parents[1].parent / "shared" / "scenes"


def _paint_out(image, polygons, avoid=()):
    """``image`` with the quadrilaterals ``polygons`` (tiles' top faces, px) covered by bare
    table: each tile, grown by 0.4 tile widths (its sides and shadow), is covered with the
    picture's own table at a nearby place holding no tile, stack or ``avoid`` polygon (the
    covering hand), the place whose surroundings match the tile's surroundings best (felt,
    not rail or printing), blended at the edge. (``cv2.inpaint`` smooths the dark tile into
    a blurred dark patch that the detector reads as a tile back: a cleared table never looked
    empty.)"""
    h, w = image.shape[:2]
    polys = [np.round(np.asarray(q, np.float64)).astype(np.int32) for q in polygons]
    if not polys:
        return image.copy()
    sides = [min(np.linalg.norm(q[1] - q[0]), np.linalg.norm(q[2] - q[1])) for q in polys]
    grow = int(max(6, 0.4 * np.median(sides)))
    busy = np.zeros((h, w), np.uint8)
    for q in polys + [np.round(np.asarray(a)).astype(np.int32) for a in avoid]:
        cv2.fillPoly(busy, [q], 255)
    busy = cv2.dilate(busy, np.ones((4 * grow + 1, 4 * grow + 1), np.uint8))
    grown = np.ones((2 * grow + 1, 2 * grow + 1), np.uint8)
    out = image.astype(np.float32)
    for q in polys:
        m = np.zeros((h, w), np.uint8)
        cv2.fillPoly(m, [q], 255)
        m = cv2.dilate(m, grown)
        ring = cv2.dilate(m, grown) & ~m
        ys, xs = np.nonzero(m)
        ry, rx = np.nonzero(ring)
        size = max(np.ptp(xs), np.ptp(ys)) + 2 * grow
        best, cost = None, np.inf
        for f in (1.2, 1.6, 2.2, 3.0):
            for a in np.radians(np.arange(0, 360, 30)):
                dx, dy = int(round(f * size * np.cos(a))), int(round(f * size * np.sin(a)))
                if min(xs.min() + dx, ys.min() + dy) < 0 or xs.max() + dx >= w or \
                        ys.max() + dy >= h or rx.min() + dx < 0 or ry.min() + dy < 0 or \
                        rx.max() + dx >= w or ry.max() + dy >= h or busy[ys + dy, xs + dx].any():
                    continue
                c = np.abs(image[ry + dy, rx + dx].astype(np.float32)
                           - image[ry, rx].astype(np.float32)).mean()
                if c < cost:
                    best, cost = (dx, dy), c
        if best is None:  # no free place near: fall back to inpainting this tile
            out = cv2.inpaint(out.astype(np.uint8), m, 5, cv2.INPAINT_TELEA).astype(np.float32)
            continue
        dx, dy = best
        src = np.zeros_like(out)
        src[ys, xs] = image[ys + dy, xs + dx]
        soft = cv2.GaussianBlur(m.astype(np.float32) / 255, (0, 0), grow / 2)[..., None]
        soft = np.where(m[..., None] > 0, soft, 0)
        out = out * (1 - soft) + src * soft
    return np.clip(out, 0, 255).astype(np.uint8)


def compose_rounds(rec):
    """A fixed camera over one scene's table: four rounds (every seat; without the first
    player; without the second; every seat), the table cleared between and after them (every
    tile and stack covered with bare table, :func:`_paint_out`).
    Returns ``(empty table, [(round picture, dealt seats)])``."""
    img = cv2.imread(str(SCENES / rec["image"]), cv2.IMREAD_COLOR)
    seats = [str(s["seat"]) for s in rec["seats"] if str(s["seat"]) != "dealer"]
    poly = {str(s["seat"]): [t["polygon"] for t in s["tiles"]] for s in rec["seats"]}
    # the covering hand stays in the picture in every round; nothing is copied from under it
    occ = rec.get("occluder") or []
    avoid = [o["polygon"] for o in (occ if isinstance(occ, list) else [occ])]
    every = [q for qs in poly.values() for q in qs] + list(rec.get("face_down", ()))
    empty = _paint_out(img, every, avoid + every)
    out = []
    for drop in (None, seats[0], seats[1 % len(seats)], None):
        pic = img if drop is None else _paint_out(img, poly[drop], avoid + every)
        out.append((pic, [s for s in seats if s != drop]))
    return empty, out


@pytest.mark.slow
@pytest.mark.skipif(not (SCENES / "truth.jsonl").is_file(), reason="needs ../shared/scenes")
def test_composed_videos_of_shared_tables():
    """Four tables x four rounds composed from ../shared/scenes, read as video by the shipped
    models; the layout proposed from the first dealt frame (the dealer's place given where
    the table's shape does not tell, as a user would): every dealt round once, >= 90 % of the
    dealt player seats settled right, none wrong, no stale overlay."""
    from vision import MODELS_DIR

    if not (MODELS_DIR / "tiles.onnx").is_file():
        pytest.skip("shipped models not present")
    recs = [json.loads(x) for x in (SCENES / "truth.jsonl").read_text().splitlines() if x]
    # the first scene of each style with at least four players, and the next of the first
    # style: four tables (chosen by a rule on the player count, never by a result)
    by_style: dict[str, list] = {}
    for r in recs:
        if r["n_players"] >= 4:
            by_style.setdefault(r["style"], []).append(r)
    first = list(by_style.values())
    picked = ([v[0] for v in first] + [first[0][1]])[:4]
    assert len(picked) == 4
    n_stable, cleared, dealt = 4, 8, 14
    total = right = wrong = 0
    for rec in picked:
        empty, rounds = compose_rounds(rec)
        pipe = Pipeline(models_dir=MODELS_DIR, n_stable=n_stable, draw=False)
        pipe.still_images = True
        first_reads = list(pipe.engine.read(rounds[0][0], "still"))
        d = next(s for s in rec["seats"] if str(s["seat"]) == "dealer")
        try:
            layout, _, _ = propose_from_reads(first_reads, (rec["width"], rec["height"]))
        except DealerUnknown:
            at = np.mean([np.mean(t["polygon"], 0) for t in d["tiles"]], 0)
            layout, _, _ = propose_from_reads(first_reads, (rec["width"], rec["height"]),
                                              dealer_at=at)
        video = Pipeline(models_dir=MODELS_DIR, n_stable=n_stable, draw=False,
                         layout=Layout.from_dict(layout))
        frames, segment = [], []
        for k, (pic, _) in enumerate(rounds):
            frames += [empty] * cleared + [pic] * dealt
            segment += [None] * cleared + [k] * dealt
        frames += [empty] * cleared
        segment += [None] * cleared
        events, round_of = [], {}
        for k, fr in enumerate(frames):
            _, res = video.process(fr)
            if res.event:
                events.append(res.event)
                round_of[res.event["round_id"]] = segment[k] if segment[k] is not None \
                    else segment[k - 1]
            view = video.round_view(res)
            if view["round_id"] is not None:
                assert round_of[view["round_id"]] == segment[k], (rec["image"], k)
        fl = video.flush()
        assert fl is None
        assert [round_of[e["round_id"]] for e in events] == [0, 1, 2, 3], rec["image"]
        truth = {str(s["seat"]): tuple(sorted(s["hands"]["high"] + s["hands"]["low"]))
                 for s in rec["seats"]}
        for ev, (_, dealt_seats) in zip(events, rounds):
            banker = tuple(sorted(f or "?" for f in ev["positions"]["dealer"]["tiles"]))
            if banker.count("?") == 1 and not Counter(
                    f for f in banker if f != "?") - Counter(truth["dealer"]):
                banker = truth["dealer"]  # settled with one tile unread (vision.table.open_tile)
            by_faces = {truth[s]: s for s in dealt_seats}
            total += len(dealt_seats)
            for p, o in ev["positions"].items():
                if p == "dealer" or o["result"] not in ("win", "lose", "push"):
                    continue
                got = tuple(sorted(f or "?" for f in o["tiles"]))
                seat = by_faces.get(got)
                if seat is None and "?" in got:  # settled with one tile unread (open_tile)
                    known = Counter(f for f in got if f != "?")
                    cands = [s for f, s in by_faces.items() if not known - Counter(f)]
                    seat = cands[0] if len(cands) == 1 else None
                if seat and banker == truth["dealer"] and o["result"] == rec["settlement"][seat]:
                    right += 1
                else:
                    wrong += 1
    print(f"composed videos: {right}/{total} dealt player seats settled right, {wrong} wrong")
    assert wrong == 0
    assert right >= 0.9 * total, (right, total)

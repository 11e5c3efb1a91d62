"""Seats without a layout: tiles named by where they lie on the table, never by counting groups.

The method (steps 1-4) is described in :mod:`vision.table.rounds` (section "Positions"); this module
holds the table model, the fit and the grouping; :mod:`vision.table.rounds` re-exports
:func:`group_seats`, :func:`auto_group`, :class:`SeatGrouping` and :data:`SEAT_MODEL`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

import numpy as np

from vision.recognition.decode import TileRead

__all__ = ["SEAT_MODEL", "SeatGrouping", "group_seats", "auto_group"]


# --------------------------------------------------------------------------- seats without a layout

#: The table model used without a layout: the dealer and seats "1".."7" in units of the frame
#: height about the frame centre (x right, y down), as an overhead camera on the players' side
#: sees a pai gow table: the dealer at the top centre, the seats evenly spread along an arc that
#: faces the dealer, seat 1 at the image right and seat 7 at the left (seat t = (k - 1) / 6 at
#: x = 1.4222 (0.5 - t), y = 0.30 - 0.34 (2t - 1)^2; the arc of the project's table picture,
#: docs in README "Layout files"). Only its shape matters: it is fitted to the groups found
#: (scale, rotation, shift).
SEAT_MODEL: dict[str, tuple[float, float]] = {"dealer": (0.0, -0.30)}
for _k in range(1, 8):
    _t = (_k - 1) / 6.0
    SEAT_MODEL[str(_k)] = (round(1.4222 * (0.5 - _t), 4), round(0.30 - 0.34 * (2 * _t - 1) ** 2, 4))
del _k, _t

#: Tiles whose outlines come closer than this many tile widths (short sides) belong to one
#: group (the tiles of a hand touch; positions lie further apart).
UNIT_GAP = 0.35
#: A position group whose centre is further than this many seat spacings from the fitted place
#: is an inlier of no seat when fitting the table model.
FIT_RADIUS = 0.35
#: A group further than this many seat spacings from every fitted place belongs to no position
#: (a chip, a card or the woodpile taken for tiles beside the positions).
STRAY_RADIUS = 0.6
#: A group whose distance to its nearest fitted place exceeds this fraction of its distance to
#: the second nearest lies between two positions: neither is settled.
BETWEEN_RATIO = 0.7
#: Placements of the seats turned further than this many degrees from upright (the dealer at
#: the top) are not considered. Wide enough that a camera turned on its mount still finds the
#: true placement: with too narrow a range, the arc of seats fitted itself shifted by a seat
#: (turned about 18 degrees less) and, the true placement out of reach, named every seat wrong.
MAX_ROTATION = 40.0
#: The dealer lays the tiles square to the table's edge. Along the arc of seats the arc fits
#: itself shifted by a seat after a turn of about 18 degrees (the seats' own tiles turn with
#: it); the dealer's tiles do not. Two placements that name the tiles otherwise and fit about
#: as well are told apart by a score, the fit's rms in units of ``FIT_RMS_UNIT`` seat spacings
#: plus the dealer's tiles' turn from square to the placement in units of
#: ``DEALER_TURN_UNIT`` degrees: the lower wins only by ``RIVAL_MARGIN`` or more, else no seat
#: is named. ``DEALER_SQUARE``: the most a position's four tiles may disagree in their turn
#: for it to have one (degrees).
DEALER_SQUARE = 12.0
FIT_RMS_UNIT, DEALER_TURN_UNIT, RIVAL_MARGIN = 0.03, 4.0, 2.0
#: The dealer's tiles lie at most this many degrees (modulo 90) from the placement taken, else
#: no seat is named; a dealer laid squarer than this but not within ``DEALER_SQUARE`` (a hand
#: laid askew) is still placed when no rival fits about as well. Checked on the placement
#: taken only: ruling out placements before they are compared could leave a shifted one alone.
DEALER_TURN_MAX = 20.0
#: A seat whose tiles come closer to another tile than this fraction of the gap between its
#: two hands might be holding a neighbour's hand: unclear.
NEAR_RATIO = 0.6
#: Groups (the dealer's among them) that must fit the table model before any position is named.
MIN_FIT = 4
#: Why no seat is named when no placement has the dealer's tiles square to it.
NO_SQUARE_FIT = ("no placement of the table's seats fits the dealer's group (its tiles square to "
                 f"the table) and {MIN_FIT - 1} or more others")
#: The two tiles of a hand: outlines at most this many tile widths apart; the two hands of a
#: position: at most this many tile widths apart.
HAND_GAP, HANDS_GAP = 0.6, 2.0


@dataclass
class SeatGrouping:
    """Tiles named by table position without a layout (:func:`group_seats`).

    Attributes:
        groups: position -> its tiles (positions named by where they lie on the table).
        problems: position -> ``[(kind, detail)]`` found by the grouping (kind
            ``"seat_unclear"``); a position with one is never settled. Positions may have
            problems and no tiles (a group between two seats).
        unplaced: groups of tiles given to no position: ``(tiles, why)``.
        places: position -> float64 (2,) px, the fitted place of every position (empty when
            the table could not be fitted).
        spacing: fitted distance (px) between neighbouring seats (0 when not fitted).
        reason: why no position was named (None when the table was fitted).
    """

    groups: dict[str, list[TileRead]] = field(default_factory=dict)
    problems: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    unplaced: list[tuple[list[TileRead], str]] = field(default_factory=list)
    places: dict[str, np.ndarray] = field(default_factory=dict)
    spacing: float = 0.0
    reason: str | None = None


def _outline_gaps(polys: np.ndarray) -> np.ndarray:
    """float64 (n, n) shortest distance (px) between the outlines of n quadrilaterals (n, 4, 2);
    0 where one holds a corner of the other (corner-to-edge distances both ways). Pairs whose
    circumscribed circles lie apart get the distance between those circles instead (a lower
    bound, always larger than any gap the grouping compares: it only spares the work)."""
    p = polys.astype(np.float64)
    c = p.mean(1)
    r = np.linalg.norm(p - c[:, None], axis=2).max(1)  # circumscribed radius
    cd = np.linalg.norm(c[:, None] - c[None], axis=-1)
    out = np.maximum(cd - r[:, None] - r[None], 0.0)
    iu, ju = np.nonzero(np.triu(out <= 2.0 * r.mean(), 1))  # near pairs: the exact gap
    if len(iu):
        def one_way(P, Q):  # corners of P (k, 4, 2) against the edges of Q (k, 4, 2)
            a, ab = Q, np.roll(Q, -1, axis=1) - Q
            q = P[:, :, None, :]
            t = np.clip(((q - a[:, None]) * ab[:, None]).sum(-1)
                        / np.maximum((ab * ab).sum(-1), 1e-9)[:, None], 0, 1)
            d = np.linalg.norm(q - (a[:, None] + t[..., None] * ab[:, None]), axis=-1)
            x, y = q[..., 0], q[..., 1]
            y1, y2 = a[:, None, :, 1], (a + ab)[:, None, :, 1]
            x1, x2 = a[:, None, :, 0], (a + ab)[:, None, :, 0]
            with np.errstate(divide="ignore", invalid="ignore"):
                xc = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
            inside = ((((y1 > y) != (y2 > y)) & (x < xc)).sum(-1) % 2 == 1).any(-1)
            return np.where(inside, 0.0, d.min(axis=(1, 2)))

        g = np.minimum(one_way(p[iu], p[ju]), one_way(p[ju], p[iu]))
        out[iu, ju] = g
        out[ju, iu] = g
    np.fill_diagonal(out, 0.0)
    return out


def _components(close: np.ndarray) -> list[list[int]]:
    """Connected components of a symmetric bool (n, n) adjacency, each in index order."""
    n = len(close)
    seen = [False] * n
    out = []
    for s in range(n):
        if seen[s]:
            continue
        stack, comp = [s], []
        seen[s] = True
        while stack:
            i = stack.pop()
            comp.append(i)
            for j in np.nonzero(close[i])[0]:
                if not seen[j]:
                    seen[j] = True
                    stack.append(int(j))
        out.append(sorted(comp))
    return out


def _position_candidates(units: list[list[int]], gaps: np.ndarray, width: float
                         ) -> list[list[int]]:
    """Tile groups that may be one position's four tiles: a group of four touching tiles, or
    two groups of two (two hands) within ``HANDS_GAP`` tile widths of each other (every such
    pair: a wrong pair lies between two places and fits none). They only place the table
    model; every tile is named afterwards."""
    out = [u for u in units if len(u) == 4]
    twos = np.array([u for u in units if len(u) == 2], dtype=np.intp).reshape(-1, 2)
    near = gaps[twos[:, None, :, None], twos[None, :, None, :]].min(axis=(2, 3))  # (k, k)
    for a, b in zip(*np.nonzero(np.triu(near <= HANDS_GAP * width, 1))):
        out.append(sorted(twos[a].tolist() + twos[b].tolist()))
    return out


def _fit_similarity(src: np.ndarray, dst: np.ndarray) -> tuple[complex, complex]:
    """Least-squares z -> a z + b (complex: scale, rotation, shift) taking src to dst (k, 2)."""
    s = src[:, 0] + 1j * src[:, 1]
    t = dst[:, 0] + 1j * dst[:, 1]
    sm, tm = s.mean(), t.mean()
    den = float(np.sum(np.abs(s - sm) ** 2))
    a = complex(np.sum(np.conj(s - sm) * (t - tm)) / den) if den > 0 else 1.0 + 0j
    return a, complex(tm - a * sm)


def _fit_affine(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Least-squares affine (2, 3) taking src to dst (k >= 3 points, (k, 2))."""
    X = np.c_[src, np.ones(len(src))]
    M, *_ = np.linalg.lstsq(X, dst, rcond=None)
    return M.T


def _match(places: np.ndarray, cands: np.ndarray, tiles: list[set], radius: float
           ) -> dict[int, int]:
    """Candidate -> place pairs, closest first, each place and candidate once, candidates
    sharing no tile, within ``radius`` px."""
    if len(cands) == 0:
        return {}
    d = np.linalg.norm(places[:, None] - cands[None], axis=-1)  # (8, m)
    pairs: dict[int, int] = {}
    used_p: set[int] = set()
    used_t: set[int] = set()
    for k, c in zip(*np.unravel_index(np.argsort(d, axis=None), d.shape)):
        if d[k, c] > radius:
            break
        if k in used_p or c in pairs or used_t & tiles[c]:
            continue
        pairs[int(c)] = int(k)
        used_p.add(int(k))
        used_t |= tiles[c]
    return pairs


def _turn_mod90(deg: float) -> float:
    """An angle in degrees folded into [-45, 45)."""
    return (deg + 45.0) % 90.0 - 45.0


def _fit_table(cands: np.ndarray, tiles: list[set], model: np.ndarray, spacing0: float,
               shown: list[bool] | None = None, square: np.ndarray | None = None):
    """Fit the table model (8, 2) px to candidate position centres (m, 2) px.

    Every pairing of two candidates with two model places proposes a similarity (scale 0.5-2,
    turned at most ``MAX_ROTATION``); the most promising are refined on their inliers
    (:func:`_match` within ``FIT_RADIUS`` seat spacings). Returns ``(places (8, 2) px, spacing
    px, {candidate: place index} of the inliers, why)``; places None with ``why`` when the
    dealer's place and ``MIN_FIT - 1`` more do not fit candidates, or a different assignment of candidates to places fits about as well (the
    naming would be a guess), or an unmatched candidate showing faces (``shown``) lies within
    1.5 seat spacings of an end seat (a picture turned past the placements tried: the arc then fits
    itself shifted by a seat, with one position left over at an end). The dealer's place must
    fit, by a candidate whose tiles lie turned like the placement (``square``: float (m,)
    degrees, each candidate's tile turn modulo 90, NaN when its tiles disagree; within
    ``DEALER_TURN_MAX``). Of the placements about as good as the best (as many inliers, an
    rms at most twice the best's or 0.12 seat spacings), the one of lowest score (rms and the
    dealer's turn from square, ``FIT_RMS_UNIT``, ``DEALER_TURN_UNIT``) is taken; another that
    names the tiles otherwise makes it a guess unless its score is ``RIVAL_MARGIN`` higher.
    """
    m = len(cands)
    if m < MIN_FIT:
        return None, 0.0, {}, (f"{m} group(s) that look like a position found; at least "
                               f"{MIN_FIT} are needed to place the seats")
    mz = model[:, 0] + 1j * model[:, 1]
    cz = cands[:, 0] + 1j * cands[:, 1]
    ci, cj = np.triu_indices(m, 1)
    pk, pl = np.nonzero(~np.eye(len(model), dtype=bool))
    A = (cz[cj][:, None] - cz[ci][:, None]) / (mz[pl][None] - mz[pk][None])  # (pairs, 56)
    B = cz[ci][:, None] - A * mz[pk][None]
    A, B = A.ravel(), B.ravel()
    ok = ((np.abs(A) >= 0.5) & (np.abs(A) <= 2.0)
          & (np.abs(np.angle(A)) <= np.radians(MAX_ROTATION)))
    A, B = A[ok], B[ok]
    if len(A) == 0:
        return None, 0.0, {}, "no placement of the table's seats fits the groups found"
    M = A[:, None] * mz[None] + B[:, None]  # (h, 8)
    D = np.abs(M[:, :, None] - cz[None, None])  # (h, 8, m)
    near_c = D.argmin(2)
    near_p = D.argmin(1)
    mutual = np.take_along_axis(near_p, near_c, 1) == np.arange(len(model))[None]
    inl = mutual & (D.min(2) <= FIT_RADIUS * spacing0 * np.abs(A)[:, None])
    counts = inl.sum(1)
    order = np.argsort(-counts, kind="stable")
    order = order[counts[order] >= max(3, counts.max() - 2)]
    seen: set[bytes] = set()  # one refinement per set of first inliers
    results: dict[tuple, tuple[int, float, float, float]] = {}  # n, rms, spacing, dealer off
    for h in order:
        first = (inl[h] * (near_c[h] + 1)).tobytes()
        if first in seen:
            continue
        seen.add(first)
        a, b = complex(A[h]), complex(B[h])
        pairs: dict[int, int] = {}
        for _ in range(3):
            places = np.c_[(a * mz + b).real, (a * mz + b).imag]
            pairs = _match(places, cands, tiles, FIT_RADIUS * spacing0 * abs(a))
            if len(pairs) < 3:
                break
            a2, b2 = _fit_similarity(model[list(pairs.values())], cands[list(pairs.keys())])
            if not (0.5 <= abs(a2) <= 2.0) or abs(np.angle(a2)) > np.radians(MAX_ROTATION):
                break
            a, b = a2, b2
        places = np.c_[(a * mz + b).real, (a * mz + b).imag]
        sp = spacing0 * abs(a)
        pairs = _match(places, cands, tiles, FIT_RADIUS * sp)
        if len(pairs) < MIN_FIT or 0 not in pairs.values():  # the dealer is the reference
            continue
        off = 0.0  # degrees the dealer's tiles lie from square to the placement
        if square is not None:
            dealer = next(c for c, k in pairs.items() if k == 0)
            off = abs(_turn_mod90(float(square[dealer]) - float(np.degrees(np.angle(a)))))
            off = np.inf if np.isnan(off) else off  # NaN: the dealer's tiles disagree
        key = tuple(sorted(pairs.items()))
        rms = float(np.sqrt(np.mean([np.sum((places[k] - cands[c]) ** 2)
                                     for c, k in pairs.items()]))) / sp
        if key not in results or rms < results[key][1]:
            results[key] = (len(pairs), rms, sp, off)
    if not results:
        return None, 0.0, {}, NO_SQUARE_FIT
    ranked = sorted(results.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
    n_best, rms_best, sp, _ = ranked[0][1]
    # the placements about as good as the best; where they name the tiles differently, the one
    # of lowest score is taken if every other scores RIVAL_MARGIN more
    def score(v: tuple) -> float:
        return v[1] / FIT_RMS_UNIT + v[3] / DEALER_TURN_UNIT  # inf: the dealer's tiles disagree

    rivals = sorted(((key, v) for key, v in ranked
                     if v[0] == n_best and v[1] <= max(2.0 * rms_best, 0.12)),
                    key=lambda kv: score(kv[1]))
    best_key, best_v = rivals[0]
    best, sp, off_best = dict(best_key), best_v[2], best_v[3]
    place_tiles = {k: tiles[c] for c, k in best.items()}
    for key, v in rivals[1:]:
        if not any(any(kb != k and place_tiles[kb] & tiles[c] for kb in place_tiles)
                   for c, k in key):
            continue  # the same names for the tiles the best placement named
        if score(v) >= score(best_v) + RIVAL_MARGIN:
            continue  # a worse fit, or a dealer further from square, by the margin
        return None, 0.0, {}, "two placements of the seats fit the groups found about as well"
    if off_best > DEALER_TURN_MAX:  # a gate on the placement taken, never on its rivals: it
        # can only leave the seats unnamed, never hand the naming to a shifted placement
        return None, 0.0, {}, NO_SQUARE_FIT
    named = set().union(*(tiles[c] for c in best))
    a, b = _fit_similarity(model[list(best.values())], cands[list(best)])
    ends = [a * complex(*model[k]) + b for k in (1, len(model) - 1)]  # seats 1 and 7
    for c in range(m):
        if c in best or tiles[c] & named or (shown is not None and not shown[c]):
            continue
        if min(abs(complex(*cands[c]) - e) for e in ends) <= 1.5 * sp:
            return None, 0.0, {}, ("a group that looks like a position lies beyond the end "
                                       "of the seats (picture turned?)")
    idx = list(best)
    src, dst = model[[best[c] for c in idx]], cands[idx]
    if n_best >= 5:  # enough groups to take the camera's foreshortening in too
        places = np.c_[model, np.ones(len(model))] @ _fit_affine(src, dst).T
    else:
        a, b = _fit_similarity(src, dst)
        places = np.c_[(a * mz + b).real, (a * mz + b).imag]
    return places, sp, best, None


def _hands_problem(c: np.ndarray, gaps: np.ndarray, width: float) -> str | None:
    """Why four tiles do not lie as two hands of two (None when they do).

    Args:
        c: float (4, 2) tile centres px; gaps: float (4, 4) outline gaps px; width: tile short
            side px.

    The hands are the pairing of :func:`vision.table.rounds.pair_hands` (least summed centre distance); each
    hand's tiles must lie within ``HAND_GAP`` tile widths, the two hands within ``HANDS_GAP``.
    """
    pairings = [((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2))]
    (a, b), (e, f) = min(pairings, key=lambda q: float(np.linalg.norm(c[q[0][0]] - c[q[0][1]]))
                         + float(np.linalg.norm(c[q[1][0]] - c[q[1][1]])))
    if max(gaps[a, b], gaps[e, f]) > HAND_GAP * width:
        return "the four tiles do not lie as two hands of two touching tiles"
    if gaps[np.ix_((a, b), (e, f))].min() > HANDS_GAP * width:
        return "the two hands lie too far apart to be one position's"
    return None


def _widest_link(gaps: np.ndarray) -> float:
    """The longest edge of the minimum spanning tree of a small group (gaps: (k, k) px): the
    gap across which the group holds together."""
    k = len(gaps)
    joined, widest = {0}, 0.0
    while len(joined) < k:
        out = [j for j in range(k) if j not in joined]
        g = gaps[np.ix_(sorted(joined), out)]
        i = int(np.argmin(g.min(0)))
        widest = max(widest, float(g.min(0)[i]))
        joined.add(out[i])
    return widest


@lru_cache(maxsize=4)
def _seat_geometry(key: bytes, down: bytes, n: int, frame_size: tuple[float, float] | None
                   ) -> tuple:
    """The index-level work of :func:`group_seats` for n tiles whose corners (rounded to 1 px,
    int32 (n, 4, 2)) are ``key``; cached, as a still table gives the same corners frame after
    frame; ``down``: one byte per tile, 1 for a face-down tile. Returns ``(reason, places
    (8, 2) | None, spacing, members {position: indices},
    problems {position: [(kind, detail)]}, unplaced [(indices, why)])``."""
    polys = np.frombuffer(key, dtype=np.int32).reshape(n, 4, 2).astype(np.float64)
    c = polys.mean(1)
    side = np.linalg.norm(np.roll(polys, -1, axis=1) - polys, axis=2)  # (n, 4) px
    width = max(float(np.median(np.minimum(side[:, 0] + side[:, 2], side[:, 1] + side[:, 3])))
                / 2, 1.0)  # the tiles' short side
    if frame_size is not None:
        fh = float(frame_size[1])
        centre = np.array([float(frame_size[0]) / 2, fh / 2])
    else:
        lo, hi = c.min(0), c.max(0)
        fh = max(float(hi[1] - lo[1]) / 0.75, 1.0)
        centre = (lo + hi) / 2
    names = list(SEAT_MODEL)
    model = centre + fh * np.array([SEAT_MODEL[p] for p in names])
    spacing0 = float(np.linalg.norm(model[2:] - model[1:-1], axis=1).min())
    gaps = _outline_gaps(polys)
    units = _components(gaps < UNIT_GAP * width)
    groups = _position_candidates(units, gaps, width)
    cands = np.array([c[g].mean(0) for g in groups]).reshape(-1, 2)
    is_down = np.frombuffer(down, dtype=np.uint8).astype(bool)
    shown = [int((~is_down[g]).sum()) >= 2 for g in groups]
    # each tile's turn from upright (deg, its long side against the image's y axis), and each
    # candidate's, modulo 90 (NaN where its tiles disagree by more than DEALER_SQUARE)
    longer = np.where((side[:, 0] + side[:, 2] >= side[:, 1] + side[:, 3])[:, None],
                      polys[:, 1] - polys[:, 0], polys[:, 2] - polys[:, 1])
    turn4 = np.exp(4j * np.arctan2(-longer[:, 0], longer[:, 1]))
    square = np.array([np.degrees(np.angle(turn4[g].mean())) / 4
                       if abs(turn4[g].mean()) >= np.cos(np.radians(4 * DEALER_SQUARE)) else np.nan
                       for g in groups])
    places, sp, fitted, why = _fit_table(cands, [set(g) for g in groups], model, spacing0, shown,
                                    square)
    if places is None:
        return why, None, 0.0, {}, {}, [(u, why) for u in units]
    members: dict[str, list[int]] = {}
    problems: dict[str, list[tuple[str, str]]] = {}
    unplaced: list[tuple[list[int], str]] = []
    for u in units:
        d = np.linalg.norm(places - c[u].mean(0), axis=1)
        k1, k2 = (int(v) for v in np.argsort(d)[:2])
        if d[k1] > STRAY_RADIUS * sp:
            unplaced.append((u, "far from every position"))
        elif d[k1] > BETWEEN_RATIO * d[k2]:
            a, b = sorted((names[k1], names[k2]), key=names.index)
            why = f"a group of {len(u)} tile(s) lies between positions {a} and {b}"
            unplaced.append((u, why))
            for p in (a, b):
                problems.setdefault(p, []).append(("seat_unclear", why))
        else:
            members.setdefault(names[k1], []).extend(u)
    fitted_tiles = {names[k]: set(groups[c]) for c, k in fitted.items()}
    for p, idx in members.items():
        if len(idx) == 4 and set(idx) != fitted_tiles.get(p):
            problems.setdefault(p, []).append((
                "seat_unclear", "its tiles are not the group of two hands the seats were "
                                "placed by"))
        elif len(idx) == 4:
            why = _hands_problem(c[idx], gaps[np.ix_(idx, idx)], width)
            inner = gaps[np.ix_(idx, idx)]
            rest = np.setdiff1d(np.arange(len(c)), idx)
            outer = gaps[np.ix_(idx, rest)].min() if len(rest) else np.inf
            own = _widest_link(inner)  # the gap that joins the group (between its hands)
            if why is None and outer < NEAR_RATIO * own:
                why = "a tile of another group lies about as near as its own hands do"
            if why:
                problems.setdefault(p, []).append(("seat_unclear", why))
    return None, places, sp, members, problems, unplaced


def group_seats(reads: Sequence[TileRead], frame_size: tuple[int, int] | None = None
                ) -> SeatGrouping:
    """Name the tiles' groups by where they lie on the table, without a layout.

    Method (module docstring, steps 1-4): (1) groups of tiles whose outlines (nearly) touch;
    (2) the table model :data:`SEAT_MODEL` fitted to the groups that look like a position (the
    dealer's, its tiles square to the fit, and ``MIN_FIT - 1`` more; no other assignment about
    as good); (3) each group to the fitted place nearest its centre -- a group far from every
    place is left out (a chip, a card, the woodpile), a group between two places makes both
    unclear; (4) a position whose four tiles are not the fitted group lying as two hands is
    unclear. A position's name thus comes from where its tiles lie, never from how many groups
    lie to its right: a spurious or split group cannot shift another seat's number.

    Args:
        reads: the frame's tiles (any state; face-down tiles count as tiles).
        frame_size: ``(width, height)`` px of the frame (default: the tiles' bounding box).

    Returns:
        :class:`SeatGrouping` (positions in table order).
    """
    reads = list(reads)
    out = SeatGrouping()
    if not reads:
        out.reason = "no tiles found"
        return out
    polys = np.rint(np.array([np.asarray(r.polygon, np.float64).reshape(4, 2) for r in reads]))
    size = None if frame_size is None else (float(frame_size[0]), float(frame_size[1]))
    why, places, sp, members, problems, unplaced = _seat_geometry(
        polys.astype(np.int32).tobytes(),
        bytes(int(r.state == "face_down") for r in reads), len(reads), size)
    out.reason = why
    out.unplaced = [([reads[i] for i in u], w) for u, w in unplaced]
    if places is None:
        return out
    out.places = {p: places[k].copy() for k, p in enumerate(SEAT_MODEL)}
    out.spacing = sp
    out.groups = {p: [reads[i] for i in members[p]] for p in SEAT_MODEL if p in members}
    out.problems = {p: list(problems[p]) for p in SEAT_MODEL if p in problems}
    return out


def auto_group(reads: Sequence[TileRead], frame_size: tuple[int, int] | None = None
               ) -> dict[str, list[TileRead]]:
    """Position -> tiles without a layout, safe for callers that take only the groups.

    :func:`group_seats`, with every position it found unclear withheld unless its tile count
    already keeps it from settling (the problems themselves travel with
    :func:`group_seats` and ``build_positions(..., problems=)``).

    Args:
        reads: the frame's tiles.
        frame_size: ``(width, height)`` px of the frame (default: the tiles' bounding box).

    Returns:
        ``{"dealer": [...], "1": [...], ...}`` (positions by where they lie, not in order).
    """
    g = group_seats(reads, frame_size)
    return {p: ts for p, ts in g.groups.items() if p not in g.problems or len(ts) != 4}

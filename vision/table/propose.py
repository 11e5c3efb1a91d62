"""Propose a layout file from frames of the table (``paigow layout propose``).

A layout pins the positions: with it every tile belongs to the polygon that holds its centre
(:func:`vision.table.rounds.assign_positions`). Drawing polygons by hand is tedious, so this module
drafts them from one frame, several frames or a video with the tiles laid out, on any table:
the dealer anywhere in the picture, the table at any rotation or camera tilt. It assumes
nothing about where the dealer sits in the picture; it reasons from what a pai gow table is
(docs/layout.md, "Proposing a layout"):

1. **Positions.** Each frame is read by the product (:class:`vision.pipeline.Pipeline`, still
   frame). Face-up tiles whose outlines (nearly) touch (``UNIT_GAP`` tile widths) form a unit
   (a hand, or a position whose hands touch); units are paired (:func:`_pair_units`: the
   pairing placing the most tiles, then the least gap) into groups of at most four tiles
   within ``HANDS_GAP`` tile widths: a position holds
   two hands of two tiles (docs/rules.md, sections 4-5). A group of three or four tiles is a
   position (three: a tile covered or not found); a group whose own hands lie no nearer each
   other than to a tile outside it (``NEAR_RATIO``) is not (its hands could be a neighbour's),
   nor is a lone hand or a group of more than four. Every group that is not a position is
   **listed** (``left_out``, the text output) and drawn, never dropped silently.
2. **Several frames** (rounds) are pooled: a position of one frame and one of another are the
   same place when their centres lie within half a position's length; a seat empty in one
   round and dealt in another is thus included.
3. **The dealer.** Given as a fact (``dealer_at``: the position nearest that point), or from
   the table's shape: players sit along the arc of the table, the dealer at the middle of its
   straight side, so the players' positions lie about equally far from the dealer's (the
   seats are one arc about the dealer). For each candidate the spread of the distances to the
   other positions (coefficient of variation) is computed; the candidate with the least is
   the dealer when its spread is at most ``ARC_SPREAD`` and every other candidate's is at
   least ``DEALER_MARGIN`` times larger. Three positions always form a triangle with one
   corner about equally far from the other two, so at least ``MIN_FOR_DEALER`` positions are
   needed. Where the spread does not decide and there are at least ``ARC_MIN`` positions,
   the **arc** decides: the players' positions lie along one arc of the table (a circle, or a
   straight rail, seen at up to ~35 degrees of tilt), the dealer's off it; a candidate is the
   dealer when the other positions fit one arc within ``ARC_FIT`` (RMS distance over their
   mean distance to the candidate) and every other candidate's fit is at least
   ``ARC_REJECT``: the true dealer's own fit then blocks any player (its others include the
   dealer, who lies off the players' arc).
   Independently, the **woodpile**: the dealer builds the eight face-down stacks of four in
   front of their own place and deals from them (docs/rules.md, section 5), so stacks left
   undealt lie at the dealer's place. A row of two or more confident, tile-sized backs lying
   side by side, whose nearest tile belongs to a four-tile position (all its four tiles
   shown: the backs are not its own) and lies at most ``WOODPILE_RATIO`` as far as any other
   tile (the row is at that place, not between two), names that position
   (:func:`woodpile_vote`). Single backs never count (a stack dealt to a seat and not picked
   up is one back; a chip read as a back), nor a row of exactly four (a seat's own four
   tiles set face down could lie so); a player's hand turned down with the other hand face up
   lies nearer its own hand than any other position's, so it names no one. Rows naming
   different positions name none. Where the woodpile and the table's shape both name a
   dealer they must agree, else the dealer is asked for; with two or three positions the
   woodpile alone decides (the shape cannot). Otherwise :class:`DealerUnknown` asks for
   ``--dealer-at`` (listing the positions found) instead of guessing.
4. **Seat numbers** follow the players' order around the dealer: seat 1 at the dealer's left
   (the image right when the dealer is at the top of the picture, like
   :data:`vision.table.seats.SEAT_MODEL`), each player taking the seat whose direction from the
   dealer in that model is nearest its own, in order (names only: settlement depends on the
   tiles inside each polygon, not on the number).
5. **Polygons**: the minimum-area rectangle around each position's tiles (over every frame),
   grown by ``MARGIN`` tile widths; where two overlap both shrink about their centres until
   they do not. The result passes :meth:`vision.table.rounds.Layout.from_dict`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from scoring.errors import InputError

from vision.recognition.decode import TileRead
from vision.table.seats import HANDS_GAP, NEAR_RATIO, SEAT_MODEL, UNIT_GAP, _components, _outline_gaps
from vision.table.rounds import Layout

__all__ = ["propose_layout", "propose_from_reads", "propose_from_frames", "layout_yaml",
           "find_positions", "choose_dealer", "dealer_and_reason", "DealerUnknown",
           "draw_proposal", "MARGIN",
           "ARC_SPREAD", "DEALER_MARGIN", "MIN_FOR_DEALER", "woodpile_vote", "ARC_MIN",
           "ARC_FIT", "ARC_REJECT", "WOODPILE_RATIO"]

#: Rectangles around a position's tiles are grown by this many tile widths on every side.
MARGIN = 1.0
#: The players' distances to the dealer's position may spread this much (standard deviation
#: over mean): the arc is a circle about the dealer seen at up to ~35 degrees of camera tilt
#: (a circle then spans radii differing by cos 35 = 0.82) with seats set in or out a little.
ARC_SPREAD = 0.25
#: The dealer is chosen only when every other candidate's spread is this many times larger.
DEALER_MARGIN = 1.5
#: Fewest positions (dealer included) for the table's shape to tell the dealer.
MIN_FOR_DEALER = 4
#: The arc test needs this many positions (five others: two more than the three points any
#: circle passes through, so a fit can fail).
ARC_MIN = 6
#: The players' positions lie on one arc within this RMS distance over their mean distance to
#: the dealer: a circle seen at 35 degrees of tilt fits its best circle within 0.014 of the
#: radius; seats set in or out by ~3 % of the radius bring five to seven seats to at most
#: ~0.06 (computed for semicircles of 120-170 degrees, any turn).
ARC_FIT = 0.06
#: ... and every other candidate's others fit no arc better than this (twice ``ARC_FIT``).
ARC_REJECT = 2 * ARC_FIT
#: Face-down tiles counted as woodpile stacks: the detector at least this confident (the
#: product's default face confidence), each side within ``BACK_SIZE`` times the face-up
#: tiles' median (a tile's top, not a chip or a shadow).
BACK_CONFIDENCE, BACK_SIZE = 0.5, 1.33
#: A row of stacks names the position whose tiles it lies at most this fraction as far from
#: as from any other tile (clearly at that place, not between two).
WOODPILE_RATIO = 0.5
#: Video: one frame read every this many seconds, at most ``MAX_FRAMES`` frames.
EVERY_S, MAX_FRAMES = 1.0, 30


class DealerUnknown(InputError):
    """The positions were found but which one is the dealer's cannot be told from the
    picture: the message asks for ``--dealer-at X,Y``; ``candidates`` holds the positions'
    centres (px)."""

    def __init__(self, message: str, candidates: list[list[float]]):
        super().__init__(message)
        self.candidates = candidates


@dataclass
class Found:
    """Positions and left-out groups of one frame (:func:`find_positions`).

    Attributes:
        positions: each position's tiles (3 or 4 face-up or unknown tiles).
        left_out: ``(tiles, why)`` of every group that is not a position.
        width: the tiles' median short side, px.
    """

    positions: list[list[TileRead]] = field(default_factory=list)
    left_out: list[tuple[list[TileRead], str]] = field(default_factory=list)
    width: float = 1.0


def _corners(tiles: Sequence[TileRead]) -> np.ndarray:
    return np.concatenate([np.asarray(t.polygon, np.float64).reshape(4, 2) for t in tiles])


def find_positions(reads: Sequence[TileRead]) -> Found:
    """Group one frame's tiles into positions (module docstring, step 1).

    Args:
        reads: the frame's :class:`vision.recognition.decode.TileRead` s (face-down tiles are stacks, not
            hands: they are listed as left out when they lie apart from every position).

    Returns:
        :class:`Found`.
    """
    ups = [r for r in reads if r.state != "face_down"]
    downs = [r for r in reads if r.state == "face_down"]
    out = Found()
    if downs:
        out.left_out.append((downs, "face-down tiles (stacks or hands not turned over): not "
                                    "a position's face-up hands"))
    if not ups:
        return out
    polys = np.array([np.asarray(r.polygon, np.float64).reshape(4, 2) for r in ups])
    side = np.linalg.norm(np.roll(polys, -1, axis=1) - polys, axis=2)
    width = max(float(np.median(np.minimum(side[:, 0] + side[:, 2], side[:, 1] + side[:, 3])))
                / 2, 1.0)
    out.width = width
    gaps = _outline_gaps(polys)
    units = _components(gaps < UNIT_GAP * width)
    for tiles_idx, why in _pair_units(units, gaps, width):
        tiles = [ups[i] for i in sorted(tiles_idx)]
        if why is None:
            out.positions.append(tiles)
        else:
            out.left_out.append((tiles, why))
    return out


def _pair_units(units: list[list[int]], gaps: np.ndarray, width: float
                ) -> list[tuple[list[int], str | None]]:
    """Positions from units (tile index lists): ``[(tile indices, None)]`` for each position
    and ``[(tile indices, why)]`` for each group that is none.

    A position is a unit of three or four tiles, or two units joined (a hand and a hand, a
    hand and a lone tile, three tiles and one) of three or four tiles whose outlines come
    within ``HANDS_GAP`` tile widths. Units that could join form a graph; in each of its
    connected parts every way of joining is tried (a matching): the one placing the most
    tiles in positions, then with the least summed gap, is taken -- unless another places as
    many with a summed gap within ``1 / NEAR_RATIO`` of it, when which hands belong together
    is unclear and the part's units are left out. (Joining nearest first would pair a seat's
    hand with its neighbour's when they lie nearer than its own second hand.)
    """
    n = len(units)
    size = [len(u) for u in units]
    link = np.full((n, n), np.inf)
    for a in range(n):
        for b in range(a + 1, n):
            if size[a] <= 3 and size[b] <= 3 and size[a] + size[b] in (3, 4):
                g = float(gaps[np.ix_(units[a], units[b])].min())
                if g <= HANDS_GAP * width:
                    link[a, b] = link[b, a] = g
    out: list[tuple[list[int], str | None]] = []
    for part in _components(np.isfinite(link)):
        if len(part) > 12:  # far more than a position's: no pairing is tried
            for k in part:
                out.append((units[k], f"{size[k]} tile(s) among {len(part)} groups lying "
                                      "together: which hands belong together is unclear"))
            continue
        found: list[tuple[int, float, list[tuple[int, int]]]] = []

        def walk(rest: list[int], pairs: list[tuple[int, int]]):
            if not rest:
                placed = sum(size[a] + size[b] for a, b in pairs) + sum(
                    size[k] for k in part if size[k] >= 3 and all(k not in q for q in pairs))
                found.append((placed, sum(link[a, b] for a, b in pairs), list(pairs)))
                return
            i, tail = rest[0], rest[1:]
            walk(tail, pairs)
            for j in tail:
                if np.isfinite(link[i, j]):
                    walk([k for k in tail if k != j], pairs + [(i, j)])

        walk(list(part), [])
        best = max(f[0] for f in found)
        top = sorted((f for f in found if f[0] == best), key=lambda f: f[1])
        if len(top) > 1 and top[1][1] * NEAR_RATIO <= top[0][1] + 1e-9 and top[1][2] != top[0][2]:
            for k in part:
                out.append((units[k], "its hands lie about as near another group's: which "
                                      "hands belong together is unclear"))
            continue
        pairs = top[0][2]
        used = {k for q in pairs for k in q}
        for a, b in pairs:
            out.append((units[a] + units[b], None))
        for k in part:
            if k in used:
                continue
            if size[k] in (3, 4):
                out.append((units[k], None))
            elif size[k] > 4:
                out.append((units[k], f"{size[k]} tiles lie together: more than the four of "
                                      "one position (two positions touching, or a stack)"))
            else:
                out.append((units[k], f"{size[k]} tile(s) with no second hand within "
                                      f"{HANDS_GAP:g} tile widths: not a position's two hands"))
    return out


def _sides(poly: np.ndarray) -> tuple[float, float]:
    """(long, short) side of a quadrilateral (4, 2) px: means of opposite sides."""
    side = np.linalg.norm(np.roll(poly, -1, axis=0) - poly, axis=1)
    a, b = (side[0] + side[2]) / 2, (side[1] + side[3]) / 2
    return max(a, b), min(a, b)


#: :func:`woodpile_vote`'s reason when rows of face-down stacks name different positions
#: (a frame whose rows disagree: no frame's vote counts then)
WOODPILE_SPLIT = "rows of face-down stacks lie at different positions"


def woodpile_vote(reads: Sequence[TileRead], found: Found) -> tuple[int | None, str]:
    """The position the undealt stacks lie at, in one frame (module docstring, step 3).

    Args:
        reads: the frame's :class:`vision.recognition.decode.TileRead` s.
        found: :func:`find_positions` of those reads.

    Returns:
        ``(index into found.positions, why)``, or ``(None, why)`` when no row of stacks names
        one position (none seen, or rows naming different positions).
    """
    from shapely.geometry import Polygon

    ups = [r for r in reads if r.state != "face_down"]
    if not ups or not found.positions:
        return None, "no face-up position"
    size = np.array([_sides(np.asarray(r.polygon, np.float64).reshape(4, 2)) for r in ups])
    long_, short = np.median(size[:, 0]), np.median(size[:, 1])
    backs = []
    for r in reads:
        if r.state != "face_down" or r.confidence < BACK_CONFIDENCE:
            continue
        q = np.asarray(r.polygon, np.float64).reshape(4, 2)
        a, b = _sides(q)
        if 1 / BACK_SIZE <= a / long_ <= BACK_SIZE and 1 / BACK_SIZE <= b / short <= BACK_SIZE:
            backs.append(q)
    if len(backs) < 2:
        return None, "no row of face-down stacks"
    width = found.width
    groups = _components(_outline_gaps(np.array(backs)) < HANDS_GAP * width)
    owner = {id(t): k for k, tiles in enumerate(found.positions) for t in tiles}
    up_polys = [Polygon(np.asarray(r.polygon, np.float64).reshape(4, 2)) for r in ups]
    votes = set()
    for g in groups:
        if len(g) < 2 or len(g) == 4:  # one back: a seat's stack; four: a seat's hands
            continue
        q = np.array([backs[i] for i in g])
        c = q.mean(1)
        # one row, side by side: the centres on a line across the backs' long sides
        u, sv, vt = np.linalg.svd(c - c.mean(0))
        row = vt[0]
        off = np.abs((c - c.mean(0)) @ vt[1]).max()
        longdir = np.array([_long_axis(x) for x in q])
        if off > 0.5 * width or np.abs(longdir @ row).max() > 0.5:
            continue
        row_poly = [Polygon(x) for x in q]
        gaps = np.array([min(b.distance(t) for b in row_poly) for t in up_polys])
        near = int(np.argmin(gaps))
        k = owner.get(id(ups[near]))
        if k is None or len(found.positions[k]) != 4:
            continue
        mine = np.array([owner.get(id(t)) == k for t in ups])
        other = gaps[~mine].min() if (~mine).any() else np.inf
        if gaps[mine].min() <= WOODPILE_RATIO * other:
            votes.add(k)
    if len(votes) == 1:
        return votes.pop(), "face-down stacks lie at it"
    if votes:
        return None, WOODPILE_SPLIT
    return None, "no row of face-down stacks at one position"


def _long_axis(q: np.ndarray) -> np.ndarray:
    """Unit vector along the long sides of a quadrilateral (4, 2)."""
    e0 = (q[1] - q[0] + q[2] - q[3]) / 2
    e1 = (q[2] - q[1] + q[3] - q[0]) / 2
    v = e0 if np.linalg.norm(e0) >= np.linalg.norm(e1) else e1
    return v / max(np.linalg.norm(v), 1e-9)


def _arc_residual(points: np.ndarray) -> float:
    """RMS distance (px) of ``points`` (k, 2) from their best circle or straight line
    (a least-squares circle, Kasa's algebraic fit refined by Gauss-Newton; numpy only, as
    scipy is not a dependency)."""
    c = points.mean(0)
    _, _, vt = np.linalg.svd(points - c)
    line = float(np.sqrt(np.mean(((points - c) @ vt[1]) ** 2)))
    A = np.c_[2 * points, np.ones(len(points))]
    sol = np.linalg.lstsq(A, (points ** 2).sum(1), rcond=None)[0]
    p = np.array([sol[0], sol[1], np.sqrt(max(sol[2] + sol[0] ** 2 + sol[1] ** 2, 0.0))])
    for _ in range(50):
        d = points - p[:2]
        dist = np.maximum(np.linalg.norm(d, axis=1), 1e-9)
        J = np.c_[-d / dist[:, None], -np.ones(len(points))]
        step = np.linalg.lstsq(J, -(dist - p[2]), rcond=None)[0]
        if not np.all(np.isfinite(step)):
            break
        p = p + step
        if np.linalg.norm(step) < 1e-6:
            break
    circle = float(np.sqrt(np.mean((np.linalg.norm(points - p[:2], axis=1) - p[2]) ** 2)))
    return min(line, circle) if np.isfinite(circle) else line


def _arc_fits(centres: np.ndarray) -> np.ndarray:
    """float (n,): for each position, the others' arc residual over their mean distance to
    it (module docstring, step 3)."""
    out = np.empty(len(centres))
    for i in range(len(centres)):
        others = np.delete(centres, i, axis=0)
        m = np.linalg.norm(others - centres[i], axis=1).mean()
        out[i] = _arc_residual(others) / max(m, 1e-9)
    return out


def _spreads(centres: np.ndarray) -> np.ndarray:
    """float (n,) coefficient of variation of each point's distances to the others."""
    d = np.linalg.norm(centres[:, None] - centres[None], axis=-1)
    out = np.empty(len(centres))
    for i in range(len(centres)):
        r = np.delete(d[i], i)
        out[i] = r.std() / max(r.mean(), 1e-9)
    return out


def dealer_and_reason(centres: np.ndarray, dealer_at: Sequence[float] | None = None,
                      woodpile: int | None = None) -> tuple[int, str]:
    """Index of the dealer's position among ``centres`` (float (n, 2) px) and what told it
    (module docstring, step 3).

    Args:
        centres: the positions' centres, px.
        dealer_at: ``(x, y)`` px given by the user: the nearest position is the dealer's.
        woodpile: index of the position the undealt face-down stacks lie at
            (:func:`woodpile_vote`), or None.

    Returns:
        ``(index, what told it)``, e.g. ``"face-down stacks (the woodpile) lie at it"``.

    Raises:
        InputError: no position at all.
        DealerUnknown: the picture does not tell (too few positions and no stacks, two
            candidates about as good, or the stacks and the table's shape disagree); the
            message asks for ``--dealer-at X,Y``.
    """
    centres = np.asarray(centres, np.float64).reshape(-1, 2)
    if not len(centres):
        raise InputError("no position with tiles found (lay out the dealer's and the players' "
                         "four tiles each, face up)")
    if dealer_at is not None:
        return int(np.argmin(np.linalg.norm(centres - np.asarray(dealer_at, np.float64),
                                             axis=1))), "given (--dealer-at)"
    listed = ", ".join(f"({x:.0f},{y:.0f})" for x, y in centres)
    ask = f"give --dealer-at X,Y (the dealer's tiles in the picture; positions found at {listed})"
    shape, why, told = None, None, ""
    if len(centres) < MIN_FOR_DEALER:
        why = (f"with fewer than {MIN_FOR_DEALER} positions the table's shape does not tell"
               + ("" if len(centres) < 2 else " and no row of face-down stacks lies at one "
                  "position"))
    else:
        cv = _spreads(centres)
        order = np.argsort(cv)
        best, second = cv[order[0]], cv[order[1]]
        if best <= ARC_SPREAD and second >= DEALER_MARGIN * best:
            shape = int(order[0])
            told = "the table's shape: the players about equally far around it"
        else:
            why = (f"no position has the players about equally far around it (least spread "
                   f"{best:.2f})" if best > ARC_SPREAD else
                   f"two positions fit as the dealer's about as well (spreads {best:.2f} and "
                   f"{second:.2f})")
            if len(centres) >= ARC_MIN:
                fit = _arc_fits(centres)
                k = int(np.argmin(fit))
                if (cv[k] <= ARC_SPREAD and fit[k] <= ARC_FIT
                        and np.delete(fit, k).min() >= ARC_REJECT):
                    shape = k
                    told = "the table's shape: the other positions on one arc"
                else:
                    why += (f", and no one position has the others on one arc (best fits "
                            f"{np.sort(fit)[0]:.3f} and {np.sort(fit)[1]:.3f})")
    if woodpile is not None and len(centres) >= 2:
        if shape is not None and shape != woodpile:
            x, y = centres[shape]
            u, v = centres[woodpile]
            raise DealerUnknown(f"cannot tell which position is the dealer's: the table's "
                                f"shape points to ({x:.0f},{y:.0f}), the face-down stacks to "
                                f"({u:.0f},{v:.0f}); {ask}", centres.round(1).tolist())
        return int(woodpile), ("face-down stacks (the woodpile) lie at it"
                               + (f", and {told}" if shape is not None else ""))
    if shape is not None:
        return shape, told
    if len(centres) < MIN_FOR_DEALER:
        raise DealerUnknown(f"cannot tell which of the {len(centres)} position(s) is the "
                            f"dealer's: {why}; {ask}", centres.round(1).tolist())
    raise DealerUnknown(f"cannot tell which position is the dealer's: {why}; {ask}",
                        centres.round(1).tolist())


def choose_dealer(centres: np.ndarray, dealer_at: Sequence[float] | None = None,
                  woodpile: int | None = None) -> int:
    """Index of the dealer's position among ``centres`` (float (n, 2) px):
    :func:`dealer_and_reason` without the reason."""
    return dealer_and_reason(centres, dealer_at, woodpile)[0]


def _seat_names(centres: np.ndarray, dealer: int) -> list[str]:
    """Names of every position (module docstring, step 4): ``"dealer"`` and seat ids."""
    d = centres[dealer]
    players = [i for i in range(len(centres)) if i != dealer]
    names = ["dealer"] * len(centres)
    if not players:
        return names
    v = centres[players] - d
    u = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
    f = u.mean(0)
    f = f / np.linalg.norm(f) if np.linalg.norm(f) > 1e-6 else u[0]
    left = np.array([f[1], -f[0]])  # image y down: facing (0, 1) -> left (1, 0)
    theta = np.arctan2(v @ left, v @ f)  # + towards the dealer's left
    mx, my = SEAT_MODEL["dealer"]
    model = np.array([np.arctan2(SEAT_MODEL[str(k)][0] - mx, SEAT_MODEL[str(k)][1] - my)
                      for k in range(1, 8)])  # seat 1 (image right, dealer's left) first
    order = np.argsort(-theta)  # dealer's left first
    n = len(order)
    if n > 7:
        raise InputError(f"{n} player positions found, a table has at most 7")
    # ordered assignment of the n players to 7 seats minimising the squared angle misfit
    inf = float("inf")
    cost = np.full((n + 1, 8), inf)
    cost[0, :] = 0.0
    pick = np.zeros((n + 1, 8), int)
    for i in range(1, n + 1):
        for k in range(i, 8):  # player i (1-based, in order) at seat k
            prev = cost[i - 1, i - 1:k]
            j = int(np.argmin(prev)) + i - 1
            cost[i, k] = prev.min() + (theta[order[i - 1]] - model[k - 1]) ** 2
            pick[i, k] = j
    k = int(np.argmin(cost[n, n:])) + n
    for i in range(n, 0, -1):
        names[players[order[i - 1]]] = str(k)
        k = pick[i, k]
    return names


def _rect(points: np.ndarray, grow: float) -> np.ndarray:
    """float64 (4, 2) corners of the minimum-area rectangle around ``points`` (k, 2) px, grown
    by ``grow`` px on every side."""
    import cv2

    (c, (w, h), a) = cv2.minAreaRect(points.astype(np.float32))
    return cv2.boxPoints((c, (w + 2 * grow, h + 2 * grow), a)).astype(np.float64)


def _length(points: np.ndarray) -> float:
    """Long side (px) of the minimum-area rectangle around ``points`` (k, 2)."""
    import cv2

    return float(max(cv2.minAreaRect(points.astype(np.float32))[1]))


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """True when two convex outlines (k, 2) px share more than half a px²."""
    from vision.geometry import convex_intersection

    return convex_intersection(a, b)[0] > 0.5


def propose_from_frames(frames: Sequence[Sequence[TileRead]], frame_size: tuple[int, int],
                        table_id: str = "table-1", dealer_at: Sequence[float] | None = None
                        ) -> tuple[dict, dict, list[dict]]:
    """Layout dict from the tile reads of one or more frames of one fixed camera.

    Args:
        frames: per frame, its :class:`vision.recognition.decode.TileRead` s.
        frame_size: ``(width, height)`` px.
        table_id: the table's name in the layout.
        dealer_at: ``(x, y)`` px near the dealer's tiles, or None to tell from the table's
            shape.

    Returns:
        ``(layout dict, positions info {position: {"source": "tiles", "tiles": n (most in one
        frame), "frames": k, "centre": [x, y]}, the dealer's also "told_by": what told it},
        left_out [{"frame", "tiles", "faces",
        "centre", "polygon", "why"}])``.

    Raises:
        DealerUnknown: which position is the dealer's cannot be told (asks for the fact).
        InputError: no position found, or more than seven players.
    """
    found = [find_positions(r) for r in frames]
    left_out = []
    for k, f in enumerate(found):
        for tiles, why in f.left_out:
            pts = _corners(tiles)
            left_out.append({"frame": k, "tiles": len(tiles),
                             "faces": [t.face for t in tiles], "centre":
                                 [round(float(v), 1) for v in pts.mean(0)],
                             "polygon": _rect(pts, 0).round(1).tolist(), "why": why})
    widths = [f.width for f in found if f.positions]
    if not widths:
        msg = "no position with tiles found (lay out the dealer's and the players' four tiles " \
              "each, face up)"
        if left_out:
            msg += f"; {len(left_out)} group(s) of tiles are not positions: " + "; ".join(
                f"{g['tiles']} at ({g['centre'][0]:.0f},{g['centre'][1]:.0f}): {g['why']}"
                for g in left_out[:4])
        raise InputError(msg)
    width = float(np.median(widths))
    # pool the frames' positions by place (module docstring, step 2)
    clusters: list[dict] = []
    votes = []  # (frame, cluster) the face-down stacks name, per frame that names one
    for k, f in enumerate(found):
        pile, pile_why = woodpile_vote(frames[k], f)
        if pile_why == WOODPILE_SPLIT:  # a frame whose rows disagree: none counts
            votes.append(None)
        for j, tiles in enumerate(f.positions):
            pts = _corners(tiles)
            c = pts.mean(0)
            length = _length(pts)
            near = [cl for cl in clusters
                    if np.linalg.norm(cl["centre"] - c) < 0.5 * max(cl["length"], length)]
            if near:
                cl = min(near, key=lambda q: np.linalg.norm(q["centre"] - c))
                cl["points"].append(pts)
                cl["frames"].add(k)
                cl["tiles"] = max(cl["tiles"], len(tiles))
                allp = np.concatenate(cl["points"])
                cl["centre"] = np.mean([p.mean(0) for p in cl["points"]], axis=0)
                cl["length"] = _length(allp)
            else:
                cl = {"centre": c, "points": [pts], "frames": {k}, "tiles": len(tiles),
                      "length": length}
                clusters.append(cl)
            if pile == j:
                votes.append(id(cl))
    centres = np.array([cl["centre"] for cl in clusters])
    ids = [id(cl) for cl in clusters]
    # every frame naming a place must name the same one
    woodpile = ids.index(votes[0]) if votes and len(set(votes)) == 1 and votes[0] else None
    dealer, told = dealer_and_reason(centres, dealer_at, woodpile)
    names = _seat_names(centres, dealer)
    polys = {names[i]: _rect(np.concatenate(cl["points"]), MARGIN * width)
             for i, cl in enumerate(clusters)}
    order = ["dealer"] + [str(k) for k in range(1, 8)]
    keys = [p for p in order if p in polys]
    for _ in range(200):  # shrink overlapping pairs about their centres
        changed = False
        for i in range(len(keys)):
            for j in range(i + 1, len(keys)):
                a, b = keys[i], keys[j]
                if _overlap(polys[a], polys[b]):
                    for q in (a, b):
                        c = polys[q].mean(0)
                        polys[q] = c + (polys[q] - c) * 0.95
                    changed = True
        if not changed:
            break
    from shapely.geometry import Polygon, box

    frame = box(0, 0, frame_size[0] - 1, frame_size[1] - 1)

    def inside(q):  # the polygon's part inside the picture (shapely), corners in order
        part = Polygon(q).intersection(frame)
        pts = np.asarray(part.exterior.coords)[:-1] if not part.is_empty and \
            part.geom_type == "Polygon" else q
        return [[round(float(x), 1), round(float(y), 1)] for x, y in pts]

    layout = {"table_id": table_id, "rules": "pa", "banker": "dealer",
              "positions": {p: inside(polys[p]) for p in keys}}
    Layout.from_dict(layout, where="proposed layout")  # what load_layout will accept
    info = {names[i]: {"source": "tiles", "tiles": cl["tiles"], "frames": len(cl["frames"]),
                       "centre": [round(float(v), 1) for v in cl["centre"]]}
            for i, cl in enumerate(clusters)}
    info["dealer"]["told_by"] = told
    return layout, {p: info[p] for p in keys}, left_out


def propose_from_reads(reads, frame_size: tuple[int, int], table_id: str = "table-1",
                       dealer_at: Sequence[float] | None = None
                       ) -> tuple[dict, dict, list[dict]]:
    """:func:`propose_from_frames` of one frame's reads."""
    return propose_from_frames([list(reads)], frame_size, table_id, dealer_at)


def _frames_of(sources: Sequence[str | Path]):
    """Yield ``(name, BGR image)`` of every picture of the sources: image files, folders of
    images, videos (one frame every ``EVERY_S`` s, at most ``MAX_FRAMES`` per video)."""
    import cv2

    for src in sources:
        p = Path(src)
        if p.is_dir():
            files = sorted(q for q in p.iterdir() if q.suffix.lower() in
                           (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"))
            if not files:
                raise InputError(f"no images in folder {p}")
            yield from _frames_of(files)
            continue
        if not p.is_file():
            raise InputError(f"image not found: {p}")
        img = cv2.imread(str(p), cv2.IMREAD_COLOR)
        if img is not None:
            yield str(p), img
            continue
        cap = cv2.VideoCapture(str(p))
        if not cap.isOpened():
            raise InputError(f"cannot read image {p} (not an image or video file?)")
        fps = cap.get(cv2.CAP_PROP_FPS) or 30.0
        step = max(int(round(fps * EVERY_S)), 1)
        k = n = 0
        try:
            while n < MAX_FRAMES:
                ok, frame = cap.read()
                if not ok:
                    break
                if k % step == 0:
                    n += 1
                    yield f"{p}#{k}", frame
                k += 1
        finally:
            cap.release()
        if n == 0:
            raise InputError(f"cannot read image {p} (not an image or video file?)")


def propose_layout(sources, models_dir=None, backend: str | None = None,
                   table_id: str = "table-1", min_confidence: float = 0.5,
                   dealer_at: Sequence[float] | None = None, picture: str | Path | None = None
                   ) -> dict:
    """Propose a layout from frames of the table (one camera, fixed).

    Args:
        sources: a path or a list of paths: still frames, folders of them, or videos.
        models_dir: folder with the tile and spot models (default: the repository's models/).
        backend: ``"onnx"`` or ``"ultralytics"``.
        table_id: the table's name written into the layout.
        min_confidence: faces below this confidence are unknown (it does not change the
            grouping: every tile counts).
        dealer_at: ``(x, y)`` px near the dealer's tiles (the fact asked for when the table's
            shape does not tell).
        picture: write the first frame with the proposal drawn here (PNG/JPEG): the polygons,
            and every group of tiles left out, in red with its number (also when the dealer
            is asked for: the positions found are drawn numbered).

    Returns:
        ``{"image", "frames", "frame_size": [w, h], "layout": layout dict, "positions":
        {position: {"source", "tiles", "frames", "centre"}}, "left_out": [{"frame", "tiles",
        "faces", "centre", "polygon", "why"}]}``.

    Raises:
        InputError: missing or unreadable source, missing models, frames of different sizes,
            or no position found. DealerUnknown (an InputError): the dealer must be given.
    """
    from vision import MODELS_DIR
    from vision.config import RecognitionConfig
    from vision.recognition.engine import ReadMode, RecognitionEngine

    if isinstance(sources, (str, Path)):
        sources = [sources]
    pipe = None
    names, reads, first = [], [], None
    for name, frame in _frames_of(sources):
        if first is None:
            first = frame
        elif frame.shape != first.shape:
            raise InputError(f"{name}: {frame.shape[1]} x {frame.shape[0]} px, the first frame "
                             f"is {first.shape[1]} x {first.shape[0]}: one camera's frames only")
        if pipe is None:
            pipe = RecognitionEngine(RecognitionConfig(models_dir=models_dir or MODELS_DIR,
                                                       backend=backend,
                                                       min_confidence=min_confidence))
        r = list(pipe.read(frame, ReadMode.STILL))
        names.append(name)
        reads.append(r)
    size = (int(first.shape[1]), int(first.shape[0]))
    where = names[0] if len(names) == 1 else f"{names[0]} (+{len(names) - 1} frames)"
    try:
        layout, info, left = propose_from_frames(reads, size, table_id, dealer_at)
    except DealerUnknown as exc:
        if picture is not None:
            draw_proposal(first, {}, [], Path(picture), candidates=exc.candidates)
        raise DealerUnknown(f"{where}: {exc}", exc.candidates) from None
    except InputError as exc:
        raise InputError(f"{where}: cannot place the seats: {exc}") from None
    res = {"image": str(names[0]), "frames": len(names), "frame_size": list(size),
           "layout": layout, "positions": info, "left_out": left}
    if picture is not None:
        draw_proposal(first, layout["positions"], left, Path(picture))
        res["picture"] = str(picture)
    return res


def draw_proposal(image: np.ndarray, positions: dict, left_out: list[dict], path: Path,
                  candidates: list | None = None) -> None:
    """Write ``image`` (uint8 BGR) with the proposed polygons (green, named), the groups left
    out (red, numbered as in the text output) and, when the dealer is asked for, the
    positions found (numbered, yellow) to ``path``.

    Raises:
        InputError: the picture cannot be written.
    """
    import cv2

    out = image.copy()
    s = max(out.shape[:2]) / 1280
    th = max(int(round(2 * s)), 1)
    for p, poly in positions.items():
        q = np.asarray(poly, np.int32)
        cv2.polylines(out, [q], True, (0, 220, 0), th)
        cv2.putText(out, p, tuple(int(v) for v in q.min(0)), cv2.FONT_HERSHEY_SIMPLEX,
                    0.8 * s, (0, 220, 0), th)
    for k, g in enumerate(left_out, 1):
        q = np.asarray(g["polygon"], np.int32)
        cv2.polylines(out, [q], True, (0, 0, 255), th)
        cv2.putText(out, f"left out {k}", tuple(int(v) for v in q.min(0)),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.6 * s, (0, 0, 255), th)
    for k, (x, y) in enumerate(candidates or [], 1):
        cv2.circle(out, (int(x), int(y)), int(12 * s), (0, 220, 255), th)
        cv2.putText(out, f"{k}: ({x:.0f},{y:.0f})", (int(x + 14 * s), int(y)),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.6 * s, (0, 220, 255), th)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not cv2.imwrite(str(path), out):
        raise InputError(f"--picture {path}: cannot write (use .png or .jpg)")


def layout_yaml(proposal: dict) -> str:
    """The proposal's layout as YAML text, with a header comment naming the frame(s), and one
    comment line per group of tiles left out (never silently)."""
    import yaml

    n = proposal.get("frames", 1)
    lines = [f"# layout proposed by `paigow layout propose` from {proposal['image']}"
             + (f" and {n - 1} more frame(s)" if n > 1 else "")
             + f" ({proposal['frame_size'][0]} x {proposal['frame_size'][1]} px)",
             "# polygons in image pixels; check them over the frame (--picture), edit, then "
             "`paigow run SOURCE --layout FILE`"]
    told = proposal.get("positions", {}).get("dealer", {}).get("told_by")
    if told:
        lines.append(f"# dealer: {told}")
    for k, g in enumerate(proposal.get("left_out", ()), 1):
        lines.append(f"# left out {k}: {g['tiles']} tile(s) at ({g['centre'][0]:.0f}, "
                     f"{g['centre'][1]:.0f}): {g['why']}")
    lay = dict(proposal["layout"])
    positions = lay.pop("positions")
    lines.append(yaml.safe_dump(lay, sort_keys=False).rstrip("\n"))
    lines.append("positions:")
    for pos, poly in positions.items():
        pts = ", ".join(f"[{x:g}, {y:g}]" for x, y in poly)
        lines.append(f'  "{pos}": [{pts}]' if pos != "dealer" else f"  dealer: [{pts}]")
    return "\n".join(lines) + "\n"

"""Table: tile reads -> positions (two hands each) -> rounds settled by :mod:`scoring.settle`.

Design: docs/architecture.md (the table stage); the rounds it produces become round events
(docs/round-event.md) in :mod:`vision.events`.

Positions
---------
With a :class:`Layout` (YAML, polygons per position in image pixels) a tile belongs to the
position whose polygon holds its centre (:func:`assign_positions`). A layout pins the seats;
``paigow layout propose FRAME`` writes one from a still frame (:mod:`vision.layout_propose`).

Without a layout, :func:`group_seats` names the tiles by *where* they lie, never by counting
groups (a chip taken for a tile or a hand split in two must not shift every seat after it):

1. tiles whose outlines come within ``UNIT_GAP`` tile widths form a group (a hand, or a
   position whose hands touch);
2. the table model :data:`SEAT_MODEL` -- the dealer at the top centre, seats "1".."7" evenly
   along an arc facing the dealer, seat 1 at the image right -- is fitted (scale, shift, a
   turn of at most ``MAX_ROTATION``) to the groups that look like a position (four touching
   tiles, or two hands of two). The dealer's group and at least ``MIN_FIT - 1`` others must
   fit, the dealer's tiles must lie square to the fitted table (``DEALER_SQUARE``), no
   different assignment of those groups to places may fit about as well, and no
   position-like group may be left over beyond an end seat; otherwise no position is named
   (the reason is kept). Along the arc the seats fit their own image shifted by one seat
   after a turn of about 18 degrees; the dealer's square tiles and the left-over end seat are
   what keep the names from sliding;
3. each group goes to the fitted place nearest its centre; a group further than
   ``STRAY_RADIUS`` seat spacings from every place is left out (a chip, a card, the woodpile);
   a group about as near a second place (``BETWEEN_RATIO``) lies between two positions and
   makes both unclear;
4. a position is a seat candidate only with exactly four tiles that are the group the table
   was fitted to at that place, lying as two hands of two, with no other tile within
   ``NEAR_RATIO`` of the gap between their two hands.

Unclear positions carry a ``("seat_unclear", why)`` problem (``build_positions(...,
problems=)``) and are never settled: the grouping abstains rather than guesses. Callers that
take only the groups (:func:`auto_group`) get the unclear positions withheld unless their tile
count already keeps them from settling.
Either way the *banker* is a position name (``"dealer"`` by default; ``--banker 3``
when seat 3 banks).

A position's four tiles are two hands laid together: :func:`pair_hands` chooses the pairing of
the three possible ones with the least summed centre distance; the hand with the higher key
(:func:`scoring.hands.hand_key`) is the high hand. The vision system cannot tell which hand a
player meant as high, so it never reports a mis-set from the table; settle does the rest.

Rounds over time
----------------
:class:`RoundTracker` keeps, per position, the signature of what it shows (the setting, or the
problem: unknown tiles, face-down tiles, wrong tile count) and how many consecutive frames it
has been the same. A position is **final** when it shows a setting of four known tiles, identical
for ``n_stable`` consecutive frames (any occlusion -- a missing or unknown tile -- breaks the run).
The round **settles** when the banker's position is final and every other position showing tiles
is final too, or at the latest ``settle_wait`` frames after the banker became final (positions
still occluded, face down or unread then are not settled). Settlement uses :func:`scoring.settle.settle_round` with the final positions only;
every other position is reported ``"not_settled"`` with its reason -- never a guessed result.
A face read more often than a set holds (a misread somewhere) excludes every position holding it
(and the whole round when the banker holds it). One event per round: after settling, nothing is
emitted until the banker's position is stably cleared or stably shows another setting for
``n_stable`` frames; then a new round opens (an occlusion of the banker's tiles, however long,
does not open a new round, so the same round is never emitted twice). For still images use ``n_stable=1``.

Every round is accounted for: a round that showed tiles but never settled (the banker's tiles
unreadable or covered until the table was cleared) is emitted as an unsettled round (``result``
None, each position's reason) when the table has been empty for ``n_stable`` frames, or by
:meth:`RoundTracker.flush` when the source ends (or, for still images, before the next image).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from scoring.errors import InputError
from scoring.hands import hand_key
from scoring.rules import get_profile
from scoring.setting import Setting, get_house_way
from scoring.settle import POSITIONS, RoundResult, parse_commission, parse_money, settle_round
from scoring.tiles import TILES_BY_FACE

from .decode import TileRead

__all__ = [
    "Layout",
    "PositionState",
    "SettledRound",
    "RoundTracker",
    "load_layout",
    "assign_positions",
    "position_of",
    "auto_group",
    "group_seats",
    "SeatGrouping",
    "SEAT_MODEL",
    "pair_hands",
    "build_positions",
    "point_in_polygon",
    "points_in_polygon",
]


# --------------------------------------------------------------------------- layout


@dataclass
class Layout:
    """A table's geometry and money settings (from a layout YAML).

    Attributes:
        positions: position id (``"dealer"``, ``"1".."7"``) -> float64 (k, 2) polygon in image
            pixels (k >= 3).
        table_id: the table's name in events.
        rules: rule profile name (``"pa"`` default, ``"nj"``).
        commission: commission rate as exact decimal text, or None for the profile's.
        house_way: house way name (``"reference"`` default).
        banker: the banking position (``"dealer"`` default, or a seat id).
        bets: position -> wager as exact decimal text (default 1 each).
        co_bank: the house co-banks with a banking player.
        path: where the layout came from (for messages).

    YAML form (``rules``, ``commission``, ``table_id``, ``house_way``, ``banker``, ``bets``,
    ``co_bank`` optional)::

        table_id: table-1
        rules: pa
        commission: "0.05"
        positions:
          dealer: [[860, 40], [1060, 40], [1060, 240], [860, 240]]
          "1": [[1500, 700], ...]
    """

    positions: dict[str, np.ndarray]
    table_id: str = "table-1"
    rules: str = "pa"
    commission: str | None = None
    house_way: str = "reference"
    banker: str = "dealer"
    bets: dict[str, str] = field(default_factory=dict)
    co_bank: bool = False
    path: str = "<layout>"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "layout") -> "Layout":
        """Validate and build a layout from its dict form (see class docstring).

        Raises:
            InputError: naming ``where`` and the offending key or value.
        """
        if not isinstance(d, Mapping):
            raise InputError(f"{where}: expected a mapping with 'positions', got {type(d).__name__}")
        known = {"positions", "table_id", "rules", "commission", "house_way", "banker", "bets",
                 "co_bank"}
        extra = sorted(set(map(str, d)) - known)
        if extra:
            raise InputError(f"{where}: unknown key(s) {', '.join(extra)} "
                             f"(allowed: {', '.join(sorted(known))})")
        raw = d.get("positions")
        if not isinstance(raw, Mapping) or not raw:
            raise InputError(f"{where}: 'positions' must map position ids to polygons")
        positions: dict[str, np.ndarray] = {}
        for key, poly in raw.items():
            pos = str(key).strip().lower()
            if pos not in POSITIONS:
                raise InputError(f"{where}: position {key!r} is not 'dealer' or a seat id 1..7")
            try:
                arr = np.asarray(poly, dtype=np.float64)
            except (TypeError, ValueError):
                raise InputError(f"{where}: polygon of position {key!r} is not a list of [x, y] "
                                 f"points: {poly!r}") from None
            if arr.ndim != 2 or arr.shape[1] != 2 or len(arr) < 3 or not np.isfinite(arr).all():
                raise InputError(f"{where}: polygon of position {key!r} needs >= 3 finite [x, y] "
                                 f"points, got {poly!r}")
            positions[pos] = arr
        rules = str(d.get("rules", "pa"))
        get_profile(rules)  # InputError naming it
        commission = d.get("commission")
        if commission is not None:
            commission = _exact_text(commission)
            parse_commission(commission)
        way = str(d.get("house_way", "reference"))
        get_house_way(way)
        banker = str(d.get("banker", "dealer")).strip().lower()
        if banker not in positions:
            raise InputError(f"{where}: banker {banker!r} is not one of its positions "
                             f"({', '.join(positions)})")
        bets_raw = d.get("bets") or {}
        if not isinstance(bets_raw, Mapping):
            raise InputError(f"{where}: 'bets' must map positions to amounts, got {bets_raw!r}")
        bets: dict[str, str] = {}
        for key, value in bets_raw.items():
            pos = str(key).strip().lower()
            if pos not in positions:
                raise InputError(f"{where}: bet for {key!r}, which is not a position of the layout")
            text = _exact_text(value)
            parse_money(text, what=f"{where}: bet for position {pos}")
            bets[pos] = text
        co_bank = d.get("co_bank", False)
        if not isinstance(co_bank, bool):
            raise InputError(f"{where}: co_bank must be true or false, got {co_bank!r}")
        table_id = str(d.get("table_id", "table-1"))
        return cls(positions, table_id, rules, commission, way, banker, bets, co_bank, where)

    def to_dict(self) -> dict:
        """The YAML/dict form (polygons as lists)."""
        out: dict[str, Any] = {"table_id": self.table_id, "rules": self.rules,
                               "house_way": self.house_way, "banker": self.banker,
                               "positions": {p: v.tolist() for p, v in self.positions.items()}}
        if self.commission is not None:
            out["commission"] = self.commission
        if self.bets:
            out["bets"] = dict(self.bets)
        if self.co_bank:
            out["co_bank"] = True
        return out


def _exact_text(value) -> str:
    """Money/rate from YAML as text: YAML floats keep the digits the user wrote (repr)."""
    if isinstance(value, bool):
        raise InputError(f"amount {value!r} is not a decimal")
    if isinstance(value, float):
        return repr(value)
    return str(value).strip(" \t\r\n")  # ASCII blanks only: the money grammar is ASCII


def load_layout(path: str | Path) -> Layout:
    """Read a layout YAML file.

    Raises:
        InputError: missing file, invalid YAML, or a bad value (the message names the file).
    """
    import yaml

    p = Path(path)
    if not p.is_file():
        raise InputError(f"layout file not found: {p}")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"layout file {p} is not valid YAML: {str(exc).splitlines()[0]}") from None
    return Layout.from_dict(data, where=f"layout {p}")


# --------------------------------------------------------------------------- positions


def points_in_polygon(points, polygon) -> np.ndarray:
    """Even-odd test of many points against one polygon (vectorised).

    Args:
        points: float array (n, 2) px.
        polygon: float array (k, 2) px, k >= 3.

    Returns:
        bool array (n,); points on an edge may go either way.
    """
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    poly = np.asarray(polygon, dtype=np.float64).reshape(-1, 2)
    x, y = pts[:, 0:1], pts[:, 1:2]  # (n, 1)
    x1, y1 = poly[:, 0][None], poly[:, 1][None]  # (1, k)
    x2, y2 = np.roll(poly[:, 0], -1)[None], np.roll(poly[:, 1], -1)[None]
    crosses = (y1 > y) != (y2 > y)
    with np.errstate(divide="ignore", invalid="ignore"):
        xc = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
    hits = crosses & (x < xc)
    return (hits.sum(1) % 2) == 1


def point_in_polygon(point, polygon) -> bool:
    """True when ``point`` (x, y) lies inside ``polygon`` (k, 2) px (even-odd rule; points on
    an edge may go either way)."""
    return bool(points_in_polygon([point], polygon)[0])


def position_of(reads: Sequence[TileRead], layout: Layout) -> list[str | None]:
    """The layout position holding each tile's centre (None when in no polygon; the first
    polygon in layout order wins where polygons overlap)."""
    reads = list(reads)
    out: list[str | None] = [None] * len(reads)
    if not reads:
        return out
    centres = np.array([r.centre for r in reads])
    for p, poly in layout.positions.items():
        inside = points_in_polygon(centres, poly)
        for i in np.nonzero(inside)[0]:
            if out[i] is None:
                out[i] = p
    return out


def assign_positions(reads: Sequence[TileRead], layout: Layout) -> dict[str, list[TileRead]]:
    """Tiles per layout position (every layout position present, possibly empty); tiles whose
    centre lies in no polygon are left out (see :func:`position_of`)."""
    out: dict[str, list[TileRead]] = {p: [] for p in layout.positions}
    for r, p in zip(reads, position_of(reads, layout)):
        if p is not None:
            out[p].append(r)
    return out


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
#: the top) are not considered.
MAX_ROTATION = 12.0
#: The dealer lays the tiles square to the table's edge: a placement is taken only when the
#: dealer's tiles lie turned like it, within this many degrees (modulo 90). Along the arc of
#: seats the arc fits itself shifted by a seat after a turn of about 18 degrees (the seats'
#: own tiles turn with it); the dealer's tiles do not, which keeps the names from sliding.
DEALER_SQUARE = 12.0
#: A seat whose tiles come closer to another tile than this fraction of the gap between its
#: two hands might be holding a neighbour's hand: unclear.
NEAR_RATIO = 0.6
#: Groups (the dealer's among them) that must fit the table model before any position is named.
MIN_FIT = 4
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
    n = len(p)
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
    ``DEALER_SQUARE``).
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
    results: dict[tuple, tuple[int, float, float]] = {}
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
        if square is not None:
            dealer = next(c for c, k in pairs.items() if k == 0)
            turn = float(np.degrees(np.angle(a)))
            if not abs(_turn_mod90(float(square[dealer]) - turn)) <= DEALER_SQUARE:
                continue  # NaN (the dealer's tiles disagree) fails too
        key = tuple(sorted(pairs.items()))
        rms = float(np.sqrt(np.mean([np.sum((places[k] - cands[c]) ** 2)
                                     for c, k in pairs.items()]))) / sp
        if key not in results or rms < results[key][1]:
            results[key] = (len(pairs), rms, sp)
    if not results:
        return None, 0.0, {}, ("no placement of the table's seats fits the dealer's group (its "
                               f"tiles square to the table) and {MIN_FIT - 1} or more others")
    ranked = sorted(results.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
    best_key, (n_best, rms_best, sp) = ranked[0]
    best = dict(best_key)
    place_tiles = {k: tiles[c] for c, k in best.items()}
    for key, (n, rms, _) in ranked[1:]:
        if n < n_best or rms > max(2.0 * rms_best, 0.12):
            continue
        for c, k in key:  # a different name for tiles the best placement named
            if any(kb != k and place_tiles[kb] & tiles[c] for kb in place_tiles):
                return None, 0.0, {}, ("two placements of the seats fit the groups found "
                                           "about as well")
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

    The hands are the pairing of :func:`pair_hands` (least summed centre distance); each
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


def pair_hands(tiles4: Sequence[TileRead], rules="pa") -> tuple[list[TileRead], list[TileRead]]:
    """Split four tiles into the two hands lying together.

    Of the three pairings, the one with the least summed centre distance (px) is taken. When
    every tile has a face, the hand with the higher key (:func:`scoring.hands.hand_key` under
    ``rules``) comes first (the high hand); otherwise the hands are in pairing order.

    Raises:
        InputError: not exactly four tiles.
    """
    t = list(tiles4)
    if len(t) != 4:
        raise InputError(f"pair_hands needs four tiles, got {len(t)}")
    c = [x.centre for x in t]

    def dist(i, j):
        return float(np.linalg.norm(c[i] - c[j]))

    pairings = [((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2))]
    best = min(pairings, key=lambda p: dist(*p[0]) + dist(*p[1]))
    h1 = [t[i] for i in best[0]]
    h2 = [t[i] for i in best[1]]
    if all(x.face for x in t):
        k1 = hand_key(h1[0].face, h1[1].face, rules)
        k2 = hand_key(h2[0].face, h2[1].face, rules)
        if k2 > k1:
            h1, h2 = h2, h1
    return h1, h2


@dataclass
class PositionState:
    """What one position shows in one frame.

    Attributes:
        position: ``"dealer"`` or ``"1".."7"``.
        tiles: its :class:`TileRead` s (high hand first when set).
        setting: the :class:`scoring.setting.Setting` laid (high = the higher hand), or None
            when the position has a problem.
        problems: list of ``(kind, detail)``: kind ``"wrong_tile_count"``, ``"unknown_tile"``,
            ``"face_down"`` or ``"seat_unclear"`` (automatic grouping, :func:`group_seats`); a
            position with problems is never settled.
    """

    position: str
    tiles: list[TileRead]
    setting: Setting | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)

    @property
    def signature(self) -> tuple:
        """Hashable summary for stability tracking: the setting's hands, or the problems with
        the tiles' states and faces."""
        if self.setting is not None:
            c = self.setting.canonical()
            return ("set", tuple(x.face for x in c.high), tuple(x.face for x in c.low))
        return ("problem", tuple(sorted((r.state, r.face or "") for r in self.tiles)))

    @property
    def reason(self) -> str | None:
        """The problems as one line (None when there are none)."""
        return "; ".join(d for _, d in self.problems) or None


def build_positions(groups: Mapping[str, Sequence[TileRead]], rules="pa",
                    problems: Mapping[str, Sequence[tuple[str, str]]] | None = None
                    ) -> dict[str, PositionState]:
    """:class:`PositionState` per position that shows at least one tile or has a problem.

    Args:
        groups: position -> its tiles.
        rules: rule profile (for which hand is high).
        problems: position -> ``[(kind, detail)]`` found before (e.g. by :func:`group_seats`:
            a position whose grouping is unclear); such a position is never settled.
    """
    out: dict[str, PositionState] = {}
    problems = problems or {}
    for pos in list(groups) + [p for p in problems if p not in groups]:
        tiles = list(groups.get(pos, ()))
        if not tiles and not problems.get(pos):
            continue
        st = PositionState(pos, tiles)
        st.problems.extend((str(k), str(d)) for k, d in problems.get(pos, ()))
        if len(tiles) != 4:
            st.problems.append(("wrong_tile_count", f"{len(tiles)} tiles, a position holds 4"))
        n_unknown = sum(r.state == "unknown" for r in tiles)
        if n_unknown:
            why = "; ".join(sorted({r.reason or "unread" for r in tiles if r.state == "unknown"}))
            st.problems.append(("unknown_tile", f"{n_unknown} tile(s) unknown ({why})"))
        n_down = sum(r.state == "face_down" for r in tiles)
        if n_down:
            st.problems.append(("face_down", f"{n_down} tile(s) face down"))
        if not st.problems:
            h, lo = pair_hands(tiles, rules)
            st.tiles = h + lo
            st.setting = Setting((TILES_BY_FACE[h[0].face], TILES_BY_FACE[h[1].face]),
                                 (TILES_BY_FACE[lo[0].face], TILES_BY_FACE[lo[1].face]))
        out[pos] = st
    return out


# --------------------------------------------------------------------------- rounds


@dataclass
class SettledRound:
    """A round the tracker settled (shaped into an event by :mod:`vision.events`).

    Attributes:
        positions: every position seen in the settling frame (:class:`PositionState`).
        final: positions settled (final and free of duplicate faces).
        result: the :class:`scoring.settle.RoundResult`, or None when nothing could be settled.
        not_settled: position -> reason, for every position seen but not settled.
        alerts: ``[{"kind", "position", "detail"}]`` from the table and from settlement.
        banker: the banking position; rules, commission, house_way as used.
        frame: what the caller passed to :meth:`RoundTracker.update` (index, time, source...)
            for the round's frame (for an unsettled round: the last frame that showed tiles).
        reason: why nothing was settled (None when ``result`` is not None).
    """

    positions: dict[str, PositionState]
    final: list[str]
    result: RoundResult | None
    not_settled: dict[str, str]
    alerts: list[dict]
    banker: str
    rules: str
    commission: str | None
    house_way: str
    bets: dict[str, str]
    frame: dict
    reason: str | None = None


class RoundTracker:
    """Per-position stability over frames and one settlement per round (module docstring).

    Args:
        n_stable: consecutive identical frames for a position to be final (>= 1; 1 for stills).
        banker: the banking position id.
        rules, commission, house_way, bets, co_bank: settlement settings (see
            :func:`scoring.settle.settle_round`); commission None = the profile's rate.
        settle_wait: frames to wait after the banker is final for the other positions to become
            final (default ``2 * n_stable``; 0 when ``n_stable`` is 1, for stills).

    Raises:
        InputError: ``n_stable`` < 1 or a bad setting.
    """

    def __init__(self, n_stable: int = 10, banker: str = "dealer", rules: str = "pa",
                 commission: str | None = None, house_way: str = "reference",
                 bets: Mapping[str, str] | None = None, co_bank: bool = False,
                 settle_wait: int | None = None) -> None:
        if not isinstance(n_stable, int) or n_stable < 1:
            raise InputError(f"stable frame count must be an integer >= 1, got {n_stable!r}")
        self.n_stable = n_stable
        self.banker = str(banker).strip().lower()
        if self.banker not in POSITIONS:
            raise InputError(f"banker {banker!r} is not 'dealer' or a seat id 1..7")
        self.rules = get_profile(rules).name if not hasattr(rules, "name") else rules.name
        self._profile = get_profile(rules)
        if commission is not None:
            parse_commission(commission)
        self.commission = commission
        get_house_way(house_way)
        self.house_way = house_way
        self.bets = dict(bets or {})
        self.co_bank = co_bank
        if settle_wait is None:
            settle_wait = 0 if n_stable == 1 else 2 * n_stable
        self.settle_wait = int(settle_wait)
        self._streak: dict[str, tuple[tuple, int]] = {}
        self._banker_final_for = 0
        self._settled_sig: tuple | None = None  # banker signature of the last settled round
        #: (positions, frame) of the last frame that showed tiles while the round was open
        self._pending: tuple[dict, dict] | None = None
        self.rounds = 0

    # -- state ---------------------------------------------------------------------------
    def _observe(self, positions: Mapping[str, PositionState]) -> None:
        seen = set(positions) | set(self._streak)
        for pos in seen:
            sig = positions[pos].signature if pos in positions else ("empty",)
            old = self._streak.get(pos)
            self._streak[pos] = (sig, old[1] + 1 if old and old[0] == sig else 1)

    def is_final(self, pos: str) -> bool:
        """True when ``pos`` has shown the same setting for ``n_stable`` frames."""
        s = self._streak.get(pos)
        return bool(s and s[0][0] == "set" and s[1] >= self.n_stable)

    @property
    def open(self) -> bool:
        """True while the current round has not been settled."""
        return self._settled_sig is None

    def update(self, positions: Mapping[str, PositionState], frame: Mapping | None = None
               ) -> SettledRound | None:
        """Feed one frame's positions; returns the :class:`SettledRound` on the frame that
        settles a round, or that finds the table cleared of a round that never settled
        (``result`` None), else None."""
        self._observe(positions)
        b = self._streak.get(self.banker)
        if self._settled_sig is not None:
            changed = b is None or (b[1] >= self.n_stable and b[0] != self._settled_sig
                                    and b[0][0] in ("empty", "set"))
            if changed:
                self._settled_sig = None  # the table changed: a new round
                self._banker_final_for = 0
            else:
                return None
        if positions:
            self._pending = (dict(positions), dict(frame or {}))
        elif self._pending is not None and all(
                sig == ("empty",) and n >= self.n_stable for sig, n in self._streak.values()):
            return self._unsettled("table cleared before the round settled")
        if not self.is_final(self.banker):
            self._banker_final_for = 0
            return None
        self._banker_final_for += 1
        ready = all(self.is_final(p) for p in positions)
        if not ready and self._banker_final_for <= self.settle_wait:
            return None
        self._settled_sig = self._streak[self.banker][0]
        self.rounds += 1
        self._pending = None
        return self._settle(dict(positions), dict(frame or {}))

    def flush(self) -> SettledRound | None:
        """End of the source (or of one still image): the open round that showed tiles but
        did not settle, as an unsettled :class:`SettledRound` (None when there is none)."""
        if self._pending is None or self._settled_sig is not None:
            return None
        return self._unsettled("source ended before the round settled")

    def _unsettled(self, why: str) -> SettledRound:
        positions, frame = self._pending
        self._pending = None
        self.rounds += 1
        rnd = self._settle(positions, frame)
        if rnd.result is not None:  # settleable after all (flush right on the settling frame)
            return rnd
        rnd.reason = f"{why}: {rnd.reason}" if rnd.reason else why
        return rnd

    # -- settlement ----------------------------------------------------------------------
    def _settle(self, positions: dict[str, PositionState], frame: dict) -> SettledRound:
        alerts: list[dict] = []
        not_settled: dict[str, str] = {}
        for pos, st in positions.items():
            for kind, detail in st.problems:
                if kind != "face_down":
                    alerts.append({"kind": kind, "position": pos, "detail": detail})
        final = [p for p in positions if self.is_final(p) and positions[p].setting is not None]
        for p in positions:
            if p not in final:
                not_settled[p] = positions[p].reason or "not stable"
        # faces read more often than a set holds: somebody's read is wrong
        count: Counter = Counter()
        holders: dict[str, set[str]] = {}
        for p in positions:
            for r in positions[p].tiles:
                if r.face:
                    count[r.face] += 1
                    holders.setdefault(r.face, set()).add(p)
        for face, n in count.items():
            if n > TILES_BY_FACE[face].copies:
                hs = sorted(holders[face], key=POSITIONS.index)
                alerts.append({"kind": "duplicate_face", "position": hs[0],
                               "detail": f"{face} read {n} times (at {', '.join(hs)}), a set "
                                         f"holds {TILES_BY_FACE[face].copies}"})
                for p in hs:
                    if p in final:
                        final.remove(p)
                        not_settled[p] = f"duplicate face {face}"
        result = None
        reason = None
        if self.banker not in final:
            why = not_settled.get(self.banker, "banker position empty")
            not_settled.setdefault(self.banker, why)
            reason = f"banker {self.banker} not settled ({why})"
            for p in final:
                not_settled[p] = reason
            final = []
        else:
            others = [p for p in final if p != self.banker]
            if not others:
                final = []
                reason = "no other position settled"
                not_settled.setdefault(self.banker, reason)
            else:
                bets = {p: v for p, v in self.bets.items() if p in final}
                if self.banker == "dealer":
                    bets.pop("dealer", None)
                result = settle_round({p: positions[p].setting for p in final}, bets=bets,
                                      banker=self.banker, rules=self._profile,
                                      way=self.house_way, co_bank=self.co_bank,
                                      commission=self.commission)
                alerts.extend(a.to_dict() for a in result.alerts)
        order = {p: i for i, p in enumerate(POSITIONS)}
        final.sort(key=order.get)
        return SettledRound(positions, final, result, not_settled, alerts, self.banker,
                            self.rules, self.commission, self.house_way, dict(self.bets), frame,
                            reason)

    def reset(self) -> None:
        """Forget all state (a new source); call :meth:`flush` first to keep an open round."""
        self._streak.clear()
        self._banker_final_for = 0
        self._settled_sig = None
        self._pending = None

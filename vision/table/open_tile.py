"""A position with one or two tiles not read (covered by a hand, or read two ways) is settled
only where every face those tiles could still be gives the seat the same result.

docs/rules.md section 5: a position is settled only when its four tiles are read -- with one
exception that guesses nothing. A set holds each face a fixed number of times (section 1), so
the faces an unread tile can be are the faces not already used up by the tiles identified on
the table. When the banker deals (``banker == "dealer"``, no co-bank), a seat's result depends
only on its own tiles and the banker's (section 3). If the seat's result, net and commission
are the same for every face the one unread tile (the seat's or the banker's) could be, the
seat is settled with that result and the unread tile stays unknown in the event (no face is
claimed for it, its hands are not reported). Otherwise the seat is not settled, with the
reason.

The unread tile's own spots narrow those faces, and only in the safe direction
(:func:`shown_spots`): a spot the tile plainly shows -- a sure detection (at least
:data:`SHOWN_MIN_CONFIDENCE`), of the size of the set's spots (:data:`SHOWN_AREA_RANGE` of the
identified tiles' median), on no other tile's outline, counted once -- is on the tile,
whatever covers the rest. So the tile has at least that many spots, and at least as many red
(white) spots as it shows spots that the pip model calls red (white) and, where the picture's
spot colours are calibrated (:mod:`vision.recognition.spot_colours`), whose a* agrees. A face with fewer is
not a candidate. A spot left out only widens the candidates; the tile's face is never decided
by this, only which faces are still open.

Two unread tiles in one position (:data:`MAX_UNREAD`) are filled the same way, every pair of
faces the set has left for them (a face twice only where the set holds two more copies than the
table shows): the argument is the same -- the seat's result is taken only when it is the same
for every filling, so no face is assumed. The limit is a cost limit (21 x 21 fillings, each
position's options crossed with the banker's), not a safety one. Their shown spots are not
used: two unread outlines side by side may both be off their tiles, and a spot of one tile
inside the other's box would narrow the wrong tile's faces (seen on scenes_flush: a wrong
settlement until this was so).

A position of three face-up tiles (at most one of them unknown) whose fourth no outline shows,
or of exactly three identified tiles besides outlines that were not read (unknown outlines, tile
backs: a seat holds four tiles, so one of them or none is the fourth) --
``PositionState.missing``, :data:`NOT_SEEN` -- is filled the same way, with two differences
that only widen what is tried. Where the fourth lies is not known, so every pairing of the four
into two hands is tried (:func:`pairings_with_unseen`): whatever the player does with it, the hands
are one of those. And the camera may have read that very tile elsewhere (in another position,
or in none), so only the position's own identified tiles use faces up for its tiles. The result
is taken only when it is the same for every face and every pairing. Where exactly one of the
outlines beside the three identified tiles is unknown, the rest tile backs, and it plainly shows
a spot of its own, it is the fourth tile and the backs are none (:func:`_shown_fourth`): the
position is settled as four face-up tiles with one unread.

The four tiles must lie as two hands (the pairing is by where the tiles lie,
:func:`vision.table.rounds.pair_hands`) with nothing else wrong with the position; a player-banked
round, a co-banked round or a table where a face is read more often than a set holds settles
nothing this way.
"""

from __future__ import annotations

from collections import Counter
from itertools import product
from typing import Any, Mapping, Sequence

import numpy as np

from scoring.setting import Setting, make_setting
from scoring.rules import get_profile
from scoring.settle import settle_round
from scoring.tiles import FACES, TILES_BY_FACE

from vision.detections import PIP_RED, PIP_WHITE
from vision.geometry import crop_to_image, points_in_polygon
from vision.recognition.flush import crosswise_pairings, over_set
from vision.recognition.spot_colours import SpotCalibration, calibrate

__all__ = ["NOT_SEEN", "block_fills", "candidate_faces", "candidate_fills", "candidate_settings",
           "pairings_with_unseen", "position_fills", "settle_open",
           "shown_spots", "spot_area", "MAX_UNREAD", "SHOWN_MIN_CONFIDENCE", "SHOWN_AREA_RANGE",
           "SHOWN_SAME_SPOT"]


class _NotSeen:
    """The tile a position of three holds that no outline shows (:data:`NOT_SEEN`)."""

    face = None
    reads = None

    def __repr__(self) -> str:
        return "NOT_SEEN"


#: Stands for the fourth tile of a position that shows three (``PositionState.missing``): no
#: outline, no face, no place; :func:`settle_open` tries every pairing and every face for it.
NOT_SEEN = _NotSeen()

#: At most this many unread tiles in one position are filled with every face they could be
#: (a cost limit: 21 ** k fillings; not a safety limit, the rule is exact for any number).
MAX_UNREAD: int = 2

#: A spot counts as shown by an unread tile only at this detection confidence or more: the
#: decoder's default floor for an accepted face (``RecognitionConfig.min_confidence``).
SHOWN_MIN_CONFIDENCE: float = 0.5
#: ... and only when its box area (crop px^2) lies within this range of the median spot area
#: of the table's identified tiles: the spots of one set are one size, and a "spot" found on
#: the covering hand or its shadow is a blob of another size. Set once from that reasoning
#: (a factor of 2 either way), not fitted to any validation data.
SHOWN_AREA_RANGE: tuple[float, float] = (0.5, 2.0)
#: Two spot boxes whose centres are closer than this many spot widths (the square root of the
#: reference area) are one spot seen twice: the spots of a face lie at least about one width
#: apart edge to edge, so their centres are two widths or more apart.
SHOWN_SAME_SPOT: float = 0.5


def candidate_faces(identified: Counter, shown: tuple[int, int, int] = (0, 0, 0)) -> list[str]:
    """Faces (``"low-high"``, scoring.tiles order) an unread tile can still be: those the
    identified tiles ``identified`` (face -> count on the table) have not used up (a set holds
    each face ``Tile.copies`` times, docs/rules.md section 1), with at least the spots the
    tile shows: ``shown`` = ``(red, white, spots)`` from :func:`shown_spots` (a face needs
    ``Tile.red >= red``, ``Tile.white >= white`` and ``Tile.spots >= spots``)."""
    red, white, spots = shown
    return [t.face for t in FACES if identified.get(t.face, 0) < t.copies
            and t.red >= red and t.white >= white and t.spots >= spots]


def spot_area(reads: Sequence[Any]) -> float:
    """Median spot box area (crop px^2, float) over the identified (``state == "face_up"``)
    reads among ``reads`` (:class:`vision.recognition.decode.TileRead`); 0.0 when none has spots."""
    areas = [np.prod(r.pips.xyxy[:, 2:] - r.pips.xyxy[:, :2], axis=1) for r in reads
             if getattr(r, "state", None) == "face_up" and len(r.pips)]
    return float(np.median(np.concatenate(areas))) if areas else 0.0


def shown_spots(read: Any, area: float, calibration: SpotCalibration | None = None,
                others: Sequence[np.ndarray] = ()) -> tuple[int, int, int]:
    """The spots an unread tile plainly shows: ``(red, white, spots)``, ints.

    A detected spot of ``read`` (:class:`vision.recognition.decode.TileRead`, spots in crop px) counts when
    it lies on the tile (the decoder's own rule, ``decode._counted_spots``), its confidence is
    at least :data:`SHOWN_MIN_CONFIDENCE`, its box area is within :data:`SHOWN_AREA_RANGE` of
    ``area`` (:func:`spot_area`), and its centre (mapped to image px) is inside none of
    ``others`` (float (4, 2) image-px outlines of the other tiles on the table); two boxes
    closer than :data:`SHOWN_SAME_SPOT` spot widths are one spot. It counts as red (white)
    when the pip model's class says so and, where the picture's spot colours are calibrated
    (``calibration``, :func:`vision.recognition.spot_colours.calibrate`) and the spot's a* was measured,
    its a* lies on the red (white) side (:meth:`SpotCalibration.colours`); a spot whose class
    and a* disagree counts only in ``spots``. No ``area`` (no identified spot on the table)
    shows nothing: ``(0, 0, 0)``.
    """
    from vision.recognition.decode import _counted_spots

    p = read.pips
    if not len(p) or area <= 0:
        return (0, 0, 0)
    centres = (p.xyxy[:, :2] + p.xyxy[:, 2:]) / 2
    ratio = np.prod(p.xyxy[:, 2:] - p.xyxy[:, :2], axis=1) / area
    keep = (_counted_spots(centres, p.confidence) & (p.confidence >= SHOWN_MIN_CONFIDENCE)
            & (ratio >= SHOWN_AREA_RANGE[0]) & (ratio <= SHOWN_AREA_RANGE[1]))
    if keep.any() and len(others):
        pts = crop_to_image(centres[keep], read.polygon)
        on_other = np.logical_or.reduce([points_in_polygon(pts, q) for q in others])
        keep[np.flatnonzero(keep)[on_other]] = False
    # two boxes on one spot (closer than SHOWN_SAME_SPOT spot widths) count once, the surer
    near = SHOWN_SAME_SPOT * float(np.sqrt(area))
    for i in sorted(np.flatnonzero(keep), key=lambda k: -float(p.confidence[k])):
        if keep[i]:
            dup = keep & (np.linalg.norm(centres - centres[i], axis=1) < near)
            dup[i] = False
            keep &= ~dup
    red_like = keep & (p.class_id == PIP_RED)
    white_like = keep & (p.class_id == PIP_WHITE)
    if calibration is not None and read.redness is not None and len(read.redness) == len(p):
        red_side, white_side = calibration.colours(read.redness)
        red_like &= red_side
        white_like &= white_side
    return (int(red_like.sum()), int(white_like.sum()), int(keep.sum()))


def candidate_fills(per_tile: Sequence[Sequence[str]], identified: Counter
                    ) -> list[tuple[str, ...]]:
    """Every way to give the unread tiles of one position faces: one face per tile from its
    own candidates (``per_tile[i]``, :func:`candidate_faces`), the faces of one filling taken
    together within what the set has left (``identified`` + the filling uses no face more
    often than ``Tile.copies``, docs/rules.md section 1). Tuples in ``per_tile`` order."""
    out = []
    for combo in product(*per_tile):
        if not over_set(combo, identified):
            out.append(tuple(combo))
    return out


def candidate_settings(hands: tuple[Sequence[Any], Sequence[Any]],
                       faces: Sequence[str] | Sequence[Sequence[str]],
                       rules: str = "pa") -> list[Setting]:
    """One :class:`scoring.setting.Setting` per candidate filling of the position's unread
    tiles, the higher hand high (so never mis-set).

    Args:
        hands: the two hands as laid (two reads each, objects with ``.face``; one or more of
            the four have ``face is None``).
        faces: for one unread tile, its candidate faces (:func:`candidate_faces`); for
            several, one filling per item (:func:`candidate_fills`: a face per unread tile, in
            the order high-hand-first of ``hands``).
        rules: rule profile (which hand is high).

    Raises:
        ValueError: no unread tile, or a filling of another length than the unread tiles.
    """
    flat = [r.face for h in hands for r in h]
    k = sum(f is None for f in flat)
    if len(flat) != 4 or k < 1:
        raise ValueError(f"a position with an unread tile of four expected, got {flat}")
    fills = [(c,) if isinstance(c, str) else tuple(c) for c in faces]
    out = []
    for fill in fills:
        if len(fill) != k:
            raise ValueError(f"{k} unread tile(s), a filling of {len(fill)} given: {fill}")
        it = iter(fill)
        f = [next(it) if x is None else x for x in flat]
        s = make_setting(f[:2], f[2:])
        out.append(make_setting(f[2:], f[:2]) if s.is_mis_set(rules) else s)
    return out


def _by_keys(settings: Sequence[Setting], rules) -> tuple[list[Setting], np.ndarray]:
    """The settings with distinct (high key, low key), and those keys as int64 (n, 2).

    Two settings with the same keys settle alike against any banker: a seat's result is
    :func:`scoring.settle.compare_settings` of the keys alone (docs/rules.md section 4), and
    its money is a function of that result and the bet. Crossing only distinct keys keeps two
    positions with two unread tiles each at about 10^4 comparisons instead of 10^5 rounds."""
    seen: dict[tuple[int, int], Setting] = {}
    for s in settings:
        seen.setdefault(s.keys(rules), s)
    return list(seen.values()), np.array(list(seen), np.int64).reshape(-1, 2)


def _outcomes(player: np.ndarray, banker: np.ndarray) -> set[str]:
    """The results (``"win"``, ``"lose"``, ``"push"``) of every player key pair (n, 2) against
    every banker key pair (m, 2), int64: :func:`scoring.settle.compare_settings` on keys (a
    hand wins only with a strictly higher key; an equal key is the banker's)."""
    hi = player[:, None, 0] > banker[None, :, 0]
    lo = player[:, None, 1] > banker[None, :, 1]
    out = set()
    if (hi & lo).any():
        out.add("win")
    if (~hi & ~lo).any():
        out.add("lose")
    if (hi ^ lo).any():
        out.add("push")
    return out


def _stand_in_faces(state: Any, setting: Setting) -> tuple[str, ...]:
    """The faces of a stand-in ``setting`` that stand for an open position's unread tiles:
    its four faces less the faces the position's identified tiles show (multiset
    difference), e.g. ``("3-3",)``."""
    left = Counter(t.face for t in setting.tiles)
    left.subtract(r.face for h in state.open_hands for r in h if r.face is not None)
    return tuple(sorted(left.elements()))


def block_fills(a: Any, b: Any) -> list[tuple[str, str]] | None:
    """The faces two disputed tiles of one hand can be, ``[(face of a, face of b), ...]``.

    Both outlines were read -- each face is the two halves under its outline
    (``evidence.disputed``) -- and the second tile model outlined the place across them
    (:func:`vision.recognition.fill.disputed_outlines`): the hand's two tiles touch flush, and the doubt
    is which way they are cut. Two tiles cover those four halves either as the outlines lie
    (``(a's face, b's face)``) or crosswise, each tile one half of ``a`` and one of ``b``.
    Which half of ``a`` lies beside which half of ``b`` is not taken from the picture: both
    crosswise pairings are kept, so the hand's true faces are among the (at most three)
    fillings whatever the outlines' orientation. Order inside a filling: the first face takes
    ``a``'s place, the second ``b``'s (a hand's value does not depend on which is which).

    Returns:
        the distinct fillings, or None when either read has no disputed face.
    """
    fa = getattr(getattr(a, "evidence", None), "disputed", None)
    fb = getattr(getattr(b, "evidence", None), "disputed", None)
    if fa not in TILES_BY_FACE or fb not in TILES_BY_FACE:
        return None
    return list(dict.fromkeys([(fa, fb)] + crosswise_pairings(fa, fb)))


def _apart(hand: Sequence[Any], others: Sequence[np.ndarray]) -> bool:
    """True when no other tile outline (``others``, float (4, 2) px each) comes within
    :data:`vision.table.seats.UNIT_GAP` tile widths of the hand's two outlines: the hand's four
    halves are then a region of their own, which two tiles cover in the ways
    :func:`block_fills` lists (a tile touching it could take a half of it)."""
    from vision.geometry import side_pairs
    from vision.table.seats import UNIT_GAP, _outline_gaps

    if not len(others):
        return True
    width = float(np.mean([min(side_pairs(r.polygon)) for r in hand]))
    polys = np.stack([np.asarray(r.polygon, np.float64) for r in hand]
                     + [np.asarray(q, np.float64) for q in others])
    return bool(_outline_gaps(polys)[:2, 2:].min() >= UNIT_GAP * width)


def position_fills(hands: tuple[Sequence[Any], Sequence[Any]], per_tile: Mapping[int, list[str]],
                   identified: Counter, others: Sequence[tuple[Any, np.ndarray]] = ()
                   ) -> tuple[list[tuple[str, ...]], int, int] | None:
    """Every filling of a position's unread tiles (in ``hands`` order): a hand whose two tiles
    are both disputed, lying apart from every other tile (``others``: ``(read, outline)`` of
    every tile on the table, :func:`_apart`), takes :func:`block_fills`; every other unread tile any of its
    candidates (``per_tile``: id of the read -> :func:`candidate_faces`); fillings that use a
    face more often than the set has left (``identified``) are dropped.

    Returns:
        ``(fillings, free, blocks)``: ``free`` unread tiles filled from their candidates,
        ``blocks`` hands filled by :func:`block_fills`; None when ``free`` exceeds
        :data:`MAX_UNREAD`.
    """
    slots: list[list[tuple[str, ...]]] = []
    free = blocks = 0
    for h in hands:
        unread = [r for r in h if r.face is None]
        pair = (block_fills(h[0], h[1]) if len(unread) == 2 == len(h)
                and all(r is not NOT_SEEN for r in h)
                and _apart(h, [q for r, q in others if all(r is not x for x in h)]) else None)
        if pair is not None:
            slots.append(pair)
            blocks += 1
            continue
        for r in unread:
            slots.append([(f,) for f in per_tile[id(r)]])
            free += 1
    if free > MAX_UNREAD:
        return None
    out = []
    for combo in product(*slots):
        fill = tuple(f for part in combo for f in part)
        if not over_set(fill, identified):
            out.append(fill)
    return out, free, blocks


def pairings_with_unseen(hands: tuple[Sequence[Any], Sequence[Any]]
                         ) -> list[tuple[list[Any], list[Any]]]:
    """The three ways to lay four tiles as two hands, for a position whose fourth tile is
    :data:`NOT_SEEN`: it may lie beside any of the three shown, so each of them in turn is its
    partner. ``hands``: the position's ``open_hands`` (the three reads and ``NOT_SEEN``, any
    order). Returns ``[(hand, hand), ...]``, the unseen tile's hand first.

    Raises:
        ValueError: ``hands`` is not four tiles with exactly one ``NOT_SEEN``."""
    flat = [r for h in hands for r in h]
    shown = [r for r in flat if r is not NOT_SEEN]
    if len(flat) != 4 or len(shown) != 3:
        raise ValueError(f"three tiles and one not seen expected, got {flat}")
    return [([shown[i], NOT_SEEN], [shown[j] for j in range(3) if j != i]) for i in range(3)]


def _shown_fourth(st: Any, every: Sequence[Any], area: float,
                  calibration: SpotCalibration | None) -> tuple[Any, tuple[int, int, int]] | None:
    """The unknown outline of a position of three identified tiles beside tile backs
    (``PositionState.fourth_hands``) with the spots it shows, where it shows at least one:
    ``(read, (red, white, spots))``; else None.

    Why that outline is then the position's fourth tile and every back beside it no tile of
    the seat: a spot it plainly shows (:func:`shown_spots`: sure, of the set's spot size, on
    no other tile's outline -- the backs' included) lies on a face-up tile that no other
    outline gives; the position's three identified tiles are three more, and a seat is dealt
    four (docs/rules.md section 5), so that tile is its fourth and a fifth (a back) is none of
    its tiles -- as beside four identified tiles. Its candidates are narrowed by those spots,
    from the whole table's identified tiles (it is no tile read elsewhere: its spots lie on no
    other outline). Without a shown spot the outline may be no tile at all (the tile model
    boxing the felt), and the position stays open as three tiles and one not seen."""
    hands = getattr(st, "fourth_hands", None)
    if hands is None:
        return None
    unread = [r for h in hands for r in h if r.face is None]
    if len(unread) != 1:
        return None
    u = unread[0]
    others = [np.asarray(r.polygon) for r in every if r is not u]
    shown = shown_spots(u, area, calibration, others)
    return (u, shown) if shown[2] >= 1 else None


def settle_open(positions: Mapping[str, Any], final: Sequence[str], opened: Sequence[str],
                identified: Counter, *, banker: str = "dealer", rules: Any = "pa",
                way: str = "reference", commission: Any = None,
                bets: Mapping[str, Any] | None = None
                ) -> tuple[dict[str, tuple[Setting, tuple[str, ...]]], dict[str, str],
                           dict[str, str]]:
    """Which seats settle whatever the open positions' unread tiles are.

    Args:
        positions: position -> state with ``setting`` (None for an open position) and
            ``open_hands`` (the two hands as laid, for an open position).
        final: positions settled the ordinary way (every tile read, stable).
        opened: stable positions with one to :data:`MAX_UNREAD` unread tiles (``open_hands``
            set).
        identified: face -> count of the identified tiles on the whole table.
        banker: must be ``"dealer"`` (anything else settles nothing this way).
        rules, way, commission: as :func:`scoring.settle.settle_round`.
        bets: position -> wager (default 1).

    Returns:
        ``(stand_in, notes, refused)``; a position settled with its unknown outline as
        its fourth tile (:func:`_shown_fourth`) is updated in ``positions``
        (``PositionState.take_fourth``: its four tiles, the backs set aside). For each
        open position that settles (the banker's when at least one seat settles),
        ``(setting, faces)``: a stand-in setting (the first
        candidate: every candidate gives its seats the same result) to settle the round with
        and the faces standing in for the unread tiles in it -- no tiles of the set, so pass
        them to ``settle_round(stand_in=)`` to keep them out of the set check; ``notes``: the
        same positions -> one line saying why each settled; ``refused``: final player
        position -> reason, for seats that were ready but whose result the banker's unread
        tiles decide.
    """
    stand_in: dict[str, tuple[Setting, tuple[str, ...]]] = {}
    notes: dict[str, str] = {}
    refused: dict[str, str] = {}
    if banker != "dealer" or not opened:
        return stand_in, notes, refused
    prof = get_profile(rules)
    every = [r for st in positions.values() for r in (st.tiles or ())]
    area, calibration = spot_area(every), calibrate(every)
    options: dict[str, list[Setting]] = {}
    keys: dict[str, np.ndarray] = {}
    n_faces: dict[str, str] = {}
    fourth_taken: set[str] = set()
    for p in set(final) | set(opened):
        st = positions[p]
        if p in final:
            options[p], keys[p] = _by_keys([st.setting], prof)
            continue
        unread = [r for h in st.open_hands for r in h if r.face is None]
        if not unread:
            continue
        missing = any(r is NOT_SEEN for r in unread)
        pool = identified
        hands_laid = st.open_hands
        fourth = _shown_fourth(st, every, area, calibration) if missing else None
        if fourth is not None:
            # its own spots make the unknown outline a face-up tile: the fourth (module doc)
            (u, shown), hands_laid, missing = fourth, st.fourth_hands, False
            unread = [u]
            per_tile = {id(u): candidate_faces(identified, shown)}
            fourth_taken.add(p)
        elif missing:
            # the unseen tile may be one the camera read elsewhere (in another position, or in
            # none): only this position's own identified tiles use faces up for it
            pool = Counter(r.face for h in st.open_hands for r in h if r.face is not None)
            per_tile = {id(r): candidate_faces(pool) for r in unread}
        elif len(unread) == 1:
            others = [np.asarray(r.polygon) for r in every if r is not unread[0]]
            per_tile = {id(unread[0]): candidate_faces(
                identified, shown_spots(unread[0], area, calibration, others))}
        else:
            # two unread outlines side by side may both be off their tiles: a spot of one
            # tile can lie inside the other's box and outside its own, and would be taken
            # as shown by the wrong tile (seen on scenes_flush: a 2-4 | 1-3 pair read as
            # 5 red / 4 white and 3 red / 4 white). No narrowing by shown spots there.
            per_tile = {id(r): candidate_faces(identified) for r in unread}
        lays = pairings_with_unseen(st.open_hands) if missing else [hands_laid]
        settings: list[Setting] = []
        n_fills = blocks = 0
        for hands in lays:
            got = position_fills(hands, per_tile, pool, [(r, np.asarray(r.polygon)) for r in every])
            if got is None or not got[0]:
                settings = []  # too many unread, or nothing fits what the tiles show
                break
            fills, _, blocks = got
            n_fills += len(fills)
            settings += candidate_settings(hands, fills, prof)
        if not settings:
            continue  # not settled
        options[p], keys[p] = _by_keys(settings, prof)
        if missing:
            n_faces[p] = (f"{n_fills} fillings of its {len(unread)} unread tile(s), one of them "
                          f"not seen, each pairing of its four tiles")
        elif len(unread) == 1:
            n_faces[p] = (f"{n_fills} face{'s' if n_fills != 1 else ''} left in the set and "
                          f"showing its spots"
                          + (", the tile backs beside it set aside" if fourth else ""))
        else:
            n_faces[p] = (f"{n_fills} fillings of its {len(unread)} unread tiles"
                          + (f", {blocks} flush hand(s) cut either way" if blocks else "")
                          + " left in the set")
    if banker not in options:
        return stand_in, notes, refused
    bets = dict(bets or {})
    players = sorted(p for p in options if p != banker)
    settled_any = False
    for p in players:
        if p not in opened and banker not in opened:
            continue  # an ordinary seat against an ordinary banker
        results = _outcomes(keys[p], keys[banker])
        which = " and ".join(x for x, o in (("the banker's", banker in opened),
                                           (f"seat {p}'s", p in opened)) if o)
        if len(results) == 1:
            # the money of that one result, from the scoring engine itself
            stands = {q: (options[q][0], _stand_in_faces(positions[q], options[q][0]))
                      for q in (banker, p) if q in opened}
            r = settle_round({banker: options[banker][0], p: options[p][0]},
                             bets={p: bets.get(p, 1)}, banker=banker, rules=prof, way=way,
                             commission=commission,
                             stand_in={q: f for q, (_, f) in stands.items()}).seats[p]
            if p in opened:
                stand_in[p] = stands[p]
                left = n_faces.get(p) or n_faces[banker]
                notes[p] = (f"settled with {which} unread tile: every face it could be "
                            f"({left}) gives {r.result}")
            settled_any = True
        elif p in final:
            refused[p] = f"{which} unread tile decides this seat"
    if banker in opened and settled_any:
        stand_in[banker] = (options[banker][0],
                            _stand_in_faces(positions[banker], options[banker][0]))
        notes[banker] = (f"banker settled with an unread tile: the seats settled are the "
                         f"same for every face it could be ({n_faces[banker]})")
    for p in fourth_taken & set(stand_in):
        # its fourth tile settled it: the event lists those four, the backs set aside
        positions[p].take_fourth()
    return stand_in, notes, refused

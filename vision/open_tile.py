"""A position with one tile not read (covered by a hand, or read two ways) is settled only
where every face that tile could still be gives the seat the same result.

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
spot colours are calibrated (:mod:`vision.spot_colours`), whose a* agrees. A face with fewer is
not a candidate. A spot left out only widens the candidates; the tile's face is never decided
by this, only which faces are still open.

Only one unread tile per position, four tiles lying as two hands (the pairing is by where the
tiles lie, :func:`vision.table.pair_hands`), and nothing else wrong with the position; a
player-banked round, a co-banked round or a table where a face is read more often than a set
holds settles nothing this way.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

import numpy as np

from scoring.setting import Setting, make_setting
from scoring.settle import settle_round
from scoring.tiles import FACES

from .detections import PIP_RED, PIP_WHITE
from .geometry import crop_to_image, points_in_polygon
from .spot_colours import SpotCalibration, calibrate

__all__ = ["candidate_faces", "candidate_settings", "settle_open", "shown_spots", "spot_area",
           "SHOWN_MIN_CONFIDENCE", "SHOWN_AREA_RANGE", "SHOWN_SAME_SPOT"]

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
    reads among ``reads`` (:class:`vision.decode.TileRead`); 0.0 when none has spots."""
    areas = [np.prod(r.pips.xyxy[:, 2:] - r.pips.xyxy[:, :2], axis=1) for r in reads
             if getattr(r, "state", None) == "face_up" and len(r.pips)]
    return float(np.median(np.concatenate(areas))) if areas else 0.0


def shown_spots(read: Any, area: float, calibration: SpotCalibration | None = None,
                others: Sequence[np.ndarray] = ()) -> tuple[int, int, int]:
    """The spots an unread tile plainly shows: ``(red, white, spots)``, ints.

    A detected spot of ``read`` (:class:`vision.decode.TileRead`, spots in crop px) counts when
    it lies on the tile (the decoder's own rule, ``decode._counted_spots``), its confidence is
    at least :data:`SHOWN_MIN_CONFIDENCE`, its box area is within :data:`SHOWN_AREA_RANGE` of
    ``area`` (:func:`spot_area`), and its centre (mapped to image px) is inside none of
    ``others`` (float (4, 2) image-px outlines of the other tiles on the table); two boxes
    closer than :data:`SHOWN_SAME_SPOT` spot widths are one spot. It counts as red (white)
    when the pip model's class says so and, where the picture's spot colours are calibrated
    (``calibration``, :func:`vision.spot_colours.calibrate`) and the spot's a* was measured,
    its a* lies on the red (white) side (:meth:`SpotCalibration.colours`); a spot whose class
    and a* disagree counts only in ``spots``. No ``area`` (no identified spot on the table)
    shows nothing: ``(0, 0, 0)``.
    """
    from .decode import _counted_spots

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


def candidate_settings(hands: tuple[Sequence[Any], Sequence[Any]], faces: Sequence[str],
                       rules: str = "pa") -> list[Setting]:
    """One :class:`scoring.setting.Setting` per candidate face of the position's one unread
    tile.

    Args:
        hands: the two hands as laid (two reads each, objects with ``.face``; exactly one of
            the four has ``face is None``).
        faces: the candidate faces (:func:`candidate_faces`).
        rules: rule profile (which hand is high).

    Raises:
        ValueError: not exactly one unread tile.
    """
    flat = [r.face for h in hands for r in h]
    if len(flat) != 4 or sum(f is None for f in flat) != 1:
        raise ValueError(f"a position with one unread tile of four expected, got {flat}")
    out = []
    for c in faces:
        f = [c if x is None else x for x in flat]
        s = make_setting(f[:2], f[2:])
        out.append(make_setting(f[2:], f[:2]) if s.is_mis_set(rules) else s)
    return out


def settle_open(positions: Mapping[str, Any], final: Sequence[str], opened: Sequence[str],
                identified: Counter, *, banker: str = "dealer", rules: Any = "pa",
                way: str = "reference", commission: Any = None,
                bets: Mapping[str, Any] | None = None
                ) -> tuple[dict[str, tuple[Setting, str]], dict[str, str], dict[str, str]]:
    """Which seats settle whatever the open positions' unread tiles are.

    Args:
        positions: position -> state with ``setting`` (None for an open position) and
            ``open_hands`` (the two hands as laid, for an open position).
        final: positions settled the ordinary way (every tile read, stable).
        opened: stable positions with exactly one unread tile (``open_hands`` set).
        identified: face -> count of the identified tiles on the whole table.
        banker: must be ``"dealer"`` (anything else settles nothing this way).
        rules, way, commission: as :func:`scoring.settle.settle_round`.
        bets: position -> wager (default 1).

    Returns:
        ``(stand_in, notes, refused)``: for each open position that settles (the banker's
        when at least one seat settles), ``(setting, face)``: a stand-in setting (the first
        candidate: every candidate gives its seats the same result) to settle the round with
        and the face standing in for the unread tile in it -- no tile of the set, so pass it
        to ``settle_round(stand_in=)`` to keep it out of the set check; ``notes``: the
        same positions -> one line saying why each settled; ``refused``: final player
        position -> reason, for seats that were ready but whose result the banker's unread
        tile decides.
    """
    stand_in: dict[str, tuple[Setting, str]] = {}
    notes: dict[str, str] = {}
    refused: dict[str, str] = {}
    if banker != "dealer" or not opened:
        return stand_in, notes, refused
    every = [r for st in positions.values() for r in (st.tiles or ())]
    area, calibration = spot_area(every), calibrate(every)
    options: dict[str, list[Setting]] = {}
    option_faces: dict[str, list[str | None]] = {}
    n_faces: dict[str, int] = {}
    for p in set(final) | set(opened):
        st = positions[p]
        if p in final:
            options[p] = [st.setting]
            option_faces[p] = [None]
            continue
        unread = next(r for h in st.open_hands for r in h if r.face is None)
        others = [np.asarray(r.polygon) for r in every if r is not unread]
        faces = candidate_faces(identified, shown_spots(unread, area, calibration, others))
        if not faces:
            continue  # nothing fits what the tile shows: the position is not settled
        options[p] = candidate_settings(st.open_hands, faces, rules)
        option_faces[p] = list(faces)
        n_faces[p] = len(faces)
    if banker not in options:
        return stand_in, notes, refused
    bets = dict(bets or {})
    players = sorted(p for p in options if p != banker)
    which_faces = {p: (f"{n_faces[p]} face{'s' if n_faces[p] != 1 else ''} left in the set "
                       "and showing its spots") for p in n_faces}
    settled_any = False
    for p in players:
        if p not in opened and banker not in opened:
            continue  # an ordinary seat against an ordinary banker
        seen: set[tuple] = set()
        for bs, bf in zip(options[banker], option_faces[banker]):
            for ps, pf in zip(options[p], option_faces[p]):
                stand = {k: f for k, f in ((banker, bf), (p, pf)) if f is not None}
                r = settle_round({banker: bs, p: ps}, bets={p: bets.get(p, 1)}, banker=banker,
                                 rules=rules, way=way, commission=commission,
                                 stand_in=stand).seats[p]
                seen.add((r.result, r.net, r.commission, r.mis_set))
                if len(seen) > 1:
                    break
            if len(seen) > 1:
                break
        which = " and ".join(x for x, o in (("the banker's", banker in opened),
                                           (f"seat {p}'s", p in opened)) if o)
        if len(seen) == 1:
            if p in opened:
                stand_in[p] = (options[p][0], option_faces[p][0])
                left = which_faces.get(p) or which_faces[banker]
                notes[p] = (f"settled with {which} unread tile: every face it could be "
                            f"({left}) gives {next(iter(seen))[0]}")
            settled_any = True
        elif p in final:
            refused[p] = f"{which} unread tile decides this seat"
    if banker in opened and settled_any:
        stand_in[banker] = (options[banker][0], option_faces[banker][0])
        notes[banker] = (f"banker settled with one unread tile: the seats settled are the "
                         f"same for every face it could be ({which_faces[banker]})")
    return stand_in, notes, refused

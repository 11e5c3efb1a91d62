"""Which way a set draws the diagonal of its 3s, and a flush block's cut that contradicts it.

Why. Two tiles laid flush and level form a block of four halves that a box can cut lengthwise
(the tiles as laid) or crosswise (one half of each tile); halves of 1, 3, 4 and 5 still read
as halves turned a quarter, so both cuts can read two valid faces and the block stays unread
(:mod:`vision.recognition.refine`, rule 2). Of those four, only the 3 is not the same turned a
quarter: it is a diagonal, and a diagonal from the top-left corner to the bottom-right one
(``\\``, in the tile's upright crop) turned a quarter runs from the top-right to the
bottom-left (``/``). Turning a tile end for end (half a turn) keeps the diagonal as it is,
and a camera looking down never mirrors, so each tile shows its 3s one way wherever it lies.

A set draws its 3s one way. In every Chinese set of the project's validation drawings (five
sets, docs/rules.md section 5) the 3 halves of the mixed tiles 1-3, 2-3, 3-4, 3-5 and 3-6 all
run one way (which way differs from set to set), while 3-3 goes its own way in two of the
five (the other way, or a long layout of three rows of two). So:

* :func:`three_hands`: the way each 3 half of an identified tile runs: +1 (``\\``) or -1
  (``/``) in the upright crop the decoder read (:func:`vision.geometry.rectify`: corners
  clockwise, so a crop is the tile turned, never mirrored).
* :func:`table_hand`: the way the table's set runs, from its identified tiles of the faces in
  :data:`CHIRAL_FACES` (not 3-3): taken only when at least :data:`MIN_VOTES` tiles of at least
  :data:`MIN_FACES` different faces show it and *none* shows the other way (a set drawn both
  ways, or a vote from a box that cut two tiles across, leaves the table with no way: nothing
  is ruled out).
* :func:`against`: a reading of a block cut names a face of :data:`CHIRAL_FACES` whose 3 runs
  the other way: that cut is not how the tiles lie.
* :func:`shows_way`: an identified tile of :data:`CHIRAL_FACES` whose 3 runs the table's way:
  its outline is no box across two tiles (whose 3 would run the other way), so the flush
  guards that fear such a box (:mod:`vision.recognition.flush`) leave it.

Why it cannot settle wrongly on its own: it never reads a face; it only rules out a cut both
of whose tiles the decoder read with every guard (its caller takes the other cut only where
that one reads both its tiles too, :func:`vision.recognition.refine.refine_unknowns`, rule
6), and it only tells a tile the decoder read with every check from a box across two tiles.
The table's way is voted by the tiles that the flush guards leave identified without it
(:class:`vision.recognition.engine.RecognitionEngine`), never by the tiles it judges. A wrong
cut would need the table's set to draw one of the mixed tiles the other way from all the rest
*and* no tile drawn that other way to be read elsewhere on the table (the votes must be
unanimous, over at least two faces). The counts are safety margins, not fitted; the
observation about sets above comes from reading ../shared/realdata's single tiles, and no
number here is taken from it.

Public API: :func:`three_hands`, :func:`table_hand`, :func:`against`, :func:`shows_way`,
:func:`lengthwise_by`,
:data:`CHIRAL_FACES`, :data:`MIN_VOTES`, :data:`MIN_FACES`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np

from vision.recognition.decode import CROP_H, MIDLINE_BAND, _counted_spots, half_shape_ok

__all__ = ["three_hands", "table_hand", "against", "shows_way", "lengthwise_by", "CHIRAL_FACES", "MIN_VOTES",
           "MIN_FACES"]

#: Faces whose 3 half runs the set's one way: every face with one 3 half (3-3, drawn its own
#: way by some sets, is left out).
CHIRAL_FACES: tuple[str, ...] = ("1-3", "2-3", "3-4", "3-5", "3-6")
#: The table's way needs at least this many identified tiles showing it ...
MIN_VOTES: int = 2
#: ... of at least this many different faces (two copies of 1-3 cut across by one box
#: pair would both vote the other way).
MIN_FACES: int = 2


def three_hands(read: Any) -> tuple[int, ...] | None:
    """The way each 3 half of an identified tile's face runs, in its upright crop.

    Args:
        read: a :class:`vision.recognition.decode.TileRead` (``pips`` in crop px, ``reads``
            the decoder's evidence).

    Returns:
        one entry per half of exactly three counted spots (top half first): +1 for a diagonal
        from the top-left to the bottom-right (``\\``), -1 for the other (``/``); None where
        the tile is not identified, was not read as two halves (``read.read_b["layout"]``
        "halves", at the crop's midline, or "split", at a divider the decoder found off it:
        the spots above and below it, in the face's two counts either way round, each half
        passing :func:`vision.recognition.decode.half_shape_ok`, one way only), its counted
        spots are not the face's, or it shows no 3 half.
    """
    if getattr(read, "face", None) is None or "3" not in read.face.split("-"):
        return None
    b = getattr(read, "read_b", None)
    layout = b.get("layout") if isinstance(b, dict) else None
    if layout not in ("halves", "split") or read.pips is None or not len(read.pips):
        return None
    xyxy = np.asarray(read.pips.xyxy, np.float64).reshape(-1, 4)
    c = (xyxy[:, :2] + xyxy[:, 2:]) / 2
    c = c[_counted_spots(c, np.asarray(read.pips.confidence, np.float64))]
    c = c[np.argsort(c[:, 1], kind="stable")]
    lo, hi = (int(v) for v in read.face.split("-"))
    if len(c) != lo + hi:
        return None
    if layout == "halves":
        dy = c[:, 1] - CROP_H / 2
        band = MIDLINE_BAND * CROP_H
        splits = [int((dy < -band).sum())] if not (np.abs(dy) <= band).any() else []
    else:
        # the decoder found the halves' divider off the crop's midline: the halves are the
        # spots above and below it, in the face's two counts either way round
        splits = sorted({lo, hi})
    ways = set()
    for k in splits:
        parts = (c[:k], c[k:])
        if sorted(len(p) for p in parts) != [lo, hi] or \
                not all(half_shape_ok(p)[0] for p in parts):
            continue
        ways.add(tuple(_diagonal(p) for p in parts if len(p) == 3))
    if len(ways) != 1:
        return None  # no split of the spots into the face's halves, or two that disagree
    return ways.pop() or None


def _diagonal(p: np.ndarray) -> int:
    """+1 where three spots (float (3, 2) crop px, sorted down the crop) run from the top-left
    to the bottom-right, -1 from the top-right to the bottom-left."""
    d = p[2] - p[0]
    return 1 if d[0] * d[1] > 0 else -1


def table_hand(reads: Iterable[Any], min_votes: int = MIN_VOTES,
               min_faces: int = MIN_FACES) -> int | None:
    """The way the table's set draws the 3 of its mixed tiles.

    Args:
        reads: the table's reads (TileRead); identified ones of :data:`CHIRAL_FACES` vote.
        min_votes, min_faces: see :data:`MIN_VOTES`, :data:`MIN_FACES`.

    Returns:
        +1 or -1 (:func:`three_hands`) when at least ``min_votes`` tiles of at least
        ``min_faces`` faces run that way and none the other; None otherwise.
    """
    faces: dict[int, set[str]] = {1: set(), -1: set()}
    votes = {1: 0, -1: 0}
    for r in reads:
        if getattr(r, "face", None) not in CHIRAL_FACES:
            continue
        h = three_hands(r)
        if h is None or len(h) != 1:
            continue
        votes[h[0]] += 1
        faces[h[0]].add(r.face)
    for way in (1, -1):
        if votes[way] >= min_votes and len(faces[way]) >= min_faces and votes[-way] == 0:
            return way
    return None


def against(cut: Sequence[Any], way: int | None) -> bool:
    """Whether a reading of one cut of a flush block names a face of :data:`CHIRAL_FACES`
    whose 3 runs the other way from the table's ``way`` (:func:`table_hand`; None: never)."""
    if way is None:
        return False
    for r in cut:
        if getattr(r, "face", None) in CHIRAL_FACES:
            h = three_hands(r)
            if h is not None and len(h) == 1 and h[0] == -way:
                return True
    return False


def shows_way(read: Any, way: int | None) -> bool:
    """Whether an identified tile's face is one of :data:`CHIRAL_FACES` and its 3 runs the
    table's ``way`` (:func:`table_hand`; None: never): a box across two flush tiles shows
    every 3 it holds turned a quarter, running the other way, so this outline is the tile's
    own."""
    if way is None or getattr(read, "face", None) not in CHIRAL_FACES:
        return False
    return three_hands(read) == (way,)


def lengthwise_by(way: Callable[[], int | None]) -> Callable[[Any], bool]:
    """``read -> bool``: :func:`shows_way` against the table's way ``way()``, asked only for a
    tile of :data:`CHIRAL_FACES` (the vote, :func:`table_hand` on the caller's trusted reads,
    is work: it is taken where a guard or a block first needs it)."""
    return lambda r: getattr(r, "face", None) in CHIRAL_FACES and shows_way(r, way())

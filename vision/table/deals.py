"""Which deal a table shows: a position's reading against the deal it held, and a whole
table's faces against the open round's deal (issue 45: a table cleared and dealt again faster
than its empty table could be seen; :class:`vision.table.rounds.RoundTracker`).

Signatures are :attr:`vision.table.rounds.PositionState.signature`: ``("set", high faces, low
faces)``, ``("problem", ((state, face), ...))`` or ``("empty",)``.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

__all__ = ["other_deal", "faces_beyond", "EmptyRun", "OTHER_DEAL_FACES", "OTHER_TABLE_FACES"]


#: Faces a position's new deal shows that its earlier stable reading did not (beyond that
#: reading's unread tiles) from which it is another deal, not a misread tile read again
#: (:func:`other_deal`).
OTHER_DEAL_FACES = 2


def _faces_and_slots(sig: tuple) -> tuple[Counter, int]:
    """The identified faces of a position signature and its tiles not identified (unknown,
    face down, or missing from four)."""
    if sig[0] == "set":
        return Counter(sig[1] + sig[2]), 0
    if sig[0] == "problem":
        known = Counter(f for state, f in sig[1] if state == "face_up" and f)
        return known, max(0, 4 - sum(known.values()))
    return Counter(), 4


def other_deal(old: tuple, new: tuple) -> bool:
    """True when position signature ``new`` (:attr:`PositionState.signature`) is another deal
    than ``old``: it shows at least :data:`OTHER_DEAL_FACES` faces that ``old`` did not,
    beyond the tiles ``old`` left unread. One tile read differently (a misread corrected) or
    a hand half covered is the same deal; a cleared and dealt-again position shares almost
    no face with its last deal."""
    if new[0] not in ("set", "problem") or old[0] not in ("set", "problem"):
        return False
    old_faces, old_slots = _faces_and_slots(old)
    new_faces, _ = _faces_and_slots(new)
    fresh = sum((new_faces - old_faces).values())
    return fresh - old_slots >= OTHER_DEAL_FACES


#: Faces a whole table shows beyond the open round's deal (its unread tiles aside) from
#: which, held stably, it is another deal
#: (:meth:`vision.table.rounds.RoundTracker._table_replaced`): two positions' worth, far
#: above what misreads give.
OTHER_TABLE_FACES = 8


def faces_beyond(deal: Iterable[tuple], reads: Sequence) -> int:
    """How many identified faces of ``reads`` (the table's tiles, in positions or not) the
    deal -- the positions' signatures it held -- does not hold, less its unread tiles."""
    dealt, slots = Counter(), 0
    for sig in deal:
        f, n = _faces_and_slots(sig)
        dealt, slots = dealt + f, slots + n
    now = Counter(r.face for r in reads if r.state == "face_up" and r.face)
    return sum((now - dealt).values()) - slots



class EmptyRun:
    """Live: since when (camera time) a table has shown no tile, in the frames a
    :class:`vision.table.rounds.RoundTracker` is given. A table far behind its camera (under
    load a fresh picture a second or less) may see a cleared table in fewer frames than a
    stable run takes; the empty frames it did see, spanning a stable run's time up to the
    next deal, still end the round (issue 45: every round reported, whatever the load)."""

    def __init__(self) -> None:
        self.since: float | None = None

    def step(self, empty: bool, now: float) -> float | None:
        """One frame at camera time ``now`` (s), showing no tile (``empty``) or some. Returns,
        on the first frame with tiles after a run of empty ones, the seconds from that run's
        first frame to this one (the longest the table can have stood empty); else None."""
        if empty:
            self.since = now if self.since is None else self.since
            return None
        since, self.since = self.since, None
        return None if since is None else now - since

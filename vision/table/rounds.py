"""Table: tile reads -> positions (two hands each) -> rounds settled by :mod:`scoring.settle`.

Design: docs/architecture.md (the table stage); the rounds it produces become round events
(docs/round-event.md) in :mod:`vision.table.events`.

Positions
---------
With a :class:`Layout` (YAML, polygons per position in image pixels) a tile belongs to the
position whose polygon holds its centre (:func:`assign_positions`). A layout pins the seats;
``paigow layout propose FRAME...`` drafts one from frames of any table
(:mod:`vision.table.propose`).

Without a layout, :func:`group_seats` names the tiles by *where* they lie, never by counting
groups (a chip taken for a tile or a hand split in two must not shift every seat after it):

1. tiles whose outlines come within ``UNIT_GAP`` tile widths form a group (a hand, or a
   position whose hands touch);
2. the table model :data:`SEAT_MODEL` -- the dealer at the top centre, seats "1".."7" evenly
   along an arc facing the dealer, seat 1 at the image right -- is fitted (scale, shift, a
   turn of at most ``MAX_ROTATION``, 40 degrees) to the groups that look like a position (four
   touching tiles, or two hands of two). The dealer's group and at least ``MIN_FIT - 1``
   others must fit, the dealer's tiles must lie within ``DEALER_TURN_MAX`` of square to the
   fitted table, no different assignment of those groups to places may fit about as well
   (unless it scores ``RIVAL_MARGIN`` worse: its rms and its dealer's turn from square), and
   no position-like group may be left over beyond an end seat; otherwise no position is
   named (the reason is kept). Along the arc the seats fit their own image shifted by one
   seat after a turn of about 18 degrees; the true placement being within reach, the fit's
   rms, the dealer's square tiles and the left-over end seat are what keep the names from
   sliding;
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

A position's hand is its four face-up tiles; tile backs beside four identified face-up tiles
are undealt stacks (a seat is dealt exactly four tiles, docs/rules.md sections 4-5) and are set
aside, while a back among fewer face-up tiles (a hand not yet turned over) stops the position
from settling. A position's four tiles are two hands laid together: :func:`pair_hands` chooses the pairing of
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
None, each position's reason) when the table has been empty for ``n_stable`` frames, when a
position of the open round stably shows another deal (:func:`other_deal`: the table was
cleared and dealt again faster than the empty table could be seen -- a live table that fell
behind), or by :meth:`RoundTracker.flush` when the source ends (or, for still images, before
the next image).

Live sources (issue 45) measure stability on the camera's clock: ``stable_s`` seconds of
:attr:`FrameHeader.timestamp` with at least ``min_frames`` frames instead of ``n_stable``
frames (:meth:`vision.pipeline.Pipeline.set_live`), so a table whose loop falls behind still
settles and one that keeps up is not slower; and a frame whose reads are ``provisional`` (a
first look the fused still reading has not vetted yet) counts for stability but never settles
a round.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from scoring.errors import InputError
from scoring.hands import hand_key
from scoring.rules import get_profile
from scoring.setting import Setting, get_house_way
from scoring.settle import POSITIONS, parse_commission, settle_round
from scoring.tiles import TILES_BY_FACE, faces_over_set

from vision.recognition.decode import TileRead
from vision.geometry import points_in_polygon
from vision.schema import Alert, AlertCode
from vision.table.reasons import SettleReason, banker_code, problem_code
from vision.table.settled import FrameHeader, SettledRound  # re-exported
from vision.table.alerts import duplicate_face_alert
from vision.table.count import covered_extras
from vision.table.layout import Layout, check_polygons, load_layout  # re-exported
from vision.table.open_tile import NOT_SEEN, settle_open
from vision.table.deals import (OTHER_DEAL_FACES, OTHER_TABLE_FACES, EmptyRun,  # noqa: F401
                                faces_beyond, other_deal)
from vision.table.seats import SEAT_MODEL, SeatGrouping, auto_group, group_seats  # re-exported

__all__ = [
    "Layout",
    "FrameHeader",
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
    "points_in_polygon",
    "check_polygons",
]


# --------------------------------------------------------------------------- positions


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
        set_aside: tile backs lying beside four identified face-up tiles (undealt stacks: a
            seat is dealt exactly four tiles); not part of ``tiles`` (the hand), they do not
            stop the position from settling.
        open_hands: for a position whose only problem is unknown tiles among four face-up
            tiles, its two hands as laid (paired by where the tiles lie): it may still settle
            where every face that tile could be gives the same result (:mod:`vision.table.open_tile`).
            For a position of three face-up tiles (at most one unknown) and a fourth not seen,
            the three tiles and :data:`vision.table.open_tile.NOT_SEEN` (``missing`` = 1):
            every pairing of the four is tried there, since where the unseen tile lies is
            unknown.
        covered: unknown outlines lying on the position's four identified tiles
            (:func:`vision.table.count.covered_extras`): not a tile, left out of ``tiles``.
        missing: 1 when the position is open as three tiles and a fourth of any face that
            no read outline gives (not seen at all, or under one of its unread outlines or
            tile backs, :data:`vision.table.open_tile.NOT_SEEN`); else 0.
        fourth_hands: for a position open as three identified tiles beside exactly one
            unknown outline and tile backs (``missing`` = 1), the two hands as laid if that
            unknown outline is the fourth tile (paired by where the tiles lie); taken by
            :func:`vision.table.open_tile.settle_open` only where the outline shows spots of
            its own (a face-up tile, so the backs are no tile of the seat); else None.
    """

    position: str
    tiles: list[TileRead]
    setting: Setting | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)
    set_aside: list[TileRead] = field(default_factory=list)
    open_hands: tuple[list[TileRead], list[TileRead]] | None = None
    covered: list[TileRead] = field(default_factory=list)
    missing: int = 0
    fourth_hands: tuple[list[TileRead], list[TileRead]] | None = None

    def take_fourth(self) -> None:
        """The position settled with its unknown outline as the fourth tile
        (:func:`vision.table.open_tile.settle_open`, from ``fourth_hands``): its tiles become
        those four as laid, the tile backs beside them are set aside (``set_aside``, as beside
        four identified tiles) and no tile is missing. Raises ValueError when the position
        has no ``fourth_hands``."""
        if self.fourth_hands is None:
            raise ValueError(f"position {self.position}: no fourth tile to take")
        four = [r for h in self.fourth_hands for r in h]
        self.set_aside = [r for r in self.tiles if all(r is not t for t in four)]
        self.tiles = four
        self.open_hands = self.fourth_hands
        self.missing = 0

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

    @property
    def reason_code(self) -> SettleReason | None:
        """The code of :attr:`reason` (:func:`vision.table.reasons.problem_code`)."""
        return problem_code(k for k, _ in self.problems)


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
        # unknown outlines lying on four identified tiles are no tile (vision.table.count)
        st.covered = covered_extras(tiles)
        if st.covered:
            tiles = [r for r in tiles if all(r is not c for c in st.covered)]
            st.tiles = tiles
        up = [r for r in tiles if r.state != "face_down"]
        down = [r for r in tiles if r.state == "face_down"]
        if len(up) == 4 and all(r.state == "face_up" for r in up):
            # four identified face-up tiles: the hand. A tile back beside them is a stack not
            # dealt (a seat gets exactly four tiles), set aside -- never part of the hand.
            st.set_aside = down
        else:
            up, down = tiles, []
        if len(up) != 4:
            st.problems.append((AlertCode.WRONG_TILE_COUNT,
                                SettleReason.WRONG_TILE_COUNT.say(len(up))))
        n_unknown = sum(r.state == "unknown" for r in up)
        if n_unknown:
            why = "; ".join(sorted({r.reason or "unread" for r in up if r.state == "unknown"}))
            st.problems.append((AlertCode.UNKNOWN_TILE,
                                SettleReason.UNKNOWN_TILE.say(n_unknown, why)))
        n_down = sum(r.state == "face_down" for r in up)
        if n_down:
            st.problems.append((SettleReason.FACE_DOWN, SettleReason.FACE_DOWN.say(n_down)))
        if (len(up) == 4 and n_unknown >= 1 and not n_down
                and all(k == AlertCode.UNKNOWN_TILE for k, _ in st.problems)):
            st.open_hands = pair_hands(up, rules)
        elif all(k in (AlertCode.UNKNOWN_TILE, AlertCode.WRONG_TILE_COUNT, "face_down")
                 for k, _ in st.problems):
            # a fourth tile no read outline gives (vision.table.open_tile.NOT_SEEN, every
            # pairing tried): three tiles shown and none beside them (covered, or still in a
            # hand); or three identified tiles beside outlines that are not read (unknown, or
            # a tile back) -- a seat holds four, so its fourth lies under one of those or none
            ids = [r for r in up if r.state == "face_up"]
            shown = (up if len(up) == 3 and n_unknown <= 1 and not n_down
                     else ids if len(ids) == 3 and len(up) >= 4 else None)
            if shown is not None:
                st.open_hands = (list(shown[:2]), [shown[2], NOT_SEEN])
                st.missing = 1
                face_up = [r for r in up if r.state != "face_down"]
                if shown is ids and n_down and n_unknown == 1 and len(face_up) == 4:
                    # the one unknown outline beside the backs may be the fourth tile
                    # (settle_open takes it so only where it shows spots of its own)
                    st.fourth_hands = pair_hands(face_up, rules)
        if not st.problems:
            h, lo = pair_hands(up, rules)
            st.tiles = h + lo
            st.setting = Setting((TILES_BY_FACE[h[0].face], TILES_BY_FACE[h[1].face]),
                                 (TILES_BY_FACE[lo[0].face], TILES_BY_FACE[lo[1].face]))
        out[pos] = st
    return out


# --------------------------------------------------------------------------- rounds


#: The fewest frames of a stable run when stability is measured in seconds
#: (:class:`RoundTracker` ``stable_s``).
MIN_FRAMES = 3

#: Identified tiles in no position make a round on their own (no position named: no layout
#: fit, or a layout drawn for another table) from this many on (unread outlines alone never
#: do: felt lettering taken for tiles must not hold a round open): a round deals at least
#: the dealer's and one player's four; a stray chip or card taken for a tile is not a round.
LOOSE_ROUND = 4


class RoundTracker:
    """Per-position stability over frames and one settlement per round (module docstring).

    Args:
        n_stable: consecutive identical frames for a position to be final (>= 1; 1 for stills).
        banker: the banking position id.
        rules, commission, house_way, bets, co_bank: settlement settings (see
            :func:`scoring.settle.settle_round`); commission None = the profile's rate.
        settle_wait: frames to wait after the banker is final for the other positions to become
            final (default ``2 * n_stable``; 0 when ``n_stable`` is 1, for stills); with
            ``stable_s``, ``2 * stable_s`` seconds instead.
        stable_s: seconds of the camera's clock (:attr:`FrameHeader.timestamp`) a position
            must stay identical to be final, with at least ``min_frames`` frames seen (a live
            table that falls behind and processes few frames still settles, one that keeps
            up is not slower); None (files, stills): ``n_stable`` frames.
        min_frames: the fewest frames of a stable run under ``stable_s`` (capped at
            ``n_stable``).

    Raises:
        InputError: ``n_stable`` < 1, ``stable_s`` < 0 or a bad setting.
    """

    def __init__(self, n_stable: int = 10, banker: str = "dealer", rules: str = "pa",
                 commission: str | None = None, house_way: str = "reference",
                 bets: Mapping[str, str] | None = None, co_bank: bool = False,
                 settle_wait: int | None = None, stable_s: float | None = None,
                 min_frames: int = MIN_FRAMES) -> None:
        if not isinstance(n_stable, int) or n_stable < 1:
            raise InputError(f"stable frame count must be an integer >= 1, got {n_stable!r}")
        if stable_s is not None and not stable_s >= 0:
            raise InputError(f"stable time must be >= 0 seconds, got {stable_s!r}")
        self.n_stable = n_stable
        self.stable_s = None if stable_s is None else float(stable_s)
        self.min_frames = max(1, min(int(min_frames), n_stable))
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
        #: position -> (signature, frames, camera time the run began)
        self._streak: dict[str, tuple[tuple, int, float]] = {}
        self._now = 0.0  # the camera time of the frame being handled
        self._banker_final_for = 0
        self._banker_final_at: float | None = None
        #: the open round's deal: position -> the last signature it held stably (the round a
        #: new deal replaces is reported, :meth:`_replaced`)
        self._deal: dict[str, tuple] = {}
        self._holds_deal = False  # this frame shows the open round's deal, stably
        self._provisional = False  # this frame's reads are a first look (update)
        #: the last frame's (positions, frame, loose, placement) that showed that deal
        self._deal_pending: tuple | None = None
        self._settled_sig: tuple | None = None  # banker signature of the last settled round
        #: (positions, frame, loose tiles, placement) of the last frame that showed tiles
        #: while the round was open
        self._pending: tuple[dict, dict, list, str | None] | None = None
        self._loose: list[TileRead] = []
        self._placement: str | None = None
        self._loose_clear = 0  # consecutive frames without a tile in no position
        self._empty = EmptyRun()  # live: since when the table has shown no tile
        self.rounds = 0

    # -- state ---------------------------------------------------------------------------
    def _observe(self, positions: Mapping[str, PositionState]) -> None:
        seen = set(positions) | set(self._streak)
        for pos in seen:
            sig = positions[pos].signature if pos in positions else ("empty",)
            old = self._streak.get(pos)
            self._streak[pos] = ((sig, old[1] + 1, old[2]) if old and old[0] == sig
                                 else (sig, 1, self._now))

    def _held(self, streak) -> bool:
        """A run long enough to count: ``n_stable`` frames, or with :attr:`stable_s` that many
        seconds of the camera's clock and at least :attr:`min_frames` frames."""
        if streak is None:
            return False
        if self.stable_s is None:
            return streak[1] >= self.n_stable
        return streak[1] >= self.min_frames and self._now - streak[2] >= self.stable_s - 1e-9

    def is_final(self, pos: str) -> bool:
        """True when ``pos`` has shown the same setting for ``n_stable`` frames (or
        :attr:`stable_s` seconds, :meth:`_held`)."""
        s = self._streak.get(pos)
        return bool(s and s[0][0] == "set" and self._held(s))

    def is_stable(self, pos: str) -> bool:
        """True when ``pos`` has shown the same setting, or the same problem, for ``n_stable``
        frames (or :attr:`stable_s` seconds)."""
        s = self._streak.get(pos)
        return bool(s and s[0][0] in ("set", "problem") and self._held(s))

    def _replaced(self, positions: Mapping[str, PositionState]) -> bool:
        """True when a position of the open round now holds, stably, another deal than the
        one it held stably before (:func:`other_deal`): the round was cleared and dealt again
        faster than :meth:`update` could see the empty table. Records each position's stable
        signature of the deal on the way."""
        replaced = False
        self._holds_deal = False
        for pos in positions:
            s = self._streak.get(pos)
            if s is None or s[0][0] not in ("set", "problem") or not self._held(s):
                continue
            old = self._deal.get(pos)
            if old is not None and other_deal(old, s[0]):
                replaced = True
            else:
                self._deal[pos] = s[0]
                self._holds_deal = True
        return replaced

    def _table_replaced(self, positions: Mapping[str, PositionState],
                        ids: Sequence[TileRead]) -> bool:
        """True once the table -- the identified faces of the deal's positions and those lying
        in no position -- has shown, for a stable run (:meth:`_held`), at least
        :data:`OTHER_TABLE_FACES` faces more than the open round's deal holds beyond its unread
        tiles: another deal whose tiles could not be placed as positions (no layout and the
        seat model did not fit) replaced it."""
        if not self._deal:
            self._other_run = None
            return False
        # (positions the deal has not shown yet are that deal's, being dealt: not counted)
        ids = list(ids) + [r for p, st in positions.items() if p in self._deal for r in st.tiles]
        if faces_beyond(self._deal.values(), ids) < OTHER_TABLE_FACES:
            self._other_run = None
            return False
        run = getattr(self, "_other_run", None)
        self._other_run = run = (None, (run[1] if run else 0) + 1, run[2] if run else self._now)
        return self._held(run)

    def _shows_other_deal(self, positions: Mapping[str, PositionState]) -> bool:
        """True when any position shows (stable or not) another deal than the open round's."""
        return any(p in self._deal and other_deal(self._deal[p], st.signature)
                   for p, st in positions.items())

    @property
    def open(self) -> bool:
        """True while the current round has not been settled."""
        return self._settled_sig is None

    def update(self, positions: Mapping[str, PositionState], frame: FrameHeader | None = None,
               *, loose: Sequence[TileRead] = (), placement: str | None = None,
               provisional: bool = False, since: float | None = None
               ) -> SettledRound | None:
        """Feed one frame's positions; returns the :class:`SettledRound` on the frame that
        settles a round, or that finds the table cleared of a round that never settled
        (``result`` None), else None.

        Args:
            positions: position -> what it shows this frame.
            frame: the frame's :class:`FrameHeader`, kept with the round (None: an empty one).
            loose: face-up or unknown tiles that lie in no position (outside every layout
                polygon, or not placed by the grouping). They keep the round open like any
                tile (a round is never lost because its tiles lie outside the positions) and
                are reported on the round with a ``tiles_outside_positions`` alert.
            placement: why no position could be named in this frame (no layout and the
                table model did not fit), or None; an unsettled round says so as its reason.
            provisional: the reads are a first look the vet has not confirmed yet (live
                video, :class:`vision.recognition.engine.Reads`): they count for stability
                and end rounds, but no round is settled on them.
            since: with ``stable_s``: the camera time since which the picture has not moved,
                when ``positions`` come from a reading that holds for every frame since then
                (the fused still reading standing for a still picture): their runs count from
                there (at least :attr:`min_frames` frames were seen since), and so does the
                wait for positions that are not final (``settle_wait``).
        """
        if frame is not None:
            self._now = float(frame.timestamp)
        self._holds_deal = False
        self._provisional = bool(provisional)
        self._observe(positions)
        if since is not None and self.stable_s is not None:
            for pos in positions:
                sig, n, start = self._streak[pos]
                if since < start:
                    self._streak[pos] = (sig, max(n, self.min_frames), since)
        loose = [r for r in loose if r.state != "face_down"]
        # identified tiles in no position make a round and hold it; unread outlines alone do
        # not (felt lettering or a chip taken for tiles would hold a round open for ever)
        ids = [r for r in loose if r.state == "face_up"]
        self._loose_clear = 0 if ids else self._loose_clear + 1
        # live: an empty table seen in too few frames for a stable run, over a stable run's
        # time up to a deal that is not the open one's (nor the settled one's) ended it
        gap = self._empty.step(not positions and not ids, self._now)
        cleared = self.stable_s is not None and gap is not None and gap >= self.stable_s \
            and not (self._deal and all(self._deal.get(p) == st.signature
                                        for p, st in positions.items()))
        self._loose, self._placement = loose, placement
        b = self._streak.get(self.banker)
        if self._settled_sig is not None:
            # (after a brief clear only another deal opens one: the same deal read again
            # -- a tile misread or covered -- must never settle twice)
            changed = b is None or b[0] != self._settled_sig and (
                self._held(b) and b[0][0] in ("empty", "set")
                or cleared and other_deal(self._settled_sig, b[0]))
            if changed:
                self._settled_sig = None  # the table changed: a new round
                self._banker_final_for, self._banker_final_at = 0, None
                self._deal = {}
            else:
                return None
        elif self._pending is not None and any([cleared, self._replaced(positions),  # record
                                                self._table_replaced(positions, ids)]):
            # dealt again before the empty table was seen (a cleared table that passed within
            # the stability window), or seen too briefly (cleared): the round of the earlier
            # deal is reported, unsettled, with the last picture that showed that deal
            if self._deal_pending is not None:
                self._pending = self._deal_pending
            ended = self._unsettled(SettleReason.TABLE_CLEARED if cleared
                                    else SettleReason.DEALT_AGAIN, settle=False)
            self._deal = {}
            self._replaced(positions)
            self._banker_final_for, self._banker_final_at = 0, None
            if positions or len(ids) >= LOOSE_ROUND:
                self._pending = (dict(positions), frame or FrameHeader(), list(loose),
                                 placement)
            self._deal_pending = self._pending if self._holds_deal else None
            return ended
        if positions or len(ids) >= LOOSE_ROUND:
            self._pending = (dict(positions), frame or FrameHeader(), list(loose), placement)
            self._pending_prov = self._provisional
            if self._holds_deal and not self._shows_other_deal(positions):
                # the last picture that showed the open round's deal (what it is reported
                # with if another deal replaces it before it settles)
                self._deal_pending = self._pending
        elif self._pending is not None and (self._pending[0] or self._loose_clear >= self.n_stable
                                            ) and all(st[0] == ("empty",) and self._held(st)
                                                      for st in self._streak.values()):
            # cleared: every position stably empty (a tile lying outside them, say a chip
            # taken for one, does not hold a round of positions open); a round made only of
            # tiles in no position ends when those are gone too
            dp, last = self._deal_pending, self._pending
            if dp is not None and dp is not last and self._shows_other_deal(last[0]):
                # the table showed another deal after this round's, never long enough to
                # replace it (a loop that fell far behind): both are reported, this one now,
                # the other on the next empty frame
                self._pending = dp
                ended = self._unsettled(SettleReason.DEALT_AGAIN, settle=False)
                self._pending = last
                return ended
            return self._unsettled(SettleReason.TABLE_CLEARED)
        if not self.is_final(self.banker):
            self._banker_final_for, self._banker_final_at = 0, None
            return None
        if provisional:
            # never settled on a first look (live video): the vet's reading comes, and the
            # wait for the other positions starts with it
            self._banker_final_for, self._banker_final_at = 0, None
            return None
        self._banker_final_for += 1
        if self._banker_final_at is None:
            # a reading that holds since the picture stopped (``since``): the banker's tiles
            # have shown it since then, so the wait for the other positions runs from there
            # (waiting on for a still picture whose reading stands changes nothing)
            held = (self._streak[self.banker][2] if since is not None
                    and self.stable_s is not None else self._now)
            self._banker_final_at = min(self._now, held)
        ready = all(self.is_final(p) for p in positions)
        waited = (self._banker_final_for > self.settle_wait if self.stable_s is None
                  else self._now - self._banker_final_at >= 2 * self.stable_s)
        if not ready and not waited:
            return None
        self._settled_sig = self._streak[self.banker][0]
        self.rounds += 1
        self._pending = self._deal_pending = None
        self._deal = {}
        return self._settle(dict(positions), frame or FrameHeader(), list(loose), placement)

    def flush(self, ending: SettleReason = SettleReason.SOURCE_ENDED) -> SettledRound | None:
        """End of the source (or of one still image): the open round that showed tiles but
        did not settle, as an unsettled :class:`SettledRound` ending ``ending``, or None."""
        if self._pending is None or self._settled_sig is not None:
            return None
        return self._unsettled(ending)

    def _unsettled(self, why: SettleReason, settle: bool = True) -> SettledRound:
        """The open round as it was last seen, unsettled with reason ``why`` (an ending code;
        ``settle`` False: the positions' runs are another picture's, nothing is final)."""
        positions, frame, loose, placement = self._pending
        self._provisional = getattr(self, "_pending_prov", False)  # that frame's reads
        self._pending = self._deal_pending = None
        self._deal = {}
        self.rounds += 1
        rnd = self._settle(positions, frame, loose, placement, settle=settle)
        if rnd.result is not None:  # settleable after all (flush right on the settling frame)
            return rnd
        rnd.reason = why.say(rnd.reason)
        rnd.cause_code, rnd.reason_code = rnd.reason_code, why
        return rnd

    # -- settlement ----------------------------------------------------------------------
    def _settle(self, positions: dict[str, PositionState], frame: FrameHeader,
                loose: Sequence[TileRead] = (), placement: str | None = None,
                settle: bool = True) -> SettledRound:
        """The round of ``positions`` (``loose``: tiles in no position, reported with a
        ``tiles_outside_positions`` alert; ``placement``: why they could not be placed). Any
        exception raised while settling what the camera read (a misread the checks did not
        foresee) becomes a round not settled, with the reason and a ``settle_error`` alert: no
        reading of a picture ends a run, a feed or a pit worker (docs/round-event.md, alerts)."""
        try:
            return self._settle_reads(positions, frame, loose, placement, settle)
        except Exception as e:  # noqa: BLE001 -- a reading is never bad input
            why = str(e) or type(e).__name__
            code = SettleReason.SETTLEMENT_FAILED
            reason = code.say(why)
            return SettledRound(positions, [], None, {p: reason for p in positions},
                                [Alert(AlertCode.SETTLE_ERROR, None,
                                       f"the round could not be settled from what the camera "
                                       f"read: {why}")],
                                self.banker, self.rules, self.commission, self.house_way,
                                dict(self.bets), frame, reason,
                                codes={p: code for p in positions}, reason_code=code)

    def _settle_reads(self, positions: dict[str, PositionState], frame: FrameHeader,
                      loose: Sequence[TileRead] = (), placement: str | None = None,
                      settle: bool = True) -> SettledRound:
        alerts: list[Alert] = []
        not_settled: dict[str, str] = {}
        codes: dict[str, SettleReason] = {}  # the code of each not_settled reason

        def mark(p: str, code: SettleReason, text: str) -> None:
            not_settled[p], codes[p] = text, code
        if loose:
            faces = ", ".join(sorted(r.face or "unknown" for r in loose))
            alerts.append(Alert(AlertCode.TILES_OUTSIDE_POSITIONS, None,
                                f"{len(loose)} tile(s) in no position ({faces})"
                                + (f": {placement}" if placement else "")))
        for pos, st in positions.items():
            for kind, detail in st.problems:
                if kind != "face_down":
                    alerts.append(Alert(kind, pos, detail))
        final = [p for p in positions if settle and self.is_final(p)
                 and positions[p].setting is not None]
        for p in positions:
            if p not in final and settle and self._provisional:  # the first look's problems
                why = positions[p].reason  # are not the reason: the reading had not landed
                mark(p, SettleReason.READING_PENDING, SettleReason.READING_PENDING.say()
                     + (f" (the first look: {why})" if why else ""))
            elif p not in final:
                code = positions[p].reason_code or (
                    SettleReason.NOT_CONFIRMED if not settle else SettleReason.NOT_STABLE)
                mark(p, code, positions[p].reason or code.say())
        # faces read more often than a set holds: somebody's read is wrong (one check with
        # the round event's alerts, vision.table.alerts.duplicate_faces)
        sightings = [(r.face, p) for p in sorted(positions, key=POSITIONS.index)
                     for r in positions[p].tiles if r.face]
        count = Counter(face for face, _ in sightings)
        over = faces_over_set(sightings)
        for found in over:
            alerts.append(Alert.from_dict(duplicate_face_alert(found)))
            for p in found.holders:
                if p in final:
                    final.remove(p)
                    mark(p, SettleReason.DUPLICATE_FACE,
                         SettleReason.DUPLICATE_FACE.say(found.tile.face))
        # unread tiles: settled only where every face they could be gives the same result
        stand_in: dict[str, tuple[Setting, tuple[str, ...]]] = {}
        unread: dict[str, str] = {}
        # (a banker with an unread tile never starts the settling: in video the tile may
        # be read a moment later; the round is settled so when it ends unsettled)
        opened = [p for p in positions if settle and p not in final and self.is_stable(p)
                  and positions[p].open_hands is not None]
        if opened and not self.co_bank and not over:
            stand_in, unread, refused = settle_open(
                positions, final, opened, count, banker=self.banker, rules=self._profile,
                way=self.house_way, commission=self.commission, bets=self.bets)
            for p, why in refused.items():
                final.remove(p)
                mark(p, SettleReason.UNREAD_DECIDES, why)
            for p in stand_in:
                final.append(p)
                not_settled.pop(p, None)
                codes.pop(p, None)
        result = None
        reason = reason_code = None
        if self.banker not in final and placement and not positions:
            reason, reason_code = placement, SettleReason.NO_PLACEMENT  # not "banker empty"
            final = []
        elif self.banker not in final:
            why = not_settled.get(self.banker, SettleReason.BANKER_EMPTY.say())
            why_code = codes.get(self.banker, SettleReason.BANKER_EMPTY)
            if self.banker not in positions and loose:
                why += f"; {len(loose)} tile(s) in no position"
            if self.banker not in not_settled:
                mark(self.banker, why_code, why)
            reason_code = banker_code(why_code, [k for k, _ in getattr(
                positions.get(self.banker), "problems", ())])
            reason = reason_code.say(self.banker, why)
            for p in final:
                mark(p, reason_code, reason)
            final = []
        else:
            others = [p for p in final if p != self.banker]
            if not others:
                final = []
                reason_code = SettleReason.NO_OTHER_SETTLED
                reason = reason_code.say()
                if self.banker not in not_settled:
                    mark(self.banker, reason_code, reason)
            else:
                bets = {p: v for p, v in self.bets.items() if p in final}
                if self.banker == "dealer":
                    bets.pop("dealer", None)
                # a stand-in face is no tile of the set: kept out of the set check
                result = settle_round({p: stand_in[p][0] if p in stand_in
                                       else positions[p].setting for p in final}, bets=bets,
                                      banker=self.banker, rules=self._profile,
                                      way=self.house_way, co_bank=self.co_bank,
                                      commission=self.commission,
                                      stand_in={p: f for p, (_, f) in stand_in.items()})
                # a stand-in setting is not the position's: no alert about its hands
                alerts.extend(Alert.from_dict(a.to_dict()) for a in result.alerts
                              if a.position not in stand_in)
                alerts.extend(Alert(AlertCode.UNREAD_TILE, p, note) for p, note in unread.items())
        order = {p: i for i, p in enumerate(POSITIONS)}
        final.sort(key=order.get)
        return SettledRound(positions, final, result, not_settled, alerts, self.banker,
                            self.rules, self.commission, self.house_way, dict(self.bets), frame,
                            reason, unread if result is not None else {}, codes, reason_code)

    def reset(self) -> None:
        """Forget all state (a new source); call :meth:`flush` first to keep an open round."""
        self._streak.clear()
        self._banker_final_for, self._banker_final_at = 0, None
        self._deal, self._deal_pending, self._holds_deal = {}, None, False
        self._other_run = None
        self._settled_sig = None
        self._pending = None
        self._loose, self._placement, self._loose_clear = [], None, 0
        self._empty = EmptyRun()

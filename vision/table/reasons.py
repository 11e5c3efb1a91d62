"""Why a position or a round is not settled, as codes: :class:`SettleReason`, carried beside
each reason text of the round event (``PositionOutcome.reason_code``,
``RoundEvent.reason_code``; docs/round-event.md, "Reason codes"), and the two rules that pick a
code where a reason has several parts (:func:`problem_code`, :func:`banker_code`).

The words are made here, from the code (:meth:`SettleReason.say`), byte for byte the words the
table wrote before the codes; :mod:`vision.schema` re-exports the enum. Programs switch on the
code; only :func:`vision.io.views.reason_code_of` reads words (events written before the codes).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Iterable

from scoring.reasons import SeatReason

__all__ = ["SettleReason", "PROBLEM_ORDER", "problem_code", "banker_code"]


class SettleReason(StrEnum):
    """Why a position or a round is not settled (or a seat was settled other than by a plain
    comparison): the code carried beside each reason text of the round event
    (``PositionOutcome.reason_code``, ``RoundEvent.reason_code``; docs/round-event.md, "Reason
    codes"). Each member is its JSON string. Consumers switch on the code
    (:func:`vision.io.views.plain_reason`); the text stays what people and old readers read,
    made from the code by :meth:`say`, byte for byte the words written before the codes.

    The scoring engine's seat reasons are :class:`scoring.reasons.SeatReason` (``scoring``
    never imports ``vision``); they are members here with the same strings. The comment above
    each member names where it is made.
    """

    # -- the scoring engine (scoring.settle, scoring.reasons.SeatReason) --------------------
    #: tiles given unset, set by the house way
    SET_BY_HOUSE_WAY = SeatReason.SET_BY_HOUSE_WAY.value
    #: mis-set, forfeited as a loss (profile mis_set = forfeit)
    MIS_SET_FORFEITED = SeatReason.MIS_SET_FORFEITED.value
    #: mis-set, re-set by the house way
    MIS_SET_RESET = SeatReason.MIS_SET_RESET.value
    #: the dealer's wager against a banking player: no commission
    HOUSE_WAGER = SeatReason.HOUSE_WAGER.value
    #: co-bank: the dealer's seat is not settled
    CO_BANK = SeatReason.CO_BANK.value
    # -- a position's own problems (vision.table.rounds.build_positions, vision.table.seats) --
    #: other than four tiles: "5 tiles, a position holds 4"
    WRONG_TILE_COUNT = "wrong_tile_count"
    #: a tile whose face was not read: "1 tile(s) unknown (<the reads' reasons>)"
    UNKNOWN_TILE = "unknown_tile"
    #: "1 tile(s) face down"
    FACE_DOWN = "face_down"
    #: the grouping into seats is unclear (vision.table.seats: its own words)
    SEAT_UNCLEAR = "seat_unclear"
    # -- the round tracker (vision.table.rounds.RoundTracker) --------------------------------
    #: a face read more often than a set holds: "duplicate face 1-2"
    DUPLICATE_FACE = "duplicate_face"
    #: an unread tile's possible faces give different results (vision.table.open_tile):
    #: "seat 2's unread tile decides this seat"
    UNREAD_DECIDES = "unread_decides"
    #: the position did not show the same setting long enough
    NOT_STABLE = "not_stable"
    #: live video: the still reading of the deal had not come back
    READING_PENDING = "reading_pending"
    #: the table was dealt again before the position was confirmed
    NOT_CONFIRMED = "not_confirmed"
    #: the banker's position shows no tile
    BANKER_EMPTY = "banker_empty"
    #: the banker is not settled (for another reason than an unread tile):
    #: "banker dealer not settled (<the banker's reason>)"
    BANKER_NOT_SETTLED = "banker_not_settled"
    #: the banker is not settled and one of its tiles is unread (same words as above)
    BANKER_UNREAD = "banker_unread"
    #: the banker settled but no other position did
    NO_OTHER_SETTLED = "no_other_settled"
    #: settling what the camera read raised an error: "settlement failed: <error>"
    SETTLEMENT_FAILED = "settlement_failed"
    #: no layout and the positions could not be placed (vision.pipeline: its own words)
    NO_PLACEMENT = "no_placement"
    #: the round ended before it settled (the round's reason, then ": <why>" when the
    #: settling frame had a reason of its own)
    TABLE_CLEARED = "table_cleared"
    DEALT_AGAIN = "dealt_again"
    SOURCE_ENDED = "source_ended"
    #: a supervisor's entry (vision.audit.entries) still left the round unsettled
    MANUAL_UNSETTLED = "manual_unsettled"
    #: no reason recorded (an event shaped without one)
    NOT_SETTLED = "not_settled"

    def say(self, *detail: object) -> str:
        """The reason's words: the code's template (:data:`_SETTLE_WORDS`) filled with
        ``detail`` in order; an ending code (``TABLE_CLEARED``, ``DEALT_AGAIN``,
        ``SOURCE_ENDED``, ``MANUAL_UNSETTLED``) adds ``": <detail>"`` when one (not None) is
        given. ``WRONG_TILE_COUNT.say(5) == "5 tiles, a position holds 4"``.

        Raises:
            TypeError: a detail the words have no place for, or one missing.
        """
        if self in _SETTLE_ENDINGS:
            if len(detail) > 1:
                raise TypeError(f"{self.value} takes at most one detail")
            why = detail[0] if detail else None
            return f"{_SETTLE_WORDS[self]}: {why}" if why else _SETTLE_WORDS[self]
        if self.value in _SEAT_REASONS:
            return SeatReason(self.value).say(*detail)
        words = _SETTLE_WORDS[self]
        if words.count("{") != len(detail):
            raise TypeError(f"{self.value} takes {words.count('{')} detail(s), "
                            f"got {len(detail)}")
        return words.format(*detail)


_SEAT_REASONS = frozenset(c.value for c in SeatReason)
#: The words of each code made in vision (``{}``: a detail given to :meth:`SettleReason.say`).
_SETTLE_WORDS: dict[SettleReason, str] = {
    SettleReason.WRONG_TILE_COUNT: "{} tiles, a position holds 4",
    SettleReason.UNKNOWN_TILE: "{} tile(s) unknown ({})",
    SettleReason.FACE_DOWN: "{} tile(s) face down",
    SettleReason.SEAT_UNCLEAR: "{}",
    SettleReason.DUPLICATE_FACE: "duplicate face {}",
    SettleReason.UNREAD_DECIDES: "{} unread tile decides this seat",
    SettleReason.NOT_STABLE: "not stable",
    SettleReason.READING_PENDING: "its still reading had not landed",
    SettleReason.NOT_CONFIRMED: "not confirmed before the table was dealt again",
    SettleReason.BANKER_EMPTY: "banker position empty",
    SettleReason.BANKER_NOT_SETTLED: "banker {} not settled ({})",
    SettleReason.BANKER_UNREAD: "banker {} not settled ({})",
    SettleReason.NO_OTHER_SETTLED: "no other position settled",
    SettleReason.SETTLEMENT_FAILED: "settlement failed: {}",
    SettleReason.NO_PLACEMENT: "{}",
    SettleReason.TABLE_CLEARED: "table cleared before the round settled",
    SettleReason.DEALT_AGAIN: "the table was dealt again before the round settled",
    SettleReason.SOURCE_ENDED: "source ended before the round settled",
    SettleReason.MANUAL_UNSETTLED: "still not settled after the manual entry",
    SettleReason.NOT_SETTLED: "not settled",
}
_SETTLE_ENDINGS = frozenset({SettleReason.TABLE_CLEARED, SettleReason.DEALT_AGAIN,
                             SettleReason.SOURCE_ENDED, SettleReason.MANUAL_UNSETTLED})


#: The order in which a position's problems name its code (a problem's kind is its code's
#: string): a wrong tile count, then a tile face down, an unread tile, an unclear grouping.
PROBLEM_ORDER = (SettleReason.WRONG_TILE_COUNT, SettleReason.FACE_DOWN,
                 SettleReason.UNKNOWN_TILE, SettleReason.SEAT_UNCLEAR)


def problem_code(kinds: Iterable[str]) -> SettleReason | None:
    """The code of a position's problems (``PositionState.problems`` kinds: ``"unknown_tile"``,
    ``"wrong_tile_count"``, ``"face_down"``, ``"seat_unclear"``): the first of
    :data:`PROBLEM_ORDER` among them (the one the dealer is told about; another kind counts as
    ``SEAT_UNCLEAR``); None for no problem."""
    kinds = {str(k) for k in kinds}
    if not kinds:
        return None
    return next((c for c in PROBLEM_ORDER if c in kinds), SettleReason.SEAT_UNCLEAR)


def banker_code(why: SettleReason | None, kinds: Iterable[str] = ()) -> SettleReason:
    """The code of a position waiting on a bank that is not settled: ``BANKER_UNREAD`` when
    the banker's own reason ``why`` is an unread tile, or one of its problems (``kinds``) is
    (whatever came first), else ``BANKER_NOT_SETTLED``."""
    unread = why in (SettleReason.UNKNOWN_TILE, SettleReason.UNREAD_DECIDES) or any(
        str(k) == SettleReason.UNKNOWN_TILE for k in kinds)
    return SettleReason.BANKER_UNREAD if unread else SettleReason.BANKER_NOT_SETTLED

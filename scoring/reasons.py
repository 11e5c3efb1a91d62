"""Why the scoring engine settled a seat other than by a plain comparison, or not at all, as
codes (docs/round-event.md, "Reason codes").

A :class:`scoring.settle.SeatResult` carries its ``reason`` text and, beside it, the
``reason_code`` it was made from: :meth:`SeatReason.say` is the one place the words are made,
so the text and the code always agree and no reader has to parse the words. The round
tracker's own reasons (a tile unknown, the table cleared, ...) are
:class:`vision.schema.SettleReason`, which lists these codes too (the same strings); this
package never imports ``vision``.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["SeatReason"]


class SeatReason(StrEnum):
    """The seat reasons the scoring engine gives (:func:`scoring.settle.settle_round`); each
    member is its JSON string (``SeatReason.CO_BANK == "co_bank"``)."""

    #: the tiles were given unset and set by the house way (docs/house-way.md)
    SET_BY_HOUSE_WAY = "set_by_house_way"
    #: the low hand ranked above the high hand; the profile forfeits (docs/rules.md, mis-set)
    MIS_SET_FORFEITED = "mis_set_forfeited"
    #: the low hand ranked above the high hand; re-set by the house way
    MIS_SET_RESET = "mis_set_reset"
    #: the dealer's wager against a banking player pays no commission
    HOUSE_WAGER = "house_wager"
    #: co-bank: the house is half of the bank, the dealer's seat is not settled
    CO_BANK = "co_bank"

    def say(self, *detail: object) -> str:
        """The reason's words (byte for byte what the engine has always written).

        Args:
            detail: for ``MIS_SET_RESET`` the house way's name (written with ``repr``); the
                other codes take none.

        Raises:
            TypeError: a detail the code's words have no place for (or one missing).
        """
        words = _WORDS[self]
        if words.count("{") != len(detail):
            raise TypeError(f"{self.value} takes {words.count('{')} detail(s), "
                            f"got {len(detail)}")
        return words.format(*detail)


_WORDS = {
    SeatReason.SET_BY_HOUSE_WAY: "set by the house way (given unset)",
    SeatReason.MIS_SET_FORFEITED: "mis-set (low hand above high hand): forfeited",
    SeatReason.MIS_SET_RESET: "mis-set (low hand above high hand): re-set by the house way {!r}",
    SeatReason.HOUSE_WAGER: "house wager: no commission",
    SeatReason.CO_BANK: "co-bank: the house is half of the bank",
}

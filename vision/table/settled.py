"""What the round tracker hands on (:class:`vision.table.rounds.RoundTracker`): the frame a
round was seen on (:class:`FrameHeader`) and the round, settled or not (:class:`SettledRound`,
shaped into the round event by :mod:`vision.table.events`). Plain data; both are re-exported
by :mod:`vision.table.rounds`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only
    from scoring.settle import RoundResult
    from vision.schema import Alert
    from vision.table.reasons import SettleReason
    # (PositionState: vision.table.rounds, which imports this module)

__all__ = ["FrameHeader", "SettledRound"]


@dataclass(frozen=True)
class FrameHeader:
    """Which frame a round was seen on, kept with the round (:class:`SettledRound`).

    Attributes:
        index: frame index in its source; timestamp: seconds from the source's start.
        source: the source as shown (credentials masked); path: the file the frame came from
            (None for cameras and streams).
        tiles: that frame's tiles as :class:`vision.schema.TileRecord` s (None: not kept).
    """

    index: int = 0
    timestamp: float = 0.0
    source: str = ""
    path: str | None = None
    tiles: tuple | None = None


@dataclass
class SettledRound:
    """A round the tracker settled (shaped into an event by :mod:`vision.table.events`).

    Attributes:
        positions: every position seen in the settling frame
            (:class:`vision.table.rounds.PositionState`).
        final: positions settled (final and free of duplicate faces).
        result: the :class:`scoring.settle.RoundResult`, or None when nothing could be settled.
        not_settled: position -> reason, for every position seen but not settled.
        codes: position -> the code of its ``not_settled`` reason (:mod:`vision.table.reasons`).
        alerts: the :class:`vision.schema.Alert` s from the table and from settlement.
        banker: the banking position; rules, commission, house_way as used.
        frame: the :class:`FrameHeader` the caller passed to ``RoundTracker.update`` for
            the round's frame (for an unsettled round: the last frame that showed tiles).
        reason: why nothing was settled (None when ``result`` is not None).
        reason_code: the :class:`vision.table.reasons.SettleReason` of ``reason`` (None with
            it): for a round that ended unsettled, the ending (``TABLE_CLEARED``,
            ``DEALT_AGAIN``, ``SOURCE_ENDED``, ``MANUAL_UNSETTLED``), whose words open
            ``reason``.
        cause_code: for such a round, the code of the settling frame's own reason (the words
            after the ending's, e.g. ``BANKER_UNREAD`` or ``NO_PLACEMENT``); else None.
        unread: position -> note, for the positions settled with one tile unread (every face
            it could be gives the same result, :mod:`vision.table.open_tile`); ``result`` holds a
            stand-in setting for them, which is not theirs and is never reported.
    """

    positions: dict[str, PositionState]
    final: list[str]
    result: RoundResult | None
    not_settled: dict[str, str]
    alerts: list[Alert]
    banker: str
    rules: str
    commission: str | None
    house_way: str
    bets: dict[str, str]
    frame: FrameHeader
    reason: str | None = None
    unread: dict[str, str] = field(default_factory=dict)
    codes: dict[str, SettleReason] = field(default_factory=dict)
    reason_code: SettleReason | None = None
    cause_code: SettleReason | None = None

"""Round events: a tracked round shaped into the :class:`vision.schema.RoundEvent`
(docs/round-event.md), and the ``events.jsonl`` writer (one object per line, flushed per round).

Money values are exact decimal strings (from :mod:`scoring.settle`); ``net`` is from the
position's own viewpoint. ``time`` is the UTC wall-clock time at which the settling frame was
processed (ISO-8601 with milliseconds and ``Z``); ``frame_index`` and ``source`` say which frame.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Mapping

from scoring.rules import get_profile
from scoring.setting import house_way_setting, is_house_way
from scoring.settle import POSITIONS

from vision.recognition.decode import TileRead
from vision.schema import (Alert, BankTotals, PositionOutcome, RoundEvent, SettleReason,
                           TileRecord)
from vision.sources import redact_url, source_id as _source_id
from vision.table.rounds import SettledRound

__all__ = ["build_round", "round_event", "tile_dict", "EventWriter", "utc_now_iso"]


def utc_now_iso() -> str:
    """Now as ISO-8601 UTC with milliseconds, e.g. ``"2026-11-29T12:00:00.000Z"``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def tile_dict(read: TileRead, position: str | None = None) -> dict:
    """A tile as in the event's ``tiles`` list (:class:`vision.schema.TileRecord` JSON)."""
    return TileRecord.from_read(read, position).to_dict()


def _outcome(rnd: SettledRound, pos: str) -> PositionOutcome:
    """The :class:`PositionOutcome` of one position of a tracked round."""
    res = rnd.result
    rules = rnd.rules
    seats = res.seats if res is not None else {}
    st = rnd.positions[pos]
    tiles = dict(tiles=tuple(r.face for r in st.tiles), states=tuple(r.state for r in st.tiles),
                 confidence=tuple(round(float(r.confidence), 3) for r in st.tiles))
    setting = None
    if pos in rnd.unread:
        # settled with one tile unread: its hands are not known, none is reported; a fourth
        # tile no read outline gives, where no outline is unknown either, is listed as
        # unread (null, unknown, 0.0)
        if st.missing and "unknown" not in tiles["states"]:
            tiles = {k: v + (e,) for (k, v), e in zip(tiles.items(), (None, "unknown", 0.0))}
    elif res is not None and pos == rnd.banker and pos in rnd.final:
        setting = res.banker_setting
    elif pos in seats and seats[pos].result != "not_settled":
        setting = seats[pos].setting
    elif st.setting is not None:
        setting = st.setting
    hands: dict[str, Any] = {}
    if setting is not None:
        c = setting.canonical()
        hw = house_way_setting(list(setting.tiles), rnd.house_way, rules).canonical()
        hands = dict(high=tuple(t.face for t in c.high), low=tuple(t.face for t in c.low),
                     high_hand=setting.high_value(rules).name,
                     low_hand=setting.low_value(rules).name,
                     house_way={"high": tuple(t.face for t in hw.high),
                                "low": tuple(t.face for t in hw.low)},
                     is_house_way=bool(is_house_way(setting, rnd.house_way, rules)))
    if pos == rnd.banker:
        if res is not None:
            money = dict(result=None, mis_set=res.banker_mis_set, net=str(res.bank_net),
                         commission=str(res.bank_commission),
                         bet=None if res.banker_bet is None else str(res.banker_bet))
        else:
            money = dict(result="not_settled", bet=rnd.bets.get(pos),
                         **_why((rnd.not_settled.get(pos), rnd.codes.get(pos)),
                                (rnd.reason, rnd.reason_code)))
        return PositionOutcome(**tiles, **hands, role="banker", **money)
    if pos in seats:
        s = seats[pos]
        return PositionOutcome(**tiles, **hands, result=s.result, bet=str(s.bet),
                               net=str(s.net), commission=str(s.commission),
                               mis_set=s.mis_set, reason=s.reason, reason_code=s.reason_code)
    return PositionOutcome(**tiles, **hands, result="not_settled", bet=rnd.bets.get(pos),
                           **_why((rnd.not_settled.get(pos), rnd.codes.get(pos))))


def _why(*reasons: tuple[str | None, SettleReason | None]) -> dict:
    """``{"reason", "reason_code"}`` of the first ``(text, code)`` with a text, else "not
    settled" (:attr:`vision.schema.SettleReason.NOT_SETTLED`)."""
    for text, code in reasons:
        if text:
            return {"reason": text, "reason_code": code}
    return {"reason": SettleReason.NOT_SETTLED.say(), "reason_code": SettleReason.NOT_SETTLED}


def build_round(rnd: SettledRound, round_id: str, table_id: str = "table-1",
                source: str = "", frame_index: int = 0, time: str | None = None,
                model_version: str = "unknown", tiles: list | None = None,
                source_file: str | None = None, source_id: str | None = None) -> RoundEvent:
    """Shape a tracked round (:class:`vision.table.rounds.SettledRound`, settled or not) into the
    :class:`vision.schema.RoundEvent` (docs/round-event.md).

    Args:
        rnd: the round from :class:`vision.table.rounds.RoundTracker`.
        round_id: e.g. ``"r000001"``.
        table_id, source, frame_index, time, model_version, source_file: header fields
            (``time`` defaults to now, UTC).
        tiles: the frame's tiles as :class:`vision.schema.TileRecord` s or their dicts
            (default: the positions' tiles).
        source_id: the stable source id (default: :func:`vision.sources.source_id` of
            ``source`` / ``source_file``, which also names the source by its redacted URL).

    Returns:
        the event; positions in table order (dealer first).
    """
    res = rnd.result
    positions = {pos: _outcome(rnd, pos) for pos in sorted(rnd.positions, key=POSITIONS.index)}
    if tiles is None:
        records = tuple(TileRecord.from_read(r, pos)
                        for pos, st in rnd.positions.items() for r in st.tiles)
    else:
        records = tuple(t if isinstance(t, TileRecord) else TileRecord.from_dict(t)
                        for t in tiles)
    commission = (str(res.commission) if res is not None
                  else (rnd.commission if rnd.commission is not None
                        else str(get_profile(rnd.rules).commission)))
    bank = None
    if res is not None:
        bank = BankTotals(str(res.bank_gross), str(res.bank_commission), str(res.bank_net),
                          str(res.house_net), str(res.commission_total))
    alerts: tuple[Alert, ...] = tuple(rnd.alerts)  # typed by the tracker
    return RoundEvent(
        round_id=round_id, table_id=table_id, time=time or utc_now_iso(),
        source=redact_url(source),
        source_file=redact_url(source_file) if source_file is not None else None,
        frame_index=int(frame_index), rules=rnd.rules,
        commission=commission, house_way=rnd.house_way, model_version=model_version,
        banker_position=rnd.banker, settled=res is not None,
        reason=None if res is not None else (rnd.reason or SettleReason.NOT_SETTLED.say()),
        reason_code=None if res is not None else (rnd.reason_code if rnd.reason
                                                  else SettleReason.NOT_SETTLED),
        positions=positions, alerts=alerts,
        tiles=records, bank=bank,
        source_id=source_id or _source_id(source, source_file))


def round_event(rnd: SettledRound, round_id: str, **header) -> dict:
    """:func:`build_round` in its JSON form (``RoundEvent.to_dict()``)."""
    return build_round(rnd, round_id, **header).to_dict()


class EventWriter:
    """Appends round events to a JSON-lines file (one compact object per line, flushed).

    Args:
        path: the ``events.jsonl`` path (parent folders are created); None writes nowhere.
        stream: also write each line here (e.g. ``sys.stdout`` for ``--json``).
        fsync: also ``os.fsync`` the file after every line, so a written round survives a
            crash of the machine, not only of the process (costs one disk flush per round).
    """

    def __init__(self, path: str | Path | None = None, stream: IO[str] | None = None,
                 fsync: bool = False) -> None:
        self.path = Path(path) if path is not None else None
        self.stream = stream
        self.fsync = bool(fsync)
        self._fh = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # never through a symbolic link (issue 42: a service writing where a link points)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                         | getattr(os, "O_NOFOLLOW", 0), 0o644)
            self._fh = os.fdopen(fd, "w", encoding="utf-8")
        self.count = 0

    def write(self, event: RoundEvent | Mapping) -> None:
        """Write one event (a :class:`vision.schema.RoundEvent` or its JSON dict) as one
        line."""
        if isinstance(event, RoundEvent):
            event = event.to_dict()
        line = json.dumps(event, separators=(",", ":"), ensure_ascii=True)
        if self._fh is not None:
            self._fh.write(line + "\n")
            self._fh.flush()
            if self.fsync:
                os.fsync(self._fh.fileno())
        if self.stream is not None:
            self.stream.write(line + "\n")
            self.stream.flush()
        self.count += 1

    def close(self) -> None:
        """Close the file."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> "EventWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

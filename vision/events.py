"""Round events: a settled round as the JSON object of .agents/EVENT_SCHEMA.md, and the
``events.jsonl`` writer (one object per line, flushed per round).

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

from scoring.setting import house_way_setting, is_house_way
from scoring.settle import POSITIONS

from .decode import TileRead
from .table import SettledRound

__all__ = ["round_event", "tile_dict", "EventWriter", "utc_now_iso"]


def utc_now_iso() -> str:
    """Now as ISO-8601 UTC with milliseconds, e.g. ``"2026-11-29T12:00:00.000Z"``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def tile_dict(read: TileRead, position: str | None = None) -> dict:
    """A tile as in the event's ``tiles`` list (face, state, confidence, xyxy, polygon,
    position)."""
    d = read.to_dict()
    d["position"] = position
    return d


def _hand_names(setting, rules) -> tuple[str, str]:
    return setting.high_value(rules).name, setting.low_value(rules).name


def round_event(rnd: SettledRound, round_id: str, table_id: str = "table-1",
                source: str = "", frame_index: int = 0, time: str | None = None,
                model_version: str = "unknown", tiles: list[dict] | None = None) -> dict:
    """Shape a :class:`vision.table.SettledRound` into the round event dict.

    Args:
        rnd: the settled round.
        round_id: e.g. ``"r000001"``.
        table_id, source, frame_index, time, model_version: event header fields (``time``
            defaults to now, UTC).
        tiles: the frame's tiles as :func:`tile_dict` s (default: the positions' tiles).

    Returns:
        JSON-ready dict (see .agents/EVENT_SCHEMA.md); positions in table order (dealer first).
    """
    res = rnd.result
    rules = rnd.rules
    seats = res.seats if res is not None else {}
    positions: dict[str, dict] = {}
    for pos in sorted(rnd.positions, key=POSITIONS.index):
        st = rnd.positions[pos]
        entry: dict[str, Any] = {
            "tiles": [r.face for r in st.tiles],
            "states": [r.state for r in st.tiles],
            "confidence": [round(float(r.confidence), 3) for r in st.tiles],
        }
        setting = None
        if res is not None and pos == rnd.banker and pos in rnd.final:
            setting = res.banker_setting
        elif pos in seats and seats[pos].result != "not_settled":
            setting = seats[pos].setting
        elif st.setting is not None:
            setting = st.setting
        if setting is not None:
            c = setting.canonical()
            entry["high"] = [t.face for t in c.high]
            entry["low"] = [t.face for t in c.low]
            entry["high_hand"], entry["low_hand"] = _hand_names(setting, rules)
            hw = house_way_setting(list(setting.tiles), rnd.house_way, rules).canonical()
            entry["house_way"] = {"high": [t.face for t in hw.high], "low": [t.face for t in hw.low]}
            entry["is_house_way"] = bool(is_house_way(setting, rnd.house_way, rules))
        else:
            entry.update({"high": None, "low": None, "high_hand": None, "low_hand": None})
        if pos == rnd.banker:
            entry["role"] = "banker"
            if res is not None:
                entry["mis_set"] = res.banker_mis_set
                entry["net"] = str(res.bank_net)
                entry["commission"] = str(res.bank_commission)
                if res.banker_bet is not None:
                    entry["bet"] = str(res.banker_bet)
                entry["reason"] = None
            else:
                entry["result"] = "not_settled"
                entry["mis_set"] = False
                entry["reason"] = rnd.not_settled.get(pos)
        elif pos in seats:
            s = seats[pos]
            entry.update({"result": s.result, "bet": str(s.bet), "net": str(s.net),
                          "commission": str(s.commission), "mis_set": s.mis_set,
                          "reason": s.reason})
        else:
            entry.update({"result": "not_settled", "bet": rnd.bets.get(pos), "net": None,
                          "commission": None, "mis_set": False,
                          "reason": rnd.not_settled.get(pos, "not settled")})
        positions[pos] = entry
    if tiles is None:
        tiles = [tile_dict(r, pos) for pos, st in rnd.positions.items() for r in st.tiles]
    commission = (str(res.commission) if res is not None
                  else (rnd.commission if rnd.commission is not None else None))
    if commission is None:
        from scoring.rules import get_profile

        commission = str(get_profile(rules).commission)
    ev = {
        "round_id": round_id,
        "table_id": table_id,
        "time": time or utc_now_iso(),
        "source": str(source),
        "frame_index": int(frame_index),
        "rules": rules,
        "commission": commission,
        "house_way": rnd.house_way,
        "model_version": model_version,
        "banker_position": rnd.banker,
        "positions": positions,
        "alerts": list(rnd.alerts),
        "tiles": tiles,
    }
    if res is not None:
        ev["bank"] = {"gross": str(res.bank_gross), "commission": str(res.bank_commission),
                      "net": str(res.bank_net), "house_net": str(res.house_net),
                      "commission_total": str(res.commission_total)}
    return ev


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
            self._fh = open(self.path, "w", encoding="utf-8")
        self.count = 0

    def write(self, event: Mapping) -> None:
        """Write one event as one line."""
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

"""The round event: the one contract between the stages and everything downstream.

A :class:`RoundEvent` is produced once per round by :func:`vision.table.events.build_round` and
consumed, unchanged in shape, by the ``events.jsonl`` writer, the audit store
(:mod:`vision.audit`), the integrity alerts (:mod:`vision.table.alerts`), the overlay
(:mod:`vision.io.overlay`, through :mod:`vision.io.views`) and the dealer display
(:mod:`vision.web`). Its JSON form (:meth:`RoundEvent.to_dict`) is specified in
``docs/round-event.md`` and checked by the JSON Schema ``docs/round-event.schema.json``;
:meth:`RoundEvent.from_dict` reads it back (the audit store's payloads, an ``events.jsonl``
line).

Every round is accounted for: a round that could not be settled (banker unreadable, tiles
covered until the table was cleared, a duplicate face at the banker) is a :class:`RoundEvent`
with ``settled`` False, a top-level ``reason`` and each position's own ``reason``.

Money values are exact decimal strings (:mod:`scoring.settle`); ``net`` is from the position's
own viewpoint. Pixel values are image pixels of the frame named by ``source`` /
``source_file`` / ``frame_index``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Mapping

from scoring.errors import InputError

__all__ = ["RoundEvent", "round_number", "PositionOutcome", "TileRecord", "Alert", "AlertCode",
           "UnreadReason", "BankTotals", "SCHEMA_FILE", "TILE_STATES", "RESULTS"]

#: The JSON Schema of :meth:`RoundEvent.to_dict` (in the repository's docs/; not installed
#: with a wheel, so it is read by tests and tools only).
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "docs" / "round-event.schema.json"
#: A tile's state as read from the picture.
TILE_STATES = ("face_up", "face_down", "unknown")
#: A position's result against the bank (``None`` for the bank itself).
RESULTS = ("win", "lose", "push", "not_settled")


class AlertCode(StrEnum):
    """The kinds of a round's alerts (docs/round-event.md, Alert); each is its JSON string
    (``AlertCode.MIS_SET == "mis_set"``), so the event's JSON form is unchanged."""

    UNKNOWN_TILE = "unknown_tile"
    WRONG_TILE_COUNT = "wrong_tile_count"
    DUPLICATE_FACE = "duplicate_face"
    MIS_SET = "mis_set"
    HOUSE_WAY_DEVIATION = "house_way_deviation"
    SETTLE_ERROR = "settle_error"
    TILES_OUTSIDE_POSITIONS = "tiles_outside_positions"
    UNREAD_TILE = "unread_tile"


_ALERT_CODES = {c.value: c for c in AlertCode}


class UnreadReason(StrEnum):
    """Why a tile read names no face, where a later stage acts on the reason (the read's
    ``reason_code``, :class:`vision.recognition.decode.TileRead`); the reason text is
    :meth:`say` of the code, so no stage reads the wording."""

    #: the tile model's input sizes read different faces (vision.recognition.scales)
    SIZES_DISAGREE = "input sizes disagree"

    def say(self, detail: str | None = None) -> str:
        """The reason text: the code's words, then ``": detail"`` when given."""
        return f"{self.value}: {detail}" if detail else self.value


def _need(d: Mapping, key: str, where: str) -> Any:
    if not isinstance(d, Mapping) or key not in d:
        raise InputError(f"{where}: missing {key!r}")
    return d[key]


def _text(v) -> str | None:
    return None if v is None else str(v)


@dataclass(frozen=True)
class TileRecord:
    """One tile of the frame a round was taken from.

    Attributes:
        face: ``"1-5"`` (low half first) or None (face down or unread).
        state: one of :data:`TILE_STATES`.
        confidence: the read's confidence, 0..1 (rounded to 0.001).
        xyxy: axis-aligned box ``(x1, y1, x2, y2)``, image px (rounded to 0.1).
        polygon: four ``(x, y)`` corners of the outline, image px (rounded to 0.1).
        position: the position holding it (``"dealer"``, ``"1".."7"``) or None.
    """

    face: str | None
    state: str
    confidence: float
    xyxy: tuple[float, float, float, float]
    polygon: tuple[tuple[float, float], ...]
    position: str | None = None

    def to_dict(self) -> dict:
        """JSON form: ``{"face", "state", "confidence", "xyxy", "polygon", "position"}``."""
        return {"face": self.face, "state": self.state, "confidence": self.confidence,
                "xyxy": list(self.xyxy), "polygon": [list(p) for p in self.polygon],
                "position": self.position}

    @classmethod
    def from_dict(cls, d: Mapping, where: str = "tile") -> "TileRecord":
        """Inverse of :meth:`to_dict`. Raises InputError naming a missing key."""
        return cls(_need(d, "face", where), str(_need(d, "state", where)),
                   float(_need(d, "confidence", where)),
                   tuple(float(v) for v in _need(d, "xyxy", where)),
                   tuple((float(x), float(y)) for x, y in _need(d, "polygon", where)),
                   d.get("position"))

    @classmethod
    def from_read(cls, read, position: str | None = None) -> "TileRecord":
        """From a :class:`vision.recognition.decode.TileRead` (its ``to_dict`` rounding)."""
        d = read.to_dict()
        return cls(d["face"], d["state"], d["confidence"], tuple(d["xyxy"]),
                   tuple(tuple(p) for p in d["polygon"]), position)


@dataclass(frozen=True)
class Alert:
    """Something a surveillance team should look at (``docs/round-event.md``, alerts).

    Attributes:
        kind: an :class:`AlertCode`; a kind this version does not know (an event written
            elsewhere) stays its text.
        position: the position concerned, or None.
        detail: one readable line.
    """

    kind: AlertCode | str
    position: str | None
    detail: str

    def __post_init__(self) -> None:
        kind = str(self.kind)
        if kind in _ALERT_CODES:
            object.__setattr__(self, "kind", _ALERT_CODES[kind])

    def to_dict(self) -> dict:
        """JSON form ``{"kind", "position", "detail"}`` (``kind`` as its plain string)."""
        return {"kind": str(self.kind), "position": self.position, "detail": self.detail}

    @classmethod
    def from_dict(cls, d: Mapping, where: str = "alert") -> "Alert":
        """Inverse of :meth:`to_dict`."""
        return cls(str(_need(d, "kind", where)), _text(d.get("position")),
                   str(d.get("detail", "")))


@dataclass(frozen=True)
class PositionOutcome:
    """What one position showed and how it was settled.

    Attributes:
        tiles, states, confidence: per tile (high hand first when set): face or None, state,
            confidence 0..1.
        high, low: the hands as two faces each (None when the position was not set).
        high_hand, low_hand: their names (``scoring.hands.HandValue.name``) or None.
        house_way: ``{"high": [...], "low": [...]}``: the house way's setting of these tiles.
        is_house_way: whether the position was set as the house way sets it.
        role: ``"banker"`` or ``"player"``.
        result: one of :data:`RESULTS`, or None for the settled bank (its outcome is ``net``).
        bet, net, commission: exact decimal strings, or None.
        mis_set: the low hand ranked above the high hand as laid.
        reason: why the position was not settled (None when it was).
    """

    tiles: tuple[str | None, ...]
    states: tuple[str, ...]
    confidence: tuple[float, ...]
    high: tuple[str, ...] | None = None
    low: tuple[str, ...] | None = None
    high_hand: str | None = None
    low_hand: str | None = None
    house_way: Mapping[str, tuple[str, ...]] | None = None
    is_house_way: bool | None = None
    role: str = "player"
    result: str | None = "not_settled"
    bet: str | None = None
    net: str | None = None
    commission: str | None = None
    mis_set: bool = False
    reason: str | None = None

    @property
    def settled(self) -> bool:
        """True when the position has a result (the bank: a net)."""
        return self.result in ("win", "lose", "push") or (self.role == "banker"
                                                           and self.net is not None)

    def to_dict(self) -> dict:
        """JSON form (every key always present; see ``docs/round-event.md``)."""
        hw = None if self.house_way is None else {k: list(v) for k, v in self.house_way.items()}
        return {"tiles": list(self.tiles), "states": list(self.states),
                "confidence": list(self.confidence),
                "high": None if self.high is None else list(self.high),
                "low": None if self.low is None else list(self.low),
                "high_hand": self.high_hand, "low_hand": self.low_hand,
                "house_way": hw, "is_house_way": self.is_house_way, "role": self.role,
                "result": self.result, "bet": self.bet, "net": self.net,
                "commission": self.commission, "mis_set": self.mis_set, "reason": self.reason}

    @classmethod
    def from_dict(cls, d: Mapping, where: str = "position") -> "PositionOutcome":
        """Inverse of :meth:`to_dict` (keys other than ``tiles`` may be missing)."""
        tup = (lambda v: None if v is None else tuple(v))
        hw = d.get("house_way")
        return cls(tuple(_need(d, "tiles", where)), tuple(d.get("states") or ()),
                   tuple(float(c) for c in d.get("confidence") or ()),
                   tup(d.get("high")), tup(d.get("low")), d.get("high_hand"),
                   d.get("low_hand"),
                   None if hw is None else {k: tuple(v) for k, v in hw.items()},
                   d.get("is_house_way"), str(d.get("role") or "player"), d.get("result"),
                   _text(d.get("bet")), _text(d.get("net")), _text(d.get("commission")),
                   bool(d.get("mis_set", False)), d.get("reason"))


@dataclass(frozen=True)
class BankTotals:
    """The bank's side of a settled round (exact decimal strings).

    Attributes:
        gross: the bank's result before commission; commission: what the bank paid;
        net: ``gross - commission``; house_net: the house's result (commissions included);
        commission_total: every commission of the round.
    """

    gross: str
    commission: str
    net: str
    house_net: str
    commission_total: str

    def to_dict(self) -> dict:
        """JSON form."""
        return {"gross": self.gross, "commission": self.commission, "net": self.net,
                "house_net": self.house_net, "commission_total": self.commission_total}

    @classmethod
    def from_dict(cls, d: Mapping, where: str = "bank") -> "BankTotals":
        """Inverse of :meth:`to_dict`."""
        return cls(*(str(_need(d, k, where)) for k in
                     ("gross", "commission", "net", "house_net", "commission_total")))


@dataclass(frozen=True)
class RoundEvent:
    """One round of one table, settled or not (``docs/round-event.md``).

    Attributes:
        round_id: ``"r000042"``, unique per table (continues from the audit store's last).
        table_id: the table's name.
        time: UTC ISO-8601 with milliseconds and ``Z``, when the round's frame was processed.
        source: the source spec (camera index, URL, video, folder, glob, ``demo:<seed>``).
        source_file: the file the round's frame came from (an image of a folder, the video
            file), or None for cameras and streams.
        frame_index: index of the round's frame in the source.
        rules: rule profile (``"pa"``, ``"nj"``); commission: rate, exact decimal text;
        house_way: house way name; model_version: ``"tiles-<sha8>+pips-<sha8>"``.
        banker_position: the banking position.
        settled: False when nothing could be settled (see ``reason``).
        reason: why the round did not settle (None when it did).
        positions: position -> :class:`PositionOutcome`, table order (dealer first).
        alerts: :class:`Alert` s of the round.
        tiles: every tile of the round's frame (:class:`TileRecord`).
        bank: :class:`BankTotals` when the round settled, else None.
        source_id: a stable id of where the round's frame came from (``file-<16 hex>`` of a
            file's content: its size and first and last MiB; ``live-<16 hex>`` of a camera's redacted
            URL; :func:`vision.sources.source_id`), or None in events of older versions. The
            audit store's exactly-once key uses it instead of the typed path.
    """

    round_id: str
    table_id: str
    time: str
    source: str
    source_file: str | None
    frame_index: int
    rules: str
    commission: str
    house_way: str
    model_version: str
    banker_position: str
    settled: bool
    reason: str | None
    positions: Mapping[str, PositionOutcome]
    alerts: tuple[Alert, ...] = ()
    tiles: tuple[TileRecord, ...] = ()
    bank: BankTotals | None = None
    source_id: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The JSON form (``docs/round-event.schema.json``): a new dict of plain values."""
        d = {"round_id": self.round_id, "table_id": self.table_id, "time": self.time,
             "source": self.source, "source_file": self.source_file,
             **({"source_id": self.source_id} if self.source_id is not None else {}),
             "frame_index": self.frame_index, "rules": self.rules,
             "commission": self.commission, "house_way": self.house_way,
             "model_version": self.model_version, "banker_position": self.banker_position,
             "settled": self.settled, "reason": self.reason,
             "positions": {p: o.to_dict() for p, o in self.positions.items()},
             "alerts": [a.to_dict() for a in self.alerts],
             "tiles": [t.to_dict() for t in self.tiles]}
        if self.bank is not None:
            d["bank"] = self.bank.to_dict()
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: Mapping, where: str = "round event") -> "RoundEvent":
        """Read the JSON form back (keys this version does not know are kept in ``extra``).

        Raises:
            InputError: a missing required key (named with ``where``).
        """
        known = {"round_id", "table_id", "time", "source", "source_file", "source_id",
                 "frame_index",
                 "rules", "commission", "house_way", "model_version", "banker_position",
                 "settled", "reason", "positions", "alerts", "tiles", "bank"}
        positions = _need(d, "positions", where)
        bank = d.get("bank")
        return cls(str(_need(d, "round_id", where)), str(d.get("table_id", "table-1")),
                   str(_need(d, "time", where)), str(d.get("source", "")),
                   d.get("source_file"), int(d.get("frame_index", 0)),
                   str(d.get("rules", "pa")), str(d.get("commission", "")),
                   str(d.get("house_way", "reference")), str(d.get("model_version", "unknown")),
                   str(d.get("banker_position", "dealer")),
                   bool(d.get("settled", bank is not None)), d.get("reason"),
                   {str(p): PositionOutcome.from_dict(o, f"{where}: position {p}")
                    for p, o in positions.items()},
                   tuple(Alert.from_dict(a, f"{where}: alert") for a in d.get("alerts") or ()),
                   tuple(TileRecord.from_dict(t, f"{where}: tile") for t in d.get("tiles") or ()),
                   None if bank is None else BankTotals.from_dict(bank, f"{where}: bank"),
                   d.get("source_id"),
                   {k: v for k, v in d.items() if k not in known})

    def with_alerts(self, alerts) -> "RoundEvent":
        """A copy with ``alerts`` (dicts or :class:`Alert` s) as its alerts."""
        from dataclasses import replace

        return replace(self, alerts=tuple(a if isinstance(a, Alert) else Alert.from_dict(a)
                                          for a in alerts))


def round_number(round_id) -> int:
    """The number of a pipeline round id ``"r000042"`` -> 42 (0 for anything else)."""
    if isinstance(round_id, str) and len(round_id) > 1 and round_id[0] == "r" \
            and round_id[1:].isdigit():
        return int(round_id[1:])
    return 0

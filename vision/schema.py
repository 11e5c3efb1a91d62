"""The round event: the one contract between the stages and everything downstream.

A :class:`RoundEvent` is produced once per round by :func:`vision.table.events.build_round` and
consumed, unchanged in shape, by the ``events.jsonl`` writer, the audit store
(:mod:`vision.audit`), the integrity alerts (:mod:`vision.table.alerts`), the overlay
(:mod:`vision.io.overlay`, through :mod:`vision.io.views`) and the dealer display
(:mod:`vision.web`). Its JSON form (:meth:`RoundEvent.to_dict`) is specified in
``docs/round-event.md``; :meth:`RoundEvent.from_dict` reads it back (the audit store's
payloads, an ``events.jsonl`` line).

The event and its parts are pydantic models, and the JSON Schema
``docs/round-event.schema.json`` is generated from them (:func:`round_event_schema`;
``python -m vision.schema --write-schema`` rewrites the file, a test checks it is current).
The constraints of the schema are the models' own: literals (tile states, results, roles,
position ids), patterns (faces, exact decimals, time, source id), lengths, ``extra="forbid"``
where the JSON form admits no other key. The few rules across fields that pydantic cannot
express (a settled round has a bank and no reason, a settled seat has a net, ...) are JSON
Schema given in the models' ``json_schema_extra``; they are checked by the schema, not when an
event is constructed.

Every round is accounted for: a round that could not be settled (banker unreadable, tiles
covered until the table was cleared, a duplicate face at the banker) is a :class:`RoundEvent`
with ``settled`` False, a top-level ``reason`` and each position's own ``reason``.

Money values are exact decimal strings (:mod:`scoring.settle`); ``net`` is from the position's
own viewpoint. Pixel values are image pixels of the frame named by ``source`` /
``source_file`` / ``frame_index``.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, ValidationError,
                      field_validator)
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypeAliasType, TypedDict

from scoring.errors import InputError
from scoring.settle import POSITIONS
from vision.table.reasons import SettleReason  # re-exported: the event's reason codes

__all__ = ["RoundEvent", "round_number", "PositionOutcome", "TileRecord", "Alert", "AlertCode",
           "UnreadReason", "BankTotals", "HouseWay", "RoundExtensions", "ManualBlock",
           "ManualEntry", "SCHEMA_FILE", "SCHEMA_ID", "TILE_STATES", "RESULTS",
           "round_event_schema", "schema_text", "SettleReason"]

#: The JSON Schema of :meth:`RoundEvent.to_dict` (in the repository's docs/; not installed
#: with a wheel, so it is read by tests and tools only). Generated: :func:`schema_text`.
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "docs" / "round-event.schema.json"
#: The schema's ``$id``.
SCHEMA_ID = "https://github.com/paigow-vision/paigow-vision/docs/round-event.schema.json"
#: A tile's state as read from the picture.
TILE_STATES = ("face_up", "face_down", "unknown")
#: A position's result against the bank (``None`` for the bank itself).
RESULTS = ("win", "lose", "push", "not_settled")

_DECIMAL = r"^-?[0-9]+(\.[0-9]+)?$"
_FACE = r"^[1-6]-[1-6]$"
_TIME = (r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
         r"(Z|[+-][0-9]{2}:[0-9]{2})$")
_SOURCE_ID = r"^(file|live)-[0-9a-f]{16}$"

# Named types: each is one entry of the schema's "$defs" (its name there).
#: An exact decimal string (money, commission rates): ``"-1"``, ``"0.95"``.
DecimalText = TypeAliasType("decimal", Annotated[str, Field(pattern=_DECIMAL)])
#: A position of the table: ``"dealer"``, ``"1"`` .. ``"7"`` (:data:`scoring.settle.POSITIONS`).
PositionId = TypeAliasType("position_id", Literal[POSITIONS])  # type: ignore[valid-type]
#: A tile face, low half first: ``"1-5"``.
Face = TypeAliasType("face", Annotated[str, Field(pattern=_FACE)])
#: A hand: two faces.
Hand = TypeAliasType("hand", Annotated[tuple[Face, ...], Field(min_length=2, max_length=2)])
#: A tile's state (:data:`TILE_STATES`).
State = TypeAliasType("state", Literal[TILE_STATES])  # type: ignore[valid-type]
_Confidence = Annotated[float, Field(ge=0, le=1)]
_Point = Annotated[tuple[float, ...], Field(min_length=2, max_length=2)]
_Name = Annotated[str, Field(min_length=1)]


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
    """Why a tile read names no face: one member per kind of abstention that recognition
    makes (:mod:`vision.recognition`), carried on the read as its ``reason_code``
    (:class:`vision.recognition.decode.TileRead`, every ``"unknown"`` read has one). Consumers
    switch on the code; the reason TEXT a person reads (events, audit, ``paigow identify``) is
    :meth:`say` of the code and is byte-for-byte the text the stages wrote before the codes.

    Design: the member's value is the fixed words that name the kind (the text's leading words
    where the text has fixed leading words). The text is made one of two ways: a member
    without a template says its value, then ``": detail"`` when a detail is given
    (``SIZES_DISAGREE.say("1-5 / 3-5") == "input sizes disagree: 1-5 / 3-5"``); a member
    whose particulars stand inside the sentence has a ``str.format`` template
    (:data:`_UNREAD_TEMPLATES`), filled from the keyword fields given to :meth:`say`
    (``ASPECT.say(aspect=1.31, face="2-4", lo=1.6, hi=3.2)``). The comment above each member
    names the stage that makes it (docs/round-event.md, "Tile reasons").
    """

    # -- the decoder (vision.recognition.decode): the two reads of the spots ----------------
    #: no spot counted on the tile
    NO_SPOTS = "no spots found"
    #: read A: no face has these spot counts (fields red, white)
    SPOT_COUNTS = "read A: no face has"
    #: read B saw the 3-3 long layout, read A other faces (field faces: "2-4/1-5")
    LONG_33_NOT_A = "read B: 3-3 long layout but read A says"
    #: five white spots in the 3-3 long layout with one lost
    LONG_33_MISSING = "read B: a 3-3 long layout missing a spot (five white spots)"
    #: two dividing lines fit, each a face of read A (field faces: "1-4 and 2-3")
    SPLIT_EITHER = "read B: both"
    #: the halves about the midline name no face (fields top, bottom, midline)
    HALVES_NO_FACE = "read B: halves"
    #: read B's face, but a half's spots are not in that count's arrangement (fields face,
    #: shape)
    HALF_SHAPE = "read B: half shape"
    #: read A and read B name different faces (detail "A 2-2 (0 red, 4 white), B 1-3")
    READS_DISAGREE = "reads disagree"
    #: a face read, but a half of 1-3 spots crowds the midline (fields face, half)
    CROWDS_MIDLINE = "spots crowd the midline"
    #: a face read, but a spot called white is as red as a red one (fields face, sep)
    COLOUR = "a spot called white looks as red"
    #: the outline's long / short side is not a tile's (fields aspect, face, lo, hi)
    ASPECT = "not tile-shaped"
    #: a face read below the minimum confidence (fields conf, min, face)
    LOW_CONFIDENCE = "confidence below"
    # -- the still reading's stages ---------------------------------------------------------
    #: the tile model's input sizes read different faces (vision.recognition.scales)
    SIZES_DISAGREE = "input sizes disagree"
    #: a close-up's picture outline and the tile model read different faces
    #: (vision.recognition.closeup; detail "picture outline 1-5, tile model 2-4")
    CLOSEUP_DISAGREE = "close-up reads disagree"
    #: a tile the tile model called a back shows spots but no face (vision.recognition.engine;
    #: detail: the decoder's own reason text, field n: the spots counted)
    BACK_SHOWS_SPOTS = "taken for a back"
    #: the second tile model outlines the place otherwise (vision.recognition.fill; fields
    #: faces, face)
    SECOND_MODEL_OTHERWISE = "the second tile model outlines this place otherwise"
    #: an outline stubbier than the picture's tiles, halves alike turned a quarter
    #: (vision.recognition.flush; fields aspect, peers, face)
    STUBBY = "outline stubbier than the picture's tiles"
    #: the outline's long side dips where two tiles' corners meet (vision.recognition.flush;
    #: field face)
    NOTCHED = "its long side dips at the middle"
    #: an outline found beside a tile that lies as laid, its spots unread
    #: (vision.recognition.flush)
    UNREAD_BESIDE = "unread spots flush beside a tile that lies as laid"
    #: unread spots lie flush beside the tile's long side (vision.recognition.flush; field face)
    SPOTS_FLUSH_BESIDE = "unread spots lie flush beside its long side"
    #: flush and level beside a tile, halves alike turned a quarter: the block may be cut
    #: across (vision.recognition.flush; fields beside: "an unread tile" or "a 2-4", face)
    FLUSH_LEVEL = "flush and level beside"
    #: either cut of a flush block reads two tiles (vision.recognition.refine; field face)
    EITHER_CUT = "either cut of a flush block of two tiles could read"
    #: two identified outlines overlap (vision.recognition.overlaps; field face)
    OVERLAPPING = "overlapping outlines"
    #: an outline lies across two other tile outlines (vision.recognition.overlaps; field face)
    ACROSS_TWO = "outline across two other tile outlines"
    #: a spot it counts is counted by another identified tile too (vision.recognition.overlaps;
    #: field face)
    SHARED_SPOTS = "a spot it counts is another tile's too"
    #: the crop classifier reads the small tile otherwise (vision.recognition.crosscheck;
    #: fields face, other, p)
    CROP_DISAGREES = "the crop classifier reads otherwise"
    #: a short outline reads a face where longer ones saw more spots (vision.recognition.zoom;
    #: fields who, face, long, seen, length)
    SHORT_OUTLINE = "where other readings saw more spots"
    # -- the live video reading (vision.recognition.engine, vision.recognition.identity) ----
    #: the still reading run in the background raised (detail "ValueError: ...")
    STILL_READING_FAILED = "the still reading failed"
    #: read once, vetoed by the reading at every input size (fields face, other)
    VETOED = "the reading at every input size says"
    #: a new tile over the frame's decoding budget, to be decoded on a later frame
    NOT_DECODED_YET = "not decoded yet"

    def say(self, detail: str | None = None, /, **fields: Any) -> str:
        """The reason text.

        Args:
            detail: the particulars; for a member without a template they follow its words
                after ``": "`` (none: the words alone); in a template, the ``{detail}`` field.
            **fields: a template's other fields (see the member's comment).

        Returns:
            str: the text, exactly as the stage wrote it before the codes.

        Raises:
            KeyError: a template's field not given.
        """
        template = _UNREAD_TEMPLATES.get(self)
        if template is None:
            return f"{self.value}: {detail}" if detail else self.value
        return template.format(detail=detail, **fields)


#: The members whose particulars stand inside the sentence: ``str.format`` templates of their
#: text (:meth:`UnreadReason.say`).
_UNREAD_TEMPLATES: dict[UnreadReason, str] = {
    UnreadReason.SPOT_COUNTS: "read A: no face has {red} red and {white} white spots",
    UnreadReason.LONG_33_NOT_A: "read B: 3-3 long layout but read A says {faces}",
    UnreadReason.SPLIT_EITHER: "read B: both {faces} fit the spots",
    UnreadReason.HALVES_NO_FACE:
        "read B: halves {top}/{bottom} with {midline} on the midline name no face",
    UnreadReason.HALF_SHAPE: "read B: {face} but {shape}",
    UnreadReason.CROWDS_MIDLINE: ("read {face}, but the {half} half's spots crowd the midline: "
                                  "the tile outline may be shifted along the tile"),
    UnreadReason.COLOUR: ("read {face}, but a spot called white looks as red as one called red "
                          "(a* separation {sep:.0f})"),
    UnreadReason.ASPECT: ("tile outline {aspect:.2f}:1 is not tile-shaped (read {face}; "
                          "{lo}-{hi} expected)"),
    UnreadReason.LOW_CONFIDENCE: "confidence {conf:.2f} below {min:.2f} (read {face})",
    UnreadReason.BACK_SHOWS_SPOTS: "{detail} (taken for a back, shows {n} spots)",
    UnreadReason.SECOND_MODEL_OTHERWISE: (
        "the second tile model outlines this place otherwise (read {faces} across it; read "
        "{face} here): two tiles touching flush may be cut across"),
    UnreadReason.STUBBY: (
        "outline stubbier than the picture's tiles (aspect {aspect:.2f} against {peers:.2f}), "
        "halves that look alike turned a quarter (read {face}): a box across two flush tiles"),
    UnreadReason.NOTCHED: ("its long side dips at the middle where two tiles' corners meet "
                           "(read {face}): a box across two flush tiles"),
    UnreadReason.SPOTS_FLUSH_BESIDE: ("unread spots lie flush beside its long side (read "
                                      "{face}): two tiles touching flush may be cut across"),
    UnreadReason.FLUSH_LEVEL: ("flush and level beside {beside}, halves that look alike turned "
                               "a quarter (read {face}): the block may be cut across"),
    UnreadReason.EITHER_CUT: ("either cut of a flush block of two tiles could read (read "
                              "{face} here): two tiles touching flush may be cut across"),
    UnreadReason.OVERLAPPING: "overlapping outlines (read {face})",
    UnreadReason.ACROSS_TWO: "outline across two other tile outlines (read {face})",
    UnreadReason.SHARED_SPOTS: ("a spot it counts is another tile's too (read {face}): an "
                                "outline reaching onto a neighbour's face"),
    UnreadReason.CROP_DISAGREES: ("the crop classifier reads {other}, not {face} (p {p:.3f}), "
                                  "the spots' face: a small tile's spots merged or missed, or "
                                  "its outline off the tile"),
    UnreadReason.SHORT_OUTLINE: ("{who} reads {face} on an outline {long:.0f} px long, where "
                                 "other readings saw {seen} spots on {length:.0f} px"),
    UnreadReason.VETOED: "read {face} once, the reading at every input size says {other}",
}


_SETTLE_CODES = {c.value: c for c in SettleReason}


def _reason_code(code: str | None) -> str | None:
    """A reason code as its :class:`SettleReason` (a code this version does not know, from
    an event written elsewhere, stays its text)."""
    return None if code is None else _SETTLE_CODES.get(str(code), str(code))


#: a position's or a round's ``reason_code``: a :class:`SettleReason` where this version knows
#: the code (:func:`_reason_code`)
_ReasonCode = Annotated[_Name, AfterValidator(_reason_code),
                        Field(description="the reason's code (SettleReason, docs/round-event.md)")]


def _need(d: Mapping, key: str, where: str) -> Any:
    if not isinstance(d, Mapping) or key not in d:
        raise InputError(f"{where}: missing {key!r}")
    return d[key]


def _text(v) -> str | None:
    return None if v is None else str(v)


class _Part(BaseModel):
    """A frozen part of the round event. Constructed like the dataclasses it replaces:
    positional arguments in field order, or keywords; an unknown keyword is a TypeError.
    A value that breaks a field's type or constraint raises ``pydantic.ValidationError`` (a
    ``ValueError``); :meth:`_build` (used by the ``from_dict`` readers) turns it into an
    InputError naming ``where`` and the field."""

    model_config = ConfigDict(frozen=True, json_schema_serialization_defaults_required=True)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = list(type(self).model_fields)
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes at most {len(names)} positional "
                            f"arguments ({len(args)} given)")
        for name, value in zip(names, args):
            if name in kwargs:
                raise TypeError(f"{type(self).__name__} got multiple values for {name!r}")
            kwargs[name] = value
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise TypeError(f"{type(self).__name__} got unexpected keyword(s) {unknown}")
        super().__init__(**kwargs)

    @classmethod
    def _build(cls, where: str, **kwargs: Any):
        try:
            return cls(**kwargs)
        except ValidationError as exc:
            e = exc.errors()[0]
            loc = "/".join(str(p) for p in e["loc"])
            raise InputError(f"{where}: {loc}: {e['msg']} (got {e.get('input')!r})") from None


class TileRecord(_Part):
    """One tile of the frame a round was taken from.

    Attributes:
        face: ``"1-5"`` (low half first) or None (face down or unread).
        state: one of :data:`TILE_STATES`.
        confidence: the read's confidence, 0..1 (rounded to 0.001).
        xyxy: axis-aligned box ``(x1, y1, x2, y2)``, image px (rounded to 0.1).
        polygon: four ``(x, y)`` corners of the outline, image px (rounded to 0.1).
        position: the position holding it (``"dealer"``, ``"1".."7"``) or None.
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "description": "One tile of the round's frame (image pixels)."})

    face: Face | None
    state: State
    confidence: _Confidence
    xyxy: Annotated[tuple[float, ...], Field(min_length=4, max_length=4)]
    polygon: Annotated[tuple[_Point, ...], Field(min_length=4, max_length=4)]
    position: PositionId | None = None

    def to_dict(self) -> dict:
        """JSON form: ``{"face", "state", "confidence", "xyxy", "polygon", "position"}``."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, d: Mapping, where: str = "tile") -> "TileRecord":
        """Inverse of :meth:`to_dict`. Raises InputError naming a missing or invalid key."""
        return cls._build(where, face=_need(d, "face", where),
                          state=str(_need(d, "state", where)),
                          confidence=float(_need(d, "confidence", where)),
                          xyxy=tuple(float(v) for v in _need(d, "xyxy", where)),
                          polygon=tuple((float(x), float(y))
                                        for x, y in _need(d, "polygon", where)),
                          position=d.get("position"))

    @classmethod
    def from_read(cls, read, position: str | None = None) -> "TileRecord":
        """From a :class:`vision.recognition.decode.TileRead` (its ``to_dict`` rounding)."""
        d = read.to_dict()
        return cls(d["face"], d["state"], d["confidence"], tuple(d["xyxy"]),
                   tuple(tuple(p) for p in d["polygon"]), position)


class Alert(_Part):
    """Something a surveillance team should look at (``docs/round-event.md``, alerts).

    Attributes:
        kind: an :class:`AlertCode`; a kind this version does not know (an event written
            elsewhere) stays its text.
        position: the position concerned, or None.
        detail: one readable line.
    """

    model_config = ConfigDict(json_schema_extra={
        "description": "Something a surveillance team should look at (docs/round-event.md)."})

    kind: _Name
    position: str | None
    detail: str | None

    @field_validator("kind")
    @classmethod
    def _code(cls, kind: str) -> str:
        return _ALERT_CODES.get(str(kind), kind)

    def to_dict(self) -> dict:
        """JSON form ``{"kind", "position", "detail"}`` (``kind`` as its plain string)."""
        return {"kind": str(self.kind), "position": self.position, "detail": self.detail}

    @classmethod
    def from_dict(cls, d: Mapping, where: str = "alert") -> "Alert":
        """Inverse of :meth:`to_dict`."""
        return cls._build(where, kind=str(_need(d, "kind", where)),
                          position=_text(d.get("position")), detail=str(d.get("detail", "")))


class HouseWay(TypedDict):
    """The house way's setting of a position's tiles: ``{"high": hand, "low": hand}``."""

    __pydantic_config__ = ConfigDict(extra="forbid", json_schema_extra={  # type: ignore[misc]
        "description": "The house way's setting of the position's tiles."})

    high: Hand
    low: Hand


def _decimal() -> dict:
    return {"type": "string", "pattern": _DECIMAL}


def _hand() -> dict:
    return {"type": "array", "items": {"type": "string", "pattern": _FACE},
            "minItems": 2, "maxItems": 2}


class PositionOutcome(_Part):
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
        reason: why the position was not settled (None when it was), or why a settled seat
            was settled other than by a plain comparison (a mis-set re-set, ...).
        reason_code: the :class:`SettleReason` of ``reason`` (None with no reason, and in
            events written before the codes: then absent from the JSON form).
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "description": "What one position showed and how it was settled (every key always "
                       "present).",
        # rules across fields (checked by the schema only)
        "allOf": [
            {"if": {"properties": {"result": {"const": "not_settled"}}},
             "then": {"properties": {"reason": {"type": "string"}}}},
            {"if": {"properties": {"result": {"enum": ["win", "lose", "push"]}}},
             "then": {"properties": {"net": _decimal()},
                      "anyOf": [
                          {"properties": {"high": _hand(), "low": _hand()}},
                          {"properties": {"high": {"type": "null"}, "low": {"type": "null"},
                                          "states": {"contains": {"const": "unknown"}}}}]}},
            {"if": {"properties": {"result": {"const": None}}},
             "then": {"properties": {"role": {"const": "banker"}, "net": _decimal()}}}]})

    tiles: tuple[Face | None, ...]
    states: tuple[State, ...]
    confidence: tuple[_Confidence, ...]
    high: Hand | None = None
    low: Hand | None = None
    high_hand: str | None = None
    low_hand: str | None = None
    house_way: HouseWay | None = None
    is_house_way: bool | None = None
    role: Literal["banker", "player"] = "player"
    result: Literal[RESULTS] | None = "not_settled"  # type: ignore[valid-type]
    bet: DecimalText | None = None
    net: DecimalText | None = None
    commission: DecimalText | None = None
    mis_set: bool = False
    reason: str | None = None
    reason_code: _ReasonCode | SkipJsonSchema[None] = None

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema, handler):
        """The generated schema, with ``reason_code`` (left out of the JSON form when None)
        not required."""
        json_schema = handler(core_schema)
        own = handler.resolve_ref_schema(json_schema)
        own["required"] = [k for k in own.get("required", []) if k != "reason_code"]
        return json_schema

    @property
    def settled(self) -> bool:
        """True when the position has a result (the bank: a net)."""
        return self.result in ("win", "lose", "push") or (self.role == "banker"
                                                           and self.net is not None)

    def to_dict(self) -> dict:
        """JSON form (every key always present but ``reason_code``, left out when None; see
        ``docs/round-event.md``)."""
        d = self.model_dump(mode="json")
        if d["reason_code"] is None:
            del d["reason_code"]
        return d

    @classmethod
    def from_dict(cls, d: Mapping, where: str = "position") -> "PositionOutcome":
        """Inverse of :meth:`to_dict` (keys other than ``tiles`` may be missing)."""
        tup = (lambda v: None if v is None else tuple(v))
        hw = d.get("house_way")
        return cls._build(
            where, tiles=tuple(_need(d, "tiles", where)), states=tuple(d.get("states") or ()),
            confidence=tuple(float(c) for c in d.get("confidence") or ()),
            high=tup(d.get("high")), low=tup(d.get("low")), high_hand=d.get("high_hand"),
            low_hand=d.get("low_hand"),
            house_way=None if hw is None else {k: tuple(v) for k, v in hw.items()},
            is_house_way=d.get("is_house_way"), role=str(d.get("role") or "player"),
            result=d.get("result"), bet=_text(d.get("bet")), net=_text(d.get("net")),
            commission=_text(d.get("commission")), mis_set=bool(d.get("mis_set", False)),
            reason=d.get("reason"), reason_code=d.get("reason_code"))


class BankTotals(_Part):
    """The bank's side of a settled round (exact decimal strings).

    Attributes:
        gross: the bank's result before commission; commission: what the bank paid;
        net: ``gross - commission``; house_net: the house's result (commissions included);
        commission_total: every commission of the round.
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "description": "The bank's side of a settled round."})

    gross: DecimalText
    commission: DecimalText
    net: DecimalText
    house_net: DecimalText
    commission_total: DecimalText

    def to_dict(self) -> dict:
        """JSON form."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, d: Mapping, where: str = "bank") -> "BankTotals":
        """Inverse of :meth:`to_dict`."""
        return cls._build(where, **{k: str(_need(d, k, where)) for k in
                                    ("gross", "commission", "net", "house_net",
                                     "commission_total")})


class ManualEntry(BaseModel):
    """One face a supervisor entered (:mod:`vision.audit.entries`): the tile's index in the
    round's ``tiles``, its position, the face, what the camera read there."""

    model_config = ConfigDict(json_schema_extra={"description": "One face entered."})

    tile: Annotated[int, Field(ge=0)]
    position: PositionId | None = None
    face: Face
    camera: dict[str, Any]


class ManualBlock(BaseModel):
    """The ``manual`` block of a round re-settled from a supervisor's entry
    (:func:`vision.audit.entries.manual_round`)."""

    model_config = ConfigDict(json_schema_extra={
        "description": "The supervisor's entry a manual record was settled from."})

    round_time: str
    camera_record: int | None = None
    entries: Annotated[list[ManualEntry], Field(min_length=1)]
    by: str | None = None


class RoundExtensions(BaseModel):
    """Keys a round event may carry beside :class:`RoundEvent`'s fields (kept in
    :attr:`RoundEvent.extra`, never required): their schema is part of the event's."""

    kind: Literal["round", "manual"] = Field(
        "round", description="absent for the camera's events; manual: re-settled from a "
                             "supervisor's entry")
    manual: ManualBlock | SkipJsonSchema[None] = None


class RoundEvent(_Part):
    """One round of one table, settled or not (``docs/round-event.md``).

    Attributes:
        round_id: ``"r000042"``, unique per table (continues from the audit store's last).
        table_id: the table's name.
        time: UTC ISO-8601 with milliseconds and ``Z``, when the round's frame was processed.
        source: the source spec (camera index, URL, video, folder, glob, ``demo:<seed>``).
        source_file: the file the round's frame came from (an image of a folder, the video
            file), or None for cameras and streams.
        source_id: a stable id of where the round's frame came from (``file-<16 hex>`` of a
            file's content: its size and first and last MiB; ``live-<16 hex>`` of a camera's
            redacted URL; :func:`vision.sources.source_id`), or None in events of older
            versions (then absent from the JSON form). The audit store's exactly-once key uses
            it instead of the typed path.
        frame_index: index of the round's frame in the source.
        rules: rule profile (``"pa"``, ``"nj"``); commission: rate, exact decimal text;
        house_way: house way name; model_version: ``"tiles-<sha8>+pips-<sha8>"``.
        banker_position: the banking position.
        settled: False when nothing could be settled (see ``reason``).
        reason: why the round did not settle (None when it did).
        reason_code: the :class:`SettleReason` of ``reason`` (None when settled, and in
            events written before the codes: then absent from the JSON form).
        positions: position -> :class:`PositionOutcome`, table order (dealer first).
        alerts: :class:`Alert` s of the round.
        tiles: every tile of the round's frame (:class:`TileRecord`).
        bank: :class:`BankTotals` when the round settled, else None (then absent from the
            JSON form).
        extra: the keys of the JSON form this version does not model (``kind`` and
            ``manual`` of a supervisor's record, :class:`RoundExtensions`; anything else),
            written back after the others in their order.
    """

    model_config = ConfigDict(json_schema_extra={
        "description": "One round of one table, settled or not, as written to events.jsonl, "
                       "stored in the audit store and pushed to the dealer display "
                       "(docs/round-event.md; vision.schema.RoundEvent).",
        # rules across fields (checked by the schema only)
        "allOf": [
            {"if": {"properties": {"settled": {"const": True}}},
             "then": {"required": ["bank"], "properties": {"reason": {"type": "null"}}},
             "else": {"properties": {"reason": {"type": "string"}},
                      "not": {"required": ["bank"]}}}]})

    round_id: _Name
    table_id: _Name
    time: Annotated[str, Field(pattern=_TIME)]
    source: str
    source_file: str | None
    source_id: Annotated[str, Field(pattern=_SOURCE_ID)] | SkipJsonSchema[None] = None
    frame_index: Annotated[int, Field(ge=0)]
    rules: str
    commission: DecimalText
    house_way: str
    model_version: str
    banker_position: PositionId
    settled: bool
    reason: str | None
    reason_code: _ReasonCode | SkipJsonSchema[None] = None
    positions: dict[PositionId, PositionOutcome]
    alerts: tuple[Alert, ...] = ()
    tiles: tuple[TileRecord, ...] = ()
    bank: BankTotals | SkipJsonSchema[None] = None
    extra: SkipJsonSchema[dict[str, Any]] = Field(default_factory=dict, exclude=True)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema, handler):
        """The generated schema, with :class:`RoundExtensions`' keys as optional properties and
        the keys the JSON form omits when None (``source_id``, ``bank``) not required."""
        json_schema = handler(core_schema)
        own = handler.resolve_ref_schema(json_schema)
        ext = handler.resolve_ref_schema(handler(RoundExtensions.__pydantic_core_schema__))
        own["properties"].update(ext["properties"])
        own["required"] = [k for k in own.get("required", []) if k not in _OMIT_NONE]
        return json_schema

    def to_dict(self) -> dict:
        """The JSON form (``docs/round-event.schema.json``): a new dict of plain values, in
        field order, ``source_id``, ``reason_code`` and ``bank`` left out when None, then
        :attr:`extra`."""
        d = self.model_dump(mode="json")
        for k in _OMIT_NONE:
            if d[k] is None:
                del d[k]
        d["positions"] = {p: o.to_dict() for p, o in self.positions.items()}
        d["alerts"] = [a.to_dict() for a in self.alerts]
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: Mapping, where: str = "round event") -> "RoundEvent":
        """Read the JSON form back (keys this version does not know are kept in ``extra``).

        Raises:
            InputError: a missing required key or a value the model refuses (named with
                ``where``).
        """
        positions = _need(d, "positions", where)
        if not isinstance(positions, Mapping):
            raise InputError(f"{where}: positions is not an object")
        bank = d.get("bank")
        return cls._build(
            where, round_id=str(_need(d, "round_id", where)),
            table_id=str(d.get("table_id", "table-1")), time=str(_need(d, "time", where)),
            source=str(d.get("source", "")), source_file=d.get("source_file"),
            source_id=d.get("source_id"), frame_index=int(d.get("frame_index", 0)),
            rules=str(d.get("rules", "pa")), commission=str(d.get("commission", "")),
            house_way=str(d.get("house_way", "reference")),
            model_version=str(d.get("model_version", "unknown")),
            banker_position=str(d.get("banker_position", "dealer")),
            settled=bool(d.get("settled", bank is not None)), reason=d.get("reason"),
            reason_code=d.get("reason_code"),
            positions={str(p): PositionOutcome.from_dict(o, f"{where}: position {p}")
                       for p, o in positions.items()},
            alerts=tuple(Alert.from_dict(a, f"{where}: alert") for a in d.get("alerts") or ()),
            tiles=tuple(TileRecord.from_dict(t, f"{where}: tile")
                        for t in d.get("tiles") or ()),
            bank=None if bank is None else BankTotals.from_dict(bank, f"{where}: bank"),
            extra={k: v for k, v in d.items() if k not in _KNOWN})

    def with_alerts(self, alerts) -> "RoundEvent":
        """A copy with ``alerts`` (dicts or :class:`Alert` s) as its alerts."""
        return self.model_copy(update={"alerts": tuple(
            a if isinstance(a, Alert) else Alert.from_dict(a) for a in alerts)})


_KNOWN = frozenset(RoundEvent.model_fields) - {"extra"}


#: The fields the JSON form leaves out when they are None.
_OMIT_NONE = ("source_id", "reason_code", "bank")


def _tidy(node: Any) -> Any:
    """The schema without the annotations pydantic adds that do not constrain (``title`` of
    every model and field, ``default``); ``properties`` maps are kept whole."""
    if isinstance(node, list):
        return [_tidy(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in ("title", "default"):
            continue
        if k in ("properties", "$defs"):
            out[k] = {name: _tidy(s) for name, s in v.items()}
        else:
            out[k] = _tidy(v)
    return out


def round_event_schema() -> dict:
    """The JSON Schema (draft 2020-12) of :meth:`RoundEvent.to_dict`: pydantic's
    ``RoundEvent.model_json_schema(mode="serialization")`` with one documented
    post-processing step: ``$schema``, ``$id`` and ``title`` put first, and the ``title``
    and ``default`` annotations pydantic adds to every model and field removed (they
    constrain nothing). ``docs/round-event.schema.json`` is :func:`schema_text` of it."""
    generated = _tidy(RoundEvent.model_json_schema(mode="serialization"))
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            "title": "Round event", **generated}


def schema_text() -> str:
    """The text of ``docs/round-event.schema.json``: :func:`round_event_schema` as JSON,
    indented by two spaces, keys in generated order, a final newline."""
    return json.dumps(round_event_schema(), indent=2, ensure_ascii=False) + "\n"


def round_number(round_id) -> int:
    """The number of a pipeline round id ``"r000042"`` -> 42 (0 for anything else)."""
    if isinstance(round_id, str) and len(round_id) > 1 and round_id[0] == "r" \
            and round_id[1:].isdigit():
        return int(round_id[1:])
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m vision.schema [--write-schema | --check-schema]``: print the generated
    schema, write it to :data:`SCHEMA_FILE`, or exit 1 when the file differs from it."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m vision.schema",
                                 description="The round event's JSON Schema, generated from "
                                             "vision.schema.RoundEvent.")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--write-schema", action="store_true",
                       help=f"write it to {SCHEMA_FILE}")
    group.add_argument("--check-schema", action="store_true",
                       help="exit 1 when the file differs from the generated schema")
    args = ap.parse_args(argv)
    text = schema_text()
    if args.write_schema:
        SCHEMA_FILE.write_text(text, encoding="utf-8")
        print(f"wrote {SCHEMA_FILE}")
    elif args.check_schema:
        same = SCHEMA_FILE.is_file() and SCHEMA_FILE.read_text(encoding="utf-8") == text
        print(f"{SCHEMA_FILE}: {'up to date' if same else 'differs from the generated schema'}")
        return 0 if same else 1
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

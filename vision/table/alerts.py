"""Integrity alerts of one round, computed from its round event (a
:class:`vision.schema.RoundEvent` or its JSON form).

Sources: docs/rules.md section 1 (a 32-tile set holds each civil face twice, each military face
once), PA 621a.8 (d) (the dealer sets by the house way), docs/rules.md section 4 (a hand is mis-set
when the low hand ranks above the high hand). Event shape: docs/round-event.md.

Kinds written here:

* ``duplicate_face``: a face seen more often in the round than one set holds it (three 6-6, two
  3-6). ``position`` is the position where the face is seen once too often (positions walked in
  the order dealer, "1".."7", then any other label, then face-up tiles with no position);
  ``detail`` names every position holding it.
* ``house_way_deviation``: the dealer's setting is legal but not the one the house way
  (``event["house_way"]``, default ``"reference"``) plays for its four tiles.
* ``mis_set``: a position's low hand ranks above its high hand.

Faces that are missing, ``None`` or ``"unknown"`` are skipped (the pipeline reports those
itself as ``unknown_tile``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from scoring.errors import InputError
from scoring.settle import POSITIONS
from scoring.tiles import TILES_BY_FACE, FaceOverSet, Tile, faces_over_set, parse_tile

from vision.schema import AlertCode, PositionOutcome, RoundEvent, TileRecord

__all__ = ["round_alerts", "duplicate_faces", "duplicate_face_alert", "house_way_alerts",
           "mis_set_alerts", "merge_alerts", "ALERT_KINDS"]

#: The kinds computed here from a round event.
ALERT_KINDS = (AlertCode.DUPLICATE_FACE, AlertCode.HOUSE_WAY_DEVIATION, AlertCode.MIS_SET)
_SKIP = {None, "", "unknown", "?", "none"}


def _get(o, key: str, default=None):
    """A field of a typed event part (:class:`vision.schema.RoundEvent`,
    :class:`~vision.schema.PositionOutcome`, :class:`~vision.schema.TileRecord`) or of its
    JSON form, read the same way (no round trip through ``to_dict``)."""
    return o.get(key, default) if isinstance(o, Mapping) else getattr(o, key, default)


def _positions(event: RoundEvent | Mapping) -> list[tuple[str, PositionOutcome | Mapping]]:
    pos = _get(event, "positions") or {}
    if not isinstance(pos, Mapping):
        raise InputError(f"round {_get(event, 'round_id')!r}: positions is not an object")
    keys = sorted(pos, key=lambda k: (POSITIONS.index(str(k)) if str(k) in POSITIONS else 99,
                                      str(k)))
    return [(str(k), pos[k]) for k in keys if isinstance(pos[k], (Mapping, PositionOutcome))]


def _tile(face, where: str) -> Tile | None:
    t = TILES_BY_FACE.get(face) if isinstance(face, str) else None
    if t is not None:  # fast path: the pipeline writes canonical faces
        return t
    if isinstance(face, Mapping):
        face = face.get("face")
    if face is None or (isinstance(face, str) and face.strip().lower() in _SKIP):
        return None
    try:
        return parse_tile(face)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None


def duplicate_faces(event: RoundEvent | Mapping) -> list[dict]:
    """``duplicate_face`` alerts: faces seen more often than the 32-tile set holds them
    (``TILES_BY_FACE[face].copies``: 2 for civil faces, 1 for military ones).

    Counts every position's ``tiles`` plus the face-up entries of ``event["tiles"]`` that have
    no position (a stray tile on the layout).

    Returns:
        list of ``{"kind": "duplicate_face", "position": str | None, "detail": str}``, one per
        face, in rank order of the face.

    Raises:
        InputError: when a face text is not a pai gow face (names it and the position).
    """
    rid = _get(event, "round_id")
    seen: list[tuple[Tile, str | None]] = []
    for pos, p in _positions(event):
        for face in _get(p, "tiles") or []:
            t = _tile(face, f"round {rid!r} position {pos!r}")
            if t is not None:
                seen.append((t, pos))
    for d in _get(event, "tiles") or []:
        if isinstance(d, (Mapping, TileRecord)) and _get(d, "position") is None and \
                _get(d, "state", "face_up") == "face_up":
            t = _tile(_get(d, "face"), f"round {rid!r} unplaced tile")
            if t is not None:
                seen.append((t, None))
    return [duplicate_face_alert(f) for f in faces_over_set(seen)]


def duplicate_face_alert(found: FaceOverSet) -> dict:
    """The ``duplicate_face`` alert of one face over the set (the one wording, used by the
    round tracker and by :func:`duplicate_faces`): ``position`` where it is seen once too
    often, ``detail`` naming every holder (``"unplaced"`` for a tile in no position)."""
    where = ", ".join(w if w is not None else "unplaced" for w in found.where)
    return {"kind": AlertCode.DUPLICATE_FACE, "position": found.excess_at,
            "detail": (f"face {found.tile.face} seen {found.count} times (positions {where}); "
                       f"a set holds {found.tile.copies}")}


def _setting(p: PositionOutcome | Mapping, pos: str, rid):
    from scoring.setting import make_setting

    high, low = _get(p, "high"), _get(p, "low")
    if not high or not low:
        return None
    where = f"round {rid!r} position {pos!r}"
    hi = [_tile(f, where) for f in high]
    lo = [_tile(f, where) for f in low]
    if None in hi or None in lo:
        return None
    return make_setting(hi, lo)


def mis_set_alerts(event: RoundEvent | Mapping) -> list[dict]:
    """``mis_set`` alerts: positions whose low hand ranks above the high hand under the event's
    ``rules`` profile (default ``"pa"``), computed from ``high``/``low``; a position without both
    hands counts as mis-set when it says ``"mis_set": true``.

    For a seat the pipeline settles the mis-set hand by the rules profile's policy (re-set by
    the house way or forfeit, scoring.settle); the alert records that it happened.
    """
    rid = _get(event, "round_id")
    rules = _get(event, "rules") or "pa"
    out = []
    for pos, p in _positions(event):
        s = _setting(p, pos, rid)
        if s is not None:
            mis = s.is_mis_set(rules)
        else:
            mis = bool(_get(p, "mis_set"))
        if mis:
            shown = f"{' '.join(_get(p, 'high') or [])} / {' '.join(_get(p, 'low') or [])}".strip()
            out.append({"kind": AlertCode.MIS_SET, "position": pos,
                        "detail": f"{shown or 'hand'} is mis-set: the low hand ranks above "
                                  "the high hand"})
    return out


def house_way_alerts(event: RoundEvent | Mapping) -> list[dict]:
    """``house_way_deviation``: the dealer's (legal) setting differs from the house way's
    setting of the same four tiles, using ``scoring.setting.is_house_way(setting, way, rules)``
    and ``house_way_setting(tiles, way, rules)`` with ``way = event["house_way"]`` (default
    ``"reference"``). A mis-set dealer hand is a ``mis_set`` alert, not this one. When the
    dealer's hands are not known, the position's own ``"is_house_way": false`` flag is used.
    """
    rid = _get(event, "round_id")
    rules = _get(event, "rules") or "pa"
    way = _get(event, "house_way") or "reference"
    pos_map = dict(_positions(event))
    p = pos_map.get("dealer")
    if p is None:
        return []
    s = _setting(p, "dealer", rid)
    if s is None:
        if _get(p, "is_house_way") is False:
            return [{"kind": AlertCode.HOUSE_WAY_DEVIATION, "position": "dealer",
                     "detail": "dealer setting is not the house way (flag from the event)"}]
        return []
    if s.is_mis_set(rules):
        return []
    from scoring.setting import house_way_setting, is_house_way

    if is_house_way(s, way, rules):
        return []
    hw = house_way_setting(list(s.tiles), way, rules)
    return [{"kind": AlertCode.HOUSE_WAY_DEVIATION, "position": "dealer",
             "detail": f"dealer set {s}; the house way {way!r} sets {hw}"}]


def round_alerts(event: RoundEvent | Mapping) -> list[dict]:
    """Every integrity alert of a round event: duplicate faces, then the dealer's house-way
    deviation, then mis-set hands.

    Args:
        event: a round event or its JSON form (docs/round-event.md); uses ``positions`` (``tiles``,
            ``high``, ``low``, ``mis_set``, ``is_house_way``), ``tiles``, ``rules``,
            ``house_way``.

    Returns:
        list of ``{"kind", "position", "detail"}`` dicts (kinds in :data:`ALERT_KINDS`).

    Raises:
        InputError: for a face text that is not a pai gow face or an unknown rules profile.
    """
    return duplicate_faces(event) + house_way_alerts(event) + mis_set_alerts(event)


def merge_alerts(given: Iterable[Mapping], computed: Iterable[Mapping]) -> list[dict]:
    """The event's own alerts followed by the computed ones it does not already hold: one
    alert per ``(kind, position)`` (the event's wording wins), except ``duplicate_face``, of
    which a position can hold several (one per face): those are one per ``(kind, position,
    detail)``. The round tracker words its duplicate faces with :func:`duplicate_face_alert`,
    as :func:`duplicate_faces` does, so the same finding is held once (a finding counted with
    other tiles -- an unplaced face-up tile only the event's ``tiles`` show -- is kept too:
    an alert is never dropped on a guess about its text)."""
    out: list[dict] = []
    keys: set = set()
    for a in list(given) + list(computed):
        key = (a.get("kind"), a.get("position"))
        if a.get("kind") == AlertCode.DUPLICATE_FACE:
            key += (a.get("detail"),)
        if key in keys:
            continue
        keys.add(key)
        d = dict(a)
        d.setdefault("position", None)
        d.setdefault("detail", None)
        out.append(d)
    return out

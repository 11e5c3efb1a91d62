"""Views of a round for people: the overlay's view, the dealer page's views, the text table.

One function, :func:`live_position`, describes what a position shows now (tiles, hands and
their names, problems); the overlay's view (:func:`round_view`, drawn by
:func:`vision.io.overlay.draw_round`) and the dealer page's live view
(:func:`live_positions_view`) are both built from it. :func:`positions_view` describes a
settled round event (docs/round-event.md) for the page; :func:`settlement_table` prints one.
Views are plain JSON-ready dicts; this module draws and serves nothing.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, Mapping

from scoring.settle import POSITIONS

__all__ = ["live_position", "live_positions_view", "round_view", "positions_view",
           "round_summary", "settlement_table", "position_order", "plain_reason",
           "reason_code_of",
           "position_name", "DEALING", "READING"]

#: Live status of a position whose hand is still being laid out (fewer than four tiles, the
#: tiles still changing): not an alert.
DEALING = "dealing"

#: Live status of a position of a new deal whose still reading is being made beside the loop
#: (the first look is provisional): "reading the deal", not a hand to move; not an alert.
READING = "reading"


def position_name(pos) -> str:
    """``"dealer"`` -> ``"Dealer"``, ``"3"`` -> ``"Seat 3"``, None -> ``"Table"``."""
    if pos is None:
        return "Table"
    return "Dealer" if str(pos) == "dealer" else f"Seat {pos}"


#: What a dealer is told, by code (a :class:`vision.schema.SettleReason` or an alert kind,
#: :class:`vision.schema.AlertCode`, or ``face_down``), after the position's name. A code not
#: listed is told :data:`_CALL_SUPERVISOR`.
_WORDS = {
    "banker_unread": "not settled -- the banker's tiles cannot be read",
    "banker_not_settled": "not settled -- the banker's hand is not settled",
    "banker_empty": "not settled -- the banker's hand is not settled",
    "house_way_deviation": "not set the house way -- supervisor to check",
    "mis_set": "low hand is higher than the high hand (mis-set)",
    "mis_set_reset": "low hand is higher than the high hand (mis-set)",
    "mis_set_forfeited": "low hand is higher than the high hand (mis-set)",
    "duplicate_face": "the same tile is seen twice -- check the tiles",
    "wrong_tile_count": "{n} -- a hand needs 4 tiles",
    "face_down": "a tile is face down -- turn it face up",
    "unknown_tile": "a tile cannot be read -- move the hand into view",
    "unread_tile": "a tile cannot be read -- move the hand into view",
    "unread_decides": "a tile cannot be read -- move the hand into view",
    "co_bank": "co-bank -- the house is half of the bank",
    "no_other_settled": "no player hand could be settled",
    "table_cleared": "table cleared before the round was settled",
    "dealt_again": "the table was dealt again before the round was settled",
    "not_confirmed": "the table was dealt again before the round was settled",
    "reading_pending": "the hands could not be read in time -- supervisor to check",
    "not_stable": "hands were not still long enough to settle",
    "source_ended": "hands were not still long enough to settle",
}
_CALL_SUPERVISOR = "cannot be settled -- call a supervisor"

#: The words that open a round's reason when the round ended unsettled (an ending,
#: ``SettleReason.say``); :func:`reason_code_of` reads what follows them.
_ENDINGS = ("table cleared before the round settled: ",
            "the table was dealt again before the round settled: ",
            "source ended before the round settled: ",
            "still not settled after the manual entry: ")


def reason_code_of(text: str | None) -> str | None:
    """The code a reason text was made from, for a reason that came without one: an event
    written before the codes (an old audit store, ``events.jsonl``), or a caller holding only
    the text. The one place that reads reason words; every other reader switches on the code
    (``reason_code`` of the event and its positions, an alert's ``kind``).

    Args:
        text: a position's or a round's reason, or an alert's detail.

    Returns:
        a :class:`vision.schema.SettleReason` value or an alert kind (``"mis_set"``,
        ``"house_way_deviation"``), as a plain string; None when the words name none
        (told :data:`_CALL_SUPERVISOR`). A round's ending (``"table cleared before the round
        settled: ..."``) gives the code of what follows it, as the dealer was always told.
    """
    t = (text or "").lower()
    for prefix in _ENDINGS:
        if t.startswith(prefix):
            t = t[len(prefix):]
    checks = (("house_way_deviation", "house way" in t and "dealer set" in t),
              ("mis_set", "mis-set" in t),
              ("duplicate_face", "duplicate" in t or "more often" in t),
              ("wrong_tile_count", "a position holds 4" in t),
              ("face_down", "face down" in t),
              ("unknown_tile", "unknown" in t or "unread" in t or "read a" in t),
              ("co_bank", "co-bank" in t),
              ("no_other_settled", "no other position settled" in t),
              ("table_cleared", "cleared" in t),
              ("dealt_again", "dealt again" in t),
              ("reading_pending", "still reading had not landed" in t),
              ("not_stable", "not stable" in t or "source ended" in t))
    if t.startswith("banker "):  # a player waiting on an unreadable bank
        return "banker_unread" if ("unknown" in t or "unread" in t) else "banker_not_settled"
    return next((code for code, hit in checks if hit), None)


def plain_reason(pos, text: str | None = None, kind: str | None = None,
                 code: str | None = None) -> str | None:
    """What a dealer is told about a problem, in plain words, never the decoder's message.

    The words are chosen by code (:data:`_WORDS`): ``code`` (a reason's
    :class:`vision.schema.SettleReason`), else the alert ``kind`` (:class:`vision.schema.
    AlertCode`, or ``face_down``), else, for a reason that came without a code (an event
    written before the codes), the code :func:`reason_code_of` reads from ``text``.

    Args:
        pos: the position concerned (or None).
        text: the machine's reason or alert detail (e.g. ``"1 tile(s) unknown (read A: no
            face has 0 red and 2 white spots; ...)"``); never shown, it gives only the
            number of tiles of a wrong tile count (and the code when none is given).
        kind: the alert kind when known (``unknown_tile``, ``wrong_tile_count``,
            ``duplicate_face``, ``mis_set``, ``house_way_deviation``, ``face_down``, ...).
        code: the reason's code when known (``PositionOutcome.reason_code``,
            ``PositionState.reason_code``).

    Returns:
        e.g. ``"Seat 3: a tile cannot be read -- move the hand into view"``; None when there
        is nothing to say.
    """
    if not text and not kind and not code:
        return None
    who = position_name(pos)
    key = str(code or kind or "") or reason_code_of(text)
    words = _WORDS.get(key or "", _CALL_SUPERVISOR)
    if key == "wrong_tile_count":
        import re

        m = re.search(r"(\d+) tiles, a position holds 4", (text or "").lower())
        words = words.format(n=f"{m.group(1)} tiles" if m else "wrong number of tiles")
    return f"{who}: {words}"


def position_order(pos: str) -> int:
    """Sort key: table order (dealer, "1".."7"), unknown names last."""
    return POSITIONS.index(pos) if pos in POSITIONS else len(POSITIONS)


def _text(v) -> str | None:
    return None if v is None else str(v)


def live_position(st, rules: str = "pa") -> dict:
    """What one position shows in the current frame.

    Args:
        st: a :class:`vision.table.rounds.PositionState`.
        rules: rule profile for the hand names.

    Returns:
        ``{"position", "tiles" (faces, None for unknown / face down), "high", "low",
        "high_hand", "low_hand", "status" ("set" | "problem"), "detail" (the problems as one
        line), "code" (its :class:`vision.schema.SettleReason`, or None), "problems" (their
        kinds)}``.
    """
    view: dict[str, Any] = {"position": st.position,
                            "tiles": [getattr(r, "face", None) for r in st.tiles],
                            "high": None, "low": None, "high_hand": None, "low_hand": None,
                            "status": "set" if st.setting is not None else "problem",
                            "detail": st.reason, "code": st.reason_code,
                            "problems": [k for k, _ in st.problems]}
    if st.setting is not None:
        c = st.setting.canonical()
        view.update(high=[t.face for t in c.high], low=[t.face for t in c.low],
                    high_hand=st.setting.high_value(rules).name,
                    low_hand=st.setting.low_value(rules).name)
    return view


def live_positions_view(positions: Mapping[str, Any] | None, rules: str = "pa"
                        ) -> dict[str, dict]:
    """:func:`live_position` of every position, table order (already JSON-ready dicts are
    passed through)."""
    out: dict[str, dict] = {}
    for pos in sorted(positions or {}, key=position_order):
        st = positions[pos]
        out[pos] = dict(st, position=pos) if isinstance(st, Mapping) else live_position(st, rules)
    return out


def round_view(res, *, rules: str, banker: str, table_id: str, layout=None,
               last_event: Mapping | None = None, round_open: bool = True,
               is_final=lambda pos: False) -> dict:
    """The view :func:`vision.io.overlay.draw_round` draws for one frame.

    Args:
        res: the frame's :class:`vision.pipeline.FrameResult`.
        rules, banker, table_id: the table's settings.
        layout: the :class:`vision.table.rounds.Layout` (its polygons are drawn) or None.
        last_event: the last round event (JSON form) or None; its results are shown while
            the round is not open again.
        round_open: the tracker's round is open (no result shown).
        is_final: position -> whether it is final (stable).

    Returns:
        ``{"tiles": [tile dicts with "position"], "positions": {pos: {"tiles", "high", "low",
        "high_hand", "low_hand", "final", "problems", "reason" (in plain words,
        :func:`plain_reason`), "result", "net"}},
        "position_polygons", "banker_position", "table_id", "round_id", "event",
        "settled_now"}``.
    """
    from vision.schema import TileRecord

    shown = last_event if (last_event is not None and not round_open) else None

    def same_tiles(pos) -> bool:
        """The position shows now the faces the shown round settled it with."""
        e = (shown or {}).get("positions", {}).get(pos)
        st = res.positions.get(pos)
        return (e is not None and st is not None
                and sorted(r.face or "" for r in st.tiles) == sorted(f or "" for f in e["tiles"]))

    if shown is not None and not same_tiles(banker):
        # the banker shows other tiles (the next round is being dealt, or the table is
        # cleared): the last round's results are not drawn over them
        shown = None
    pos_view: dict[str, dict] = {}
    for p, st in res.positions.items():
        live = live_position(st, rules)
        v = {k: live[k] for k in ("tiles", "high", "low", "high_hand", "low_hand", "problems")}
        say = plain_reason(p, live["detail"], code=live["code"]) if live["detail"] else None
        # drawn under the position's name: plain words without the name, never the decoder's
        v.update(final=is_final(p), reason=say.split(": ", 1)[-1] if say else None,
                 result=None, net=None)
        if shown is not None and same_tiles(p):
            e = shown["positions"][p]
            v["result"], v["net"] = e.get("result"), e.get("net")
        pos_view[p] = v
    return {
        "tiles": [TileRecord.from_read(r, p).to_dict()
                  for r, p in zip(res.reads, res.tile_positions)],
        "positions": pos_view,
        "position_polygons": ({p: v.tolist() for p, v in layout.positions.items()}
                              if layout is not None else {}),
        "banker_position": banker,
        "table_id": table_id,
        "round_id": shown["round_id"] if shown is not None else None,
        "event": shown,
        "settled_now": res.round is not None,
    }


def _banker_result(net: str | None) -> str | None:
    if net is None:
        return "in_play"
    try:
        d = Decimal(net)
    except InvalidOperation:
        return None
    return "win" if d > 0 else "lose" if d < 0 else "push"


def positions_view(event: Mapping | None) -> dict[str, dict]:
    """Per-position view of a round event (JSON form) for the dealer page.

    Returns:
        position -> ``{"position", "role" ("banker"|"player"), "tiles", "high", "low",
        "high_hand", "low_hand", "result" ("win"|"lose"|"push"|"not_settled", or "in_play"
        while the position has no result yet; for the banker derived from its net), "net",
        "bet", "commission", "mis_set", "is_house_way", "reason", "say" (the reason in plain
        words, :func:`plain_reason`), "alerts" (this position's ``{"kind", "detail", "say"}``)}``,
        in table order. Money values stay exact decimal strings.
    """
    if not event:
        return {}
    banker = event.get("banker_position", "dealer")
    alerts: dict[str, list[dict]] = {}
    for a in event.get("alerts") or []:
        if isinstance(a, Mapping):
            alerts.setdefault(str(a.get("position")), []).append(
                {"kind": str(a.get("kind", "alert")), "detail": a.get("detail"),
                 "say": plain_reason(a.get("position"), a.get("detail"), a.get("kind"))})
    out: dict[str, dict] = {}
    positions = event.get("positions") or {}
    for pos in sorted(positions, key=position_order):
        p = positions[pos] or {}
        role = "banker" if (pos == banker or p.get("role") == "banker") else "player"
        result = p.get("result")
        net = _text(p.get("net"))
        if result is None and role == "banker":
            result = _banker_result(net)
        out[pos] = {
            "position": pos, "role": role, "tiles": list(p.get("tiles") or []),
            "high": p.get("high"), "low": p.get("low"),
            "high_hand": p.get("high_hand"), "low_hand": p.get("low_hand"),
            "result": result or "in_play", "net": net, "bet": _text(p.get("bet")),
            "commission": _text(p.get("commission")), "mis_set": bool(p.get("mis_set", False)),
            "is_house_way": p.get("is_house_way"), "reason": p.get("reason"),
            "say": (plain_reason(pos, p.get("reason"), code=p.get("reason_code"))
                    if p.get("reason") else None),
            "alerts": alerts.get(pos, []),
        }
    return out


def round_summary(event: Mapping) -> dict:
    """One line of the page's round list: ``{"round_id", "time", "frame_index", "results"
    (players' results), "banker_net", "alerts" (count)}``."""
    view = positions_view(event)
    return {"round_id": event.get("round_id"), "time": event.get("time"),
            "frame_index": event.get("frame_index"),
            "results": {p: v["result"] for p, v in view.items() if v["role"] != "banker"},
            "banker_net": next((v["net"] for v in view.values() if v["role"] == "banker"), None),
            "alerts": len(event.get("alerts") or [])}


def settlement_table(event) -> str:
    """Readable settlement table of one round event (a :class:`vision.schema.RoundEvent` or
    its JSON form): a header, one line per position, the round's reason when it did not
    settle, its alerts.

    Raises:
        InputError: a JSON form that is not a round event (:meth:`RoundEvent.from_dict`).
    """
    from vision.schema import RoundEvent

    ev = event if isinstance(event, RoundEvent) else RoundEvent.from_dict(event)
    lines = [f"round {ev.round_id}  table {ev.table_id}  banker "
             f"{ev.banker_position}  rules {ev.rules}  commission {ev.commission}"
             + (f"  source {ev.source_file}" if ev.source_file else "")]
    lines.append(f"{'position':<9}{'high':<12}{'low':<12}{'high hand':<22}{'low hand':<22}"
                 f"{'result':<12}{'net':>8}")
    for p, e in ev.positions.items():
        hi = " ".join(e.high) if e.high else "-"
        lo = " ".join(e.low) if e.low else "-"
        res = "banker" if e.role == "banker" and e.result is None else e.result
        line = (f"{p:<9}{hi:<12}{lo:<12}{str(e.high_hand or '-'):<22}"
                f"{str(e.low_hand or '-'):<22}{str(res):<12}{str(e.net or '-'):>8}")
        if res == "not_settled" and e.reason:
            line += f"  ({e.reason})"
        lines.append(line)
    if not ev.settled:
        lines.append(f"NOT SETTLED: {ev.reason or 'no reason given'}")
    for a in ev.alerts:
        lines.append(f"alert {a.kind} at {a.position}: {a.detail}")
    return "\n".join(lines)

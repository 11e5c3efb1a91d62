"""What the pit page shows of each table beside its row (``GET /api/pit/tables``,
docs/pit.md): a live thumbnail (the table's ``snapshot.jpg``), its alerts in the dealer
display's words (:func:`vision.io.views.plain_reason`, as ``LiveFeed.state`` gives them), each
once, with what the acknowledge button needs, and the game pace from the table's rounds.
"""

from __future__ import annotations

import statistics
from typing import Iterable, Mapping

__all__ = ["table_pace", "table_alerts", "table_view"]


def table_pace(times: Iterable[str], round_count: int | None = None) -> dict:
    """The game pace of a table from the times of its rounds.

    Args:
        times: ISO-8601 times of the rounds shown (the table's newest rounds, any order).
        round_count: the table's rounds since it started (None: the number of ``times``).

    Returns:
        ``{"rounds" (round_count), "shown" (rounds timed), "span_s" (first to last, s),
        "rounds_per_hour" (float: ``3600 * (shown - 1) / span_s``, the rate between the first
        and the last round timed; None under two rounds or a zero span), "median_round_s"
        (median seconds from one round to the next; None under two rounds)}``.

    Raises:
        InputError: a time that is not ISO-8601.
    """
    from vision.audit.chain import parse_time

    ts = sorted(parse_time(t, "round time") for t in times if t)
    gaps = [(b - a).total_seconds() for a, b in zip(ts, ts[1:])]
    span = (ts[-1] - ts[0]).total_seconds() if len(ts) > 1 else 0.0
    return {"rounds": len(ts) if round_count is None else int(round_count), "shown": len(ts),
            "span_s": round(span, 3),
            "rounds_per_hour": round(3600.0 * (len(ts) - 1) / span, 1) if span > 0 else None,
            "median_round_s": round(statistics.median(gaps), 3) if gaps else None}


def table_alerts(state: Mapping) -> list[dict]:
    """A table's alerts in words, each once.

    Args:
        state: :meth:`vision.web.hub.LiveFeed.state` of the table (its last round's
            ``alerts`` and the ``live`` alerts, each with ``say``).

    Returns:
        ``[{"say", "kind", "position", "round_id" (the round to acknowledge it on; None for
        a live alert, not yet a round's), "acknowledged", "live"}]``: the last round's alerts,
        then the live ones whose words are not already listed; one entry per distinct ``say``
        (an alert the camera shows now and its round raised is one line).
    """
    rid = (state.get("last_round") or {}).get("round_id")
    out: list[dict] = []
    seen: set[str] = set()
    items = [(a, rid, False) for a in state.get("alerts") or []]
    items += [(a, None, True) for a in (state.get("live") or {}).get("alerts") or []]
    for a, round_id, live in items:
        say = a.get("say")
        if not say or say in seen:
            continue
        seen.add(say)
        out.append({"say": say, "kind": a.get("kind"), "position": a.get("position"),
                    "round_id": round_id, "acknowledged": bool(a.get("acknowledged")),
                    "live": live})
    return out


def table_view(table_id: str, state: Mapping, url: str) -> dict:
    """One table of ``GET /api/pit/tables``: ``{"table_id", "url", "snapshot" (its picture's
    URL), "has_picture", "status", "alerts" (:func:`table_alerts`), "pace"
    (:func:`table_pace`), "audit" (acknowledgements can be recorded)}``."""
    return {"table_id": table_id, "url": url, "snapshot": url + "snapshot.jpg",
            "has_picture": bool(state.get("has_picture")), "status": state.get("status"),
            "alerts": table_alerts(state),
            "pace": table_pace([r.get("time") for r in state.get("rounds") or []],
                               state.get("round_count")),
            "audit": bool(state.get("audit"))}

"""What people add to the audit store beside the camera's rounds: a supervisor's manual entry
of a tile the camera could not read, and the acknowledgement of an alert (docs/round-event.md,
record kinds).

Every record of the store is one JSON payload in the hash chain; its top-level ``kind`` says
what it is:

* absent (or ``"round"``): a round event as the camera and the table stage produced it;
* ``"manual"``: the same round **re-settled from a supervisor's entry** -- a full round event
  (same ``table_id`` and ``round_id``; ``time`` = when the entry was made) with
  ``"manual": {"round_time", "camera_record", "entries": [{"tile", "position", "face",
  "camera": {"face", "state", "confidence"}}], "by"}``; a **correction** (a face entered
  before changed) also carries ``"correction": true``, ``"supersedes"`` (the record id of the
  manual record it corrects) and ``"superseded"`` (the entries it replaced). A face is
  accepted only while the set still holds one (a civil face at most twice on the table, a
  military one once: :func:`possible_faces`). The camera's own record is never
  changed (the store is append-only): both stand in the chain, side by side, and readers
  (:mod:`vision.audit.payouts`, :mod:`vision.audit.report`) take the newest manual record of
  a round as its settlement, marked as manual; the report keeps the camera's alerts (and
  their acknowledgements) and every manual record (who, when);
* ``"ack"``: an alert acknowledged at the table: ``{"kind": "ack", "table_id", "round_id",
  "time" (when), "ack": {"round_time", "alert": {"kind", "position", "detail"}, "by",
  "note"}, "positions": {}, "alerts": []}``;
* ``"setcheck"``: a check of the tile set shown face up before play [58 Pa. Code 621a.4]
  (``paigow setcheck``, the dealer display's button; :mod:`scoring.setcheck`):
  ``{"kind": "setcheck", "table_id", "round_id": "setcheck", "time", "source",
  "model_version", "setcheck": {"verdict", "complete", "tiles", "pairs", "counts", "missing",
  "extra", "foreign", "unread", "summary", "by", "reads": [{"face", "state", "confidence"}]},
  "positions": {}, "alerts": []}``: no round (readers of rounds skip it).

Pure functions build the payloads; :func:`append_manual`, :func:`append_ack` and
:func:`append_setcheck` store them.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from scoring.errors import InputError, StateConflict

__all__ = ["KIND_MANUAL", "KIND_ACK", "KIND_SETCHECK", "record_kind", "manual_round",
           "ack_record", "setcheck_record", "append_manual", "append_ack", "append_setcheck",
           "latest_round", "possible_faces"]

KIND_MANUAL = "manual"
KIND_ACK = "ack"
KIND_SETCHECK = "setcheck"


def record_kind(payload: Mapping) -> str:
    """``"round"`` (the camera's), ``"manual"``, ``"ack"`` or ``"setcheck"`` for a stored
    payload."""
    return str(payload.get("kind") or "round")


def _now() -> str:
    from vision.table.events import utc_now_iso

    return utc_now_iso()


def possible_faces(event: Mapping, tile: int | None = None) -> list[str]:
    """The faces (``"low-high"``, scoring.tiles order) a tile of the round ``event`` can still
    be: those the round's other tiles with a face (read by the camera or entered) have not
    used up -- a set holds a civil face twice and a military face once [docs/rules.md 1].

    Args:
        event: the round (JSON form); ``tile``: the index of the tile asked about (its own
            face, if any, is not counted), or None for a tile not in the list.
    """
    from collections import Counter

    from scoring.tiles import FACES

    used = Counter(str(t.get("face")) for i, t in enumerate(event.get("tiles") or [])
                   if t.get("face") and i != tile)
    return [t.face for t in FACES if used.get(t.face, 0) < t.copies]


def manual_round(event: Mapping, entries: Sequence[Mapping], *, by: str | None = None,
                 camera_record: int | None = None, time: str | None = None,
                 correction: bool = False, supersedes: int | None = None) -> dict:
    """The round re-settled with a supervisor's faces for tiles the camera could not read.

    Args:
        event: the round as stored (JSON form, docs/round-event.md): the camera's event or an
            earlier manual record of the round (its entries are kept and added to).
        entries: ``[{"tile": i, "face": "2-4"}]``: ``i`` indexes the event's ``tiles`` list;
            the tile must be one the camera did not read (state ``unknown``) and not entered
            already.
        by: who entered it (free text, e.g. a supervisor's badge), or None.
        camera_record: the store record id of the camera's event.
        time: when (ISO-8601 UTC; default now).
        correction: a correction: tiles entered before may be given another face (the
            entries replaced are kept under ``manual.superseded``).
        supersedes: the record id of the manual record corrected.

    Returns:
        a round event (JSON form) with ``kind`` ``"manual"`` and the ``manual`` block (module
        docstring); settled when the entries leave every position readable. Its tiles show
        the entered faces with state ``face_up`` and confidence 1.0.

    Raises:
        InputError: a bad tile index or face, a tile the camera did read, a tile entered twice
            (without ``correction``), a correction of a tile not entered before, a face the
            set no longer holds (a civil face shown twice already, a military one once).
    """
    import numpy as np

    from scoring.tiles import TILES_BY_FACE

    from vision.table.alerts import merge_alerts, round_alerts
    from vision.recognition.decode import TileRead
    from vision.schema import SettleReason
    from vision.table.events import build_round
    from vision.table.rounds import FrameHeader, RoundTracker, build_positions

    rid = event.get("round_id")
    tiles = [dict(t) for t in event.get("tiles") or []]
    old = dict(event.get("manual") or {})
    done = {int(e["tile"]) for e in old.get("entries") or []}
    new_entries = list(old.get("entries") or [])
    superseded: list[dict] = []
    given: set[int] = set()
    if not entries:
        raise InputError(f"round {rid!r}: no tile entered")
    for e in entries:
        try:
            i = int(e.get("tile"))
        except (TypeError, ValueError):
            raise InputError(f"round {rid!r}: tile {e.get('tile')!r} is not a tile number") \
                from None
        face = str(e.get("face") or "").strip()
        if not 0 <= i < len(tiles):
            raise InputError(f"round {rid!r}: tile {i} does not exist (the round shows "
                             f"{len(tiles)} tiles)")
        if face not in TILES_BY_FACE:
            raise InputError(f"round {rid!r}: {face!r} is not a tile face (e.g. '2-4')")
        if i in given:
            raise InputError(f"round {rid!r}: tile {i} is given twice")
        given.add(i)
        t = tiles[i]
        if i in done:
            if not correction:
                raise InputError(f"round {rid!r}: tile {i} was entered already (send a "
                                 f"correction to change it)")
            prev = next(e for e in new_entries if int(e["tile"]) == i)
            new_entries.remove(prev)
            superseded.append(prev)
            # the tile as the camera left it: its camera block
            cam = prev.get("camera") or {}
            t = dict(t, face=cam.get("face"), state=cam.get("state") or "unknown",
                     confidence=cam.get("confidence"))
            tiles[i] = t
        elif correction:
            raise InputError(f"round {rid!r}: tile {i} was not entered before; a correction "
                             f"changes an entered face")
        if t.get("state") != "unknown":
            raise InputError(f"round {rid!r}: tile {i} was read by the camera "
                             f"({t.get('face') or t.get('state')}); only unread tiles are "
                             f"entered")
        new_entries.append({"tile": i, "position": t.get("position"), "face": face,
                            "camera": {"face": t.get("face"), "state": t.get("state"),
                                       "confidence": t.get("confidence")}})
        tiles[i] = dict(t, face=face, state="face_up", confidence=1.0)
        done.add(i)
    # the set check: an entered face the set no longer holds is refused, with the reason
    from collections import Counter

    count = Counter(str(t.get("face")) for t in tiles if t.get("face"))
    for e in entries:
        face = str(e.get("face")).strip()
        n, copies = count[face], TILES_BY_FACE[face].copies
        if n > copies:
            kind = "civil" if copies == 2 else "military"
            raise InputError(f"round {rid!r}: {face} would be on the table {n} times; a set "
                             f"holds the {kind} tile {face} {'twice' if copies == 2 else 'once'}"
                             f" (faces still possible: "
                             f"{', '.join(possible_faces({'tiles': tiles}, int(e['tile'])))})")

    groups: dict[str, list] = {}
    for t in tiles:
        if t.get("position") is None:
            continue
        poly = np.asarray(t["polygon"], np.float32).reshape(4, 2)
        groups.setdefault(str(t["position"]), []).append(
            TileRead(t.get("face"), str(t["state"]), float(t.get("confidence") or 0.0), poly,
                     np.asarray(t["xyxy"], np.float32), reason=None if t.get("face") else
                     "not read"))
    rules = str(event.get("rules") or "pa")
    positions = build_positions(groups, rules)
    bets = {p: str(o["bet"]) for p, o in (event.get("positions") or {}).items()
            if isinstance(o, Mapping) and o.get("bet") is not None}
    banker = str(event.get("banker_position") or "dealer")
    if banker not in positions:
        raise InputError(f"round {rid!r}: the banker's position {banker!r} shows no tile")
    tracker = RoundTracker(n_stable=1, banker=banker, rules=rules,
                           commission=event.get("commission") or None,
                           house_way=str(event.get("house_way") or "reference"), bets=bets,
                           settle_wait=0)
    rnd = tracker.update(positions, FrameHeader(index=int(event.get("frame_index") or 0)))
    if rnd is None:  # the banker is still unreadable: the round as it stands, not settled
        # (its reason: "still not settled after the manual entry: <why>", code and words
        # made by the tracker, vision.schema.SettleReason.MANUAL_UNSETTLED)
        rnd = tracker.flush(SettleReason.MANUAL_UNSETTLED)
        if rnd is None:
            raise InputError(f"round {rid!r}: the entered tiles do not make a round")
    ev = build_round(rnd, str(rid), table_id=str(event.get("table_id")),
                     source=str(event.get("source") or ""),
                     frame_index=int(event.get("frame_index") or 0), time=time or _now(),
                     model_version=str(event.get("model_version") or "unknown"),
                     tiles=tiles, source_file=event.get("source_file")).to_dict()
    ev["alerts"] = merge_alerts(ev["alerts"], round_alerts(ev))
    ev["kind"] = KIND_MANUAL
    ev["manual"] = {"round_time": old.get("round_time") or event.get("time"),
                    "camera_record": old.get("camera_record", camera_record),
                    "entries": sorted(new_entries, key=lambda e: int(e["tile"])), "by": by}
    if correction:
        ev["manual"].update({"correction": True, "supersedes": supersedes,
                             "superseded": superseded})
    return ev


def ack_record(event: Mapping, alert: Mapping, *, by: str | None = None,
               note: str | None = None, time: str | None = None) -> dict:
    """The payload acknowledging ``alert`` of the round ``event`` (module docstring).

    Raises:
        InputError: the alert is not one of the round's alerts.
    """
    want = (str(alert.get("kind")), alert.get("position"))
    found = [a for a in event.get("alerts") or []
             if (str(a.get("kind")), a.get("position")) == want]
    if not found:
        raise InputError(f"round {event.get('round_id')!r} has no alert {want[0]!r} at "
                         f"{want[1]!r}")
    a = found[0]
    round_time = (event.get("manual") or {}).get("round_time") or event.get("time")
    return {"kind": KIND_ACK, "round_id": event.get("round_id"),
            "table_id": event.get("table_id"), "time": time or _now(),
            "ack": {"round_time": round_time,
                    "alert": {"kind": a.get("kind"), "position": a.get("position"),
                              "detail": a.get("detail")},
                    "by": by, "note": note},
            "positions": {}, "alerts": []}


def latest_round(store, table_id: str, round_id: str):
    """``(camera record, newest manual record or None)`` of a stored round.

    Raises:
        InputError: the store holds no camera record of that round of that table.
    """
    camera, manual = None, None
    for r in store.rounds(table_id=table_id, round_id=round_id):
        k = record_kind(r.payload)
        if k == "round":
            camera = r
        elif k == KIND_MANUAL:
            manual = r
    if camera is None:
        raise InputError(f"round {round_id!r} of table {table_id!r} is not in audit store "
                         f"{store.label!r}")
    return camera, manual


def append_manual(store, table_id: str, round_id: str, entries: Sequence[Mapping], *,
                  by: str | None = None, correction: bool = False):
    """Store a manual entry for a stored round (the newest manual record's entries kept);
    returns the new :class:`vision.audit.AuditRecord`. With ``correction`` the entry changes
    faces entered before: a new manual record that supersedes the newest one (both stay in
    the chain; readers take the newest). Raises InputError (see :func:`manual_round`,
    :func:`latest_round`; a correction of a round without a manual record)."""
    camera, manual = latest_round(store, table_id, round_id)
    if correction and manual is None:
        raise InputError(f"round {round_id!r} has no manual entry to correct")
    base = manual.payload if manual is not None else camera.payload
    ev = manual_round(base, entries, by=by, camera_record=camera.seq, correction=correction,
                      supersedes=manual.seq if (correction and manual is not None) else None)
    return store.append(ev, compute_alerts=False)


def append_ack(store, table_id: str, round_id: str, alert: Mapping, *, by: str | None = None,
               note: str | None = None):
    """Store the acknowledgement of one alert of a stored round; returns the record. The
    round's alerts are those of its newest manual record and those of the camera's record (an
    unread tile's alert can be acknowledged after a supervisor entered the tile; the report
    keeps both, :attr:`vision.audit.report.StoredRound.alerts`).

    Raises:
        InputError: the round is not stored, has no such alert, or the alert is already
            acknowledged (:class:`scoring.errors.StateConflict`, ``"... already acknowledged
            (record N)"``: one acknowledgement per alert).
    """
    want = (str(alert.get("kind")), alert.get("position"))
    for r in store.rounds(table_id=table_id, round_id=round_id):
        if record_kind(r.payload) == KIND_ACK:
            a = (r.payload.get("ack") or {}).get("alert") or {}
            if (str(a.get("kind")), a.get("position")) == want:
                raise StateConflict(f"alert {want[0]!r} at {want[1]!r} of round {round_id!r} "
                                    f"is already acknowledged (record {r.seq})")
    camera, manual = latest_round(store, table_id, round_id)
    base = manual.payload if manual is not None else camera.payload
    if manual is not None:  # an alert the camera raised stays, after an entry cleared it
        known = {(str(a.get("kind")), a.get("position")) for a in base.get("alerts") or []}
        extra = [a for a in camera.payload.get("alerts") or []
                 if (str(a.get("kind")), a.get("position")) not in known]
        base = dict(base, alerts=list(base.get("alerts") or []) + extra)
    return store.append(ack_record(base, alert, by=by, note=note), compute_alerts=False)


def setcheck_record(check: Mapping, *, table_id: str, source: str | None = None,
                    by: str | None = None, model_version: str | None = None,
                    reads: Sequence[Mapping] = (), time: str | None = None) -> dict:
    """The payload of one tile set check (module docstring, kind ``"setcheck"``).

    Args:
        check: :meth:`scoring.setcheck.SetCheck.to_dict` of the check.
        table_id: the table checked; ``source``: the picture or camera read (a URL is
            redacted by the store); ``by``: who asked.
        model_version: the models that read the tiles; ``reads``: each tile's
            ``{"face", "state", "confidence"}`` (pixel coordinates are left out).
        time: ISO-8601 UTC (default now).
    """
    block = {k: check[k] for k in ("verdict", "complete", "tiles", "pairs", "counts",
                                   "missing", "extra", "foreign", "unread", "summary")
             if k in check}
    block.update(by=by, reads=[{"face": r.get("face"), "state": r.get("state"),
                                "confidence": r.get("confidence")} for r in reads])
    return {"kind": KIND_SETCHECK, "round_id": "setcheck", "table_id": table_id,
            "time": time or _now(), "source": source, "model_version": model_version,
            "setcheck": block, "positions": {}, "alerts": []}


def append_setcheck(store, check: Mapping, *, table_id: str, **kw):
    """Store one set check (:func:`setcheck_record`, same keyword arguments); returns the
    :class:`vision.audit.AuditRecord`. Raises InputError (a read-only store, another
    table's store)."""
    return store.append(setcheck_record(check, table_id=table_id, **kw),
                        compute_alerts=False)

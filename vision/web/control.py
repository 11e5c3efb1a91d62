"""The dealer display's control actions that write to the audit store: acknowledging an alert
and a supervisor's manual entry of faces the camera could not read (composed by
:class:`vision.web.hub.LiveFeed`; the HTTP side is :func:`vision.web.app.control_router`,
the records :mod:`vision.audit.entries`, docs/web-api.md and docs/audit.md).

Each action opens the store by its path or URL for that action alone (its own connection,
from the web server's worker thread), and one action writes at a time.
"""

from __future__ import annotations

import threading
from typing import Iterable

from scoring.errors import InputError, StateConflict

__all__ = ["AuditControl", "manual_faces"]


class AuditControl:
    """Acknowledgements and manual entries of the rounds a display shows, recorded in its
    audit store.

    Args:
        audit: the audit store (path or URL, or an open store whose ``label`` is its path);
            None: the actions are refused (:class:`scoring.errors.StateConflict`).
        lock: the feed's lock, held while :attr:`acked` is written (the feed reads it for
            :meth:`vision.web.hub.LiveFeed.state`).

    Attributes:
        audit: the store's path or URL (str), or None.
        acked: ``(round_id, kind, position) -> {"record": seq, "by"}`` of the alerts
            acknowledged from this display.
    """

    def __init__(self, audit=None, lock: threading.Lock | None = None) -> None:
        self.audit = None if audit is None else (
            getattr(audit, "label", None) or str(audit))  # path / URL: own connection per use
        self.acked: dict[tuple, dict] = {}
        self._lock = lock if lock is not None else threading.Lock()
        self._control_lock = threading.Lock()  # acks and manual entries, one at a time

    def acknowledged(self, round_id, kind, position) -> bool:
        """True when this alert of ``round_id`` was acknowledged from this display."""
        return (round_id, kind, position) in self.acked

    @staticmethod
    def _stored_event(rounds: Iterable[dict], round_id: str) -> dict:
        for e in rounds:
            if e.get("round_id") == round_id:
                return e
        raise InputError(f"round {round_id!r} is not among the rounds shown")

    def _store(self):
        if self.audit is None:
            raise StateConflict("no audit store: start the display with --audit DB to record "
                             "acknowledgements and manual entries")
        from vision.audit import AuditStore

        return AuditStore(self.audit, create=False)

    def acknowledge(self, rounds: Iterable[dict], round_id: str, kind: str,
                    position: str | None, by: str | None = None,
                    note: str | None = None) -> dict:
        """Acknowledge one alert of a shown round, recorded in the audit store
        (:func:`vision.audit.entries.append_ack`).

        Args:
            rounds: the round events shown (:meth:`vision.web.hub.LiveFeed.history`).

        Returns:
            ``{"ok": True, "action": "ack", "record": seq, "round_id", "kind", "position"}``.

        Raises:
            InputError: a round not shown, an alert the round does not have.
            StateConflict: no audit store.
        """
        from vision.audit.entries import append_ack

        ev = self._stored_event(rounds, round_id)
        with self._control_lock, self._store() as st:  # one control write at a time
            rec = append_ack(st, str(ev.get("table_id")), round_id,
                             {"kind": kind, "position": position}, by=by, note=note)
        with self._lock:
            self.acked[(round_id, kind, position)] = {"record": rec.seq, "by": by}
        return {"ok": True, "action": "ack", "record": rec.seq, "round_id": round_id,
                "kind": kind, "position": position}

    def manual_entry(self, rounds: Iterable[dict], round_id: str, entries,
                     by: str | None = None, correction: bool = False) -> tuple[dict, dict]:
        """A supervisor's faces for tiles the camera could not read, stored in the audit
        store as a manual record beside the camera's
        (:func:`vision.audit.entries.append_manual`).

        Args:
            rounds: the round events shown (:meth:`vision.web.hub.LiveFeed.history`).
            entries: ``[{"tile": index in the event's tiles, "face": "2-4"}]``.
            correction: change faces entered before (a record superseding the newest
                manual record).

        Returns:
            ``(answer, event)``: ``{"ok": True, "action": "manual", "record": seq,
            "round_id", "settled"}`` and the round re-settled from the entry (its JSON form,
            ``kind`` ``"manual"``), for the feed to show and send to its subscribers.

        Raises:
            InputError: a round not shown, a bad tile or face.
            StateConflict: no audit store.
        """
        from vision.audit.entries import append_manual

        ev = self._stored_event(rounds, round_id)
        with self._control_lock, self._store() as st:
            rec = append_manual(st, str(ev.get("table_id")), round_id, entries, by=by,
                                correction=correction)
        return ({"ok": True, "action": "manual", "record": rec.seq, "round_id": round_id,
                 "settled": bool(rec.payload.get("settled"))}, rec.payload)


def manual_faces(last: dict | None) -> dict[str, list]:
    """The face picker of the page: per tile of ``last`` (a round event's JSON form) the
    camera did not read, or whose face was entered by hand, the faces the set still holds for
    it (:func:`vision.audit.entries.possible_faces`); keyed by the tile's index as a string.
    Empty for None."""
    from vision.audit.entries import possible_faces

    entered = {int(e["tile"]) for e in ((last or {}).get("manual") or {}).get("entries")
               or []}
    return {
        str(i): possible_faces(last, i) for i, t in enumerate((last or {}).get("tiles")
                                                             or [])
        if t.get("position") and (t.get("state") == "unknown" or i in entered)}

"""What the camera shows now, for the dealer display: live positions while a deal is being
dealt and read (composed by :class:`vision.web.hub.LiveFeed`).

A position showing fewer than four tiles is being dealt (status ``dealing``, no problems, no
alert) until its tiles have stayed the same ``dealing_frames`` published frames; while a new
deal's still reading is being made, a position with a problem is ``reading`` ("reading the
deal"), not a hand to move. Every other position and every live alert get ``say``, the plain
words of :func:`vision.io.views.plain_reason`. Whether the table still shows the last settled
round (its banker's tiles lie there) is decided here too: the page says "last round" once the
table changed.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from vision.io.views import DEALING, READING, plain_reason, position_name

__all__ = ["LiveTable"]


class LiveTable:
    """The live view of one table: per position the view dict of
    :func:`vision.io.views.live_positions_view` with the dealing / reading streaks applied,
    the live alerts with plain words, and whether the last round is still on the table.

    Plain state, read and written with the feed's lock held: :attr:`positions` (position ->
    view dict), :attr:`alerts` (``[{"kind", "position", "detail", "say"}]``),
    :attr:`last_current` (the table still shows the last round).

    Args:
        dealing_frames: published frames a position with fewer than four tiles must stay the
            same before it is no longer "being dealt".
    """

    def __init__(self, dealing_frames: int = 10) -> None:
        self.dealing_frames = int(dealing_frames)
        self._streaks: dict[str, tuple[tuple, int]] = {}
        self.positions: dict[str, dict] = {}
        self.alerts: list[dict] = []
        self.last_current = False  # the table still shows the last round

    def see(self, live: dict[str, dict] | None, alerts: Sequence[Mapping] | None,
            reading: bool, last_round: dict | None) -> None:
        """One published frame's live view.

        Args:
            live: position -> view dict (:func:`vision.io.views.live_positions_view`; changed
                in place: status, problems, ``say``), or None to keep the previous view.
            alerts: live alerts ``[{"kind", "position", "detail"}]`` (those of positions being
                dealt or read are left out), or None to keep the previous.
            reading: the deal's still reading is being made (``FrameResult.provisional``).
            last_round: the newest settled round event shown, or None.
        """
        dealing: set[str] = set()
        if live is not None:
            dealing = self._mark_dealing(live, reading)
            self.positions = live
            self.last_current = self._still_last_round(live, last_round)
        if alerts is not None:
            self.alerts = [
                dict(a, say=plain_reason(a.get("position"), a.get("detail"), a.get("kind")))
                for a in alerts if a.get("position") not in dealing]

    def round_reported(self) -> None:
        """A round was just reported: it is the table's until a frame shows the table
        changed."""
        self.last_current = True

    def clear(self) -> None:
        """Forget the live positions and alerts (a control reset)."""
        self.positions = {}
        self.alerts = []

    def _still_last_round(self, live: dict[str, dict], last: dict | None) -> bool:
        """True while the table still shows the last round: its banker's tiles are the
        banker's tiles now (else the last round is shown as the last round, not the one on
        the table)."""
        if not last:
            return False
        bank = str(last.get("banker_position", "dealer"))
        was = (last.get("positions") or {}).get(bank) or {}
        now = live.get(bank) or {}
        return sorted(f or "" for f in was.get("tiles") or []) == \
            sorted(f or "" for f in now.get("tiles") or []) and bool(now)

    def _mark_dealing(self, live: dict[str, dict], reading: bool = False) -> set[str]:
        """Positions still being dealt (fewer than four tiles, changed within the last
        ``dealing_frames`` frames): status ``dealing``, no problems, no alert; while the
        deal's still reading is being made (``reading``), a position with a problem: status
        ``reading``, "reading the deal", no alert. Adds ``say`` (plain words) to the others.
        Returns the positions dealt or read (their alerts are left out)."""
        dealing = set()
        streaks = {}
        for pos, v in live.items():
            sig = tuple(v.get("tiles") or ())
            old = self._streaks.get(pos)
            n = old[1] + 1 if old is not None and old[0] == sig else 1
            streaks[pos] = (sig, n)
            if len(sig) < 4 and n < self.dealing_frames:
                dealing.add(pos)
                v.update(status=DEALING, detail=None, problems=[], say=None)
            elif reading and v.get("status") != "set":
                dealing.add(pos)
                v.update(status=READING, detail=None, problems=[],
                         say=f"{position_name(pos)}: reading the deal")
            else:
                v["say"] = (plain_reason(pos, v.get("detail"), code=v.get("code"))
                            if v.get("detail") else None)
        self._streaks = streaks
        return dealing

"""The audit spool: rounds waiting for an audit store that cannot be reached (docs/audit.md,
"When the database is down").

While the database is down (PostgreSQL stopped, the connection lost, an SQLite file made
read-only or failing with I/O errors), :class:`vision.io.sinks.AuditSink` appends each round
to this spool instead: one JSON line per round, written with one ``write`` and fsynced before
the round is reported, in a file opened ``O_NOFOLLOW`` (a symlink planted in its place is
refused, never followed) with mode 0600. When the store answers again the spool is drained in
order, each round appended exactly once (the store's ``(table_id, round_key)`` identity: a
round stored before a crash removed it from the spool is recognised and not stored again),
and only then is the line removed. A spool left by a killed process is drained when the next
session opens the same store.

A line: ``{"v": 1, "store": the store's label, "spooled_at": UTC ISO time, "event": the round
event as given to the store, "replay": the replay id or null, "frame": the key frame (JPEG,
base64) or null}``. A last line without its newline (the process died while writing it) was
never reported and is dropped.
"""

from __future__ import annotations

import base64
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from scoring.errors import InputError

from vision.audit.store import fsync_dir as _fsync_dir

__all__ = ["Spool", "SPOOL_NAME"]

#: The spool's file name inside the store's key-frame folder.
SPOOL_NAME = "spool.jsonl"


class Spool:
    """Rounds queued durably in one JSON-lines file, oldest first.

    Args:
        path: the spool file (created on the first :meth:`add`; its folder too).

    Raises:
        InputError: (on reading) the path is a symlink or not a regular file, or a complete
            line is not a spooled round -- it is never skipped silently.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._entries: list[dict] = self._read()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def entries(self) -> list[dict]:
        """The spooled rounds, oldest first (the line dicts; see the module docstring)."""
        return list(self._entries)

    def _open(self, flags: int) -> int:
        try:
            return os.open(str(self.path), flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            if self.path.is_symlink():
                raise InputError(f"audit spool {str(self.path)!r} is a symlink; refused "
                                 "(remove it)") from None
            raise OSError(exc.errno, exc.strerror, str(self.path)) from None

    def _read(self) -> list[dict]:
        if not os.path.lexists(self.path):
            return []
        fd = self._open(os.O_RDONLY)
        try:
            with os.fdopen(fd, "rb") as f:
                fd = -1
                data = f.read()
        finally:
            if fd >= 0:
                os.close(fd)
        lines = data.split(b"\n")
        complete, tail = lines[:-1], lines[-1]  # a tail without "\n": died mid-write
        out = []
        for no, raw in enumerate(complete, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                obj = None
            if not isinstance(obj, dict) or not isinstance(obj.get("event"), dict):
                raise InputError(f"audit spool {str(self.path)!r} line {no} is not a spooled "
                                 "round; move the file away after checking it")
            out.append(obj)
        if tail.strip():
            self._rewrite(out)  # the torn line was never reported: drop it
        return out

    def add(self, event: dict, frame: bytes | None, replay: str | None, store: str) -> dict:
        """Append one round and fsync it (durable when this returns).

        Args:
            event: the round event (JSON form) as it will be given to the store.
            frame: the key frame as JPEG bytes, or None.
            replay: the replay id of a looped recording (:func:`vision.audit.chain.round_key`).
            store: the store's label (for people reading the file).

        Returns:
            the line written (a dict).

        Raises:
            OSError: the spool cannot be written (naming the file).
        """
        entry = {"v": 1, "store": store,
                 "spooled_at": datetime.now(timezone.utc).isoformat(timespec="milliseconds")
                 .replace("+00:00", "Z"),
                 "event": event, "replay": replay,
                 "frame": base64.b64encode(frame).decode("ascii") if frame else None}
        line = (json.dumps(entry, separators=(",", ":"), ensure_ascii=False) + "\n") \
            .encode("utf-8")
        new = not os.path.lexists(self.path)
        if new:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = self._open(os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            view = memoryview(line)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(self.path)) from None
        finally:
            os.close(fd)
        if new:
            _fsync_dir(self.path.parent)
        self._entries.append(entry)
        return entry

    def remove_first(self, n: int) -> None:
        """Forget the ``n`` oldest rounds (stored meanwhile): the file is rewritten with the
        rest (temporary file, fsync, rename) or removed when none is left."""
        if n <= 0:
            return
        rest = self._entries[n:]
        self._rewrite(rest)
        self._entries = rest

    def _rewrite(self, entries: list[dict]) -> None:
        if not entries:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            _fsync_dir(self.path.parent)
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                for e in entries:
                    f.write((json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n")
                            .encode("utf-8"))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        _fsync_dir(self.path.parent)

    @staticmethod
    def frame_of(entry: dict[str, Any]) -> bytes | None:
        """The key frame (JPEG bytes) of a spooled round, or None."""
        f = entry.get("frame")
        return base64.b64decode(f) if f else None

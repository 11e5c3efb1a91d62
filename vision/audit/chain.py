"""The hash chain of the audit store: canonical JSON, record hashes, the record and verify
result types, and the value checks shared by the store and its readers (docs/architecture.md,
audit)."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from scoring.errors import InputError

MAGIC = "paigow-audit-store"
"""Value of ``magic`` in the ``paigow_audit_meta`` table: marks a database as an audit store."""
SCHEMA_VERSION = 1
"""The schema version this code writes and reads (table ``paigow_audit_schema``)."""
APPLICATION_ID = 0x50475741  # "PGWA"
"""SQLite ``PRAGMA application_id`` of an audit store file."""
GENESIS_HASH = "0" * 64
"""``prev_hash`` of the first record (of each table's chain)."""
CHAIN_PER_TABLE = "table"
"""``chain`` in ``paigow_audit_meta`` of stores created now: each table's records form their own
chain (``prev_hash`` is the hash of the previous record *of the same table*), so tables written
by separate workers are verified, exported and truncation-checked one by one."""
CHAIN_STORE = "store"
"""The chain of stores without a ``chain`` key (written before per-table chains): one chain
over every record in id order."""

_HEX64 = re.compile(r"^[0-9a-f]{64}$")

def canonical_json(obj: Any) -> str:
    """The canonical JSON text of ``obj``: sorted keys, no spaces, UTF-8 (non-ASCII kept), no
    NaN/Infinity. Decimals are written as strings (money is exact text).

    Raises:
        InputError: when ``obj`` holds something JSON cannot carry (NaN, a set, bytes...).
    """
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise InputError(f"round event is not JSON-ready: {exc}") from None


def _json_default(o):
    if isinstance(o, Decimal):
        return str(o)
    if hasattr(o, "tolist"):  # numpy scalars and arrays
        return o.tolist()
    raise TypeError(f"{type(o).__name__} {o!r} is not JSON serialisable")


def record_hash(prev_hash: str, payload: str, frame_sha256: str) -> str:
    """``SHA-256(prev_hash + payload + frame_sha256)`` as 64 hex digits (see module docstring)."""
    return hashlib.sha256((prev_hash + payload + frame_sha256).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class AuditRecord:
    """One stored round.

    Attributes:
        seq: record id, 1, 2, ... in chain order (unique in the store).
        round_id, table_id, time: from the event (``time`` ISO-8601 UTC text).
        payload_json: the stored canonical JSON text (the hashed bytes, UTF-8).
        payload: the stored event (dict parsed from ``payload_json`` on first use; includes
            ``alerts``).
        frame_path: absolute path of the key-frame JPEG, or None.
        frame_sha256: its SHA-256 hex, or ``""``.
        prev_hash, hash: the chain hashes (64 hex digits).
    """

    seq: int
    round_id: str
    table_id: str
    time: str
    payload_json: str
    frame_path: Path | None
    frame_sha256: str
    prev_hash: str
    hash: str

    @functools.cached_property
    def payload(self) -> dict:
        """The stored event as a dict (parsed once)."""
        return json.loads(self.payload_json)

    @property
    def alerts(self) -> list[dict]:
        """The alerts stored with the round (``[{"kind", "position", "detail"}]``)."""
        return list(self.payload.get("alerts") or [])


@dataclass
class VerifyResult:
    """Outcome of :func:`verify`.

    Attributes:
        ok: True when every record's links, hashes and frames check.
        rounds: number of records in the store.
        head_hash: hash of the last record (:data:`GENESIS_HASH` when empty); keep it outside
            the store to detect truncation later.
        broken_seq, broken_round_id: the first broken record (None when ok).
        reason: why it is broken (``"payload changed ..."``, ``"prev link broken ..."``,
            ``"frame missing ..."``, ``"frame changed ..."``, ``"record missing ..."``,
            ``"column ... differs ..."``), None when ok.
        frames_checked: how many key frames were re-hashed.
        orphan_frames: frame files in the frames folder no record names (a crash between the
            frame write and the commit leaves one; not an integrity failure).
    """

    ok: bool
    rounds: int
    head_hash: str
    broken_seq: int | None = None
    broken_round_id: str | None = None
    reason: str | None = None
    frames_checked: int = 0
    orphan_frames: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready dict of every field."""
        return {"ok": self.ok, "rounds": self.rounds, "head_hash": self.head_hash,
                "broken_seq": self.broken_seq, "broken_round_id": self.broken_round_id,
                "reason": self.reason, "frames_checked": self.frames_checked,
                "orphan_frames": list(self.orphan_frames)}

    def __str__(self) -> str:
        if self.ok:
            return (f"ok: {self.rounds} rounds, chain intact, {self.frames_checked} frames "
                    f"checked, head {self.head_hash}")
        return (f"BROKEN at record {self.broken_seq} (round {self.broken_round_id}): "
                f"{self.reason}")


def _opt_str(v) -> str | None:
    return None if v is None else str(v)


def _money(value, what: str) -> Decimal:
    if isinstance(value, (bool, float)):
        raise InputError(f"{what} {value!r} is not an exact decimal (money is text, e.g. '0.95')")
    try:
        d = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        raise InputError(f"{what} {value!r} is not a decimal amount") from None
    if not d.is_finite():
        raise InputError(f"{what} {value!r} is not a finite amount")
    return d


def parse_time(value, what: str = "time") -> datetime:
    """An ISO-8601 time as an aware UTC datetime (``...Z``, an offset, or naive = UTC).

    Raises:
        InputError: naming ``what`` and the value when it is not ISO-8601 text.
    """
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{what} {value!r} is not an ISO-8601 time")
    s = value.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        t = datetime.fromisoformat(s)
    except ValueError:
        raise InputError(f"{what} {value!r} is not an ISO-8601 time") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc)

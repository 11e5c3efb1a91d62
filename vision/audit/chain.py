"""The hash chain of the audit store: canonical JSON, record hashes, the record and verify
result types, and the value checks shared by the store and its readers (docs/architecture.md,
audit)."""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any, Mapping

from scoring.errors import InputError

from vision.schema import round_number  # noqa: F401  (re-exported: the store numbers rounds)

MAGIC = "paigow-audit-store"
"""Value of ``magic`` in the ``paigow_audit_meta`` table: marks a database as an audit store."""
SCHEMA_VERSION = 2
"""The schema version this code writes (table ``paigow_audit_schema``). Version 1 stores (hash
over payload and frame only, no round key, no MAC) are still read and verified; appending to
them is refused."""
READ_VERSIONS = (1, 2)
"""Schema versions this code reads and verifies."""
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
    """Schema version 1: ``SHA-256(prev_hash + payload + frame_sha256)`` as 64 hex digits."""
    return hashlib.sha256((prev_hash + payload + frame_sha256).encode("utf-8")).hexdigest()


HASHED_COLUMNS = ("seq", "round_id", "table_id", "time", "rules", "model_version",
                  "alert_kinds", "frame_file", "frame_sha256", "round_key", "payload", "prev_hash")
"""Schema version 2: every column of a record but ``hash`` and ``mac``, in hash order."""


def record_hash_v2(row: Mapping[str, Any]) -> str:
    """Schema version 2: SHA-256 (64 hex digits) of the canonical JSON array
    ``["paigow-audit-v2", <each column of HASHED_COLUMNS>]`` -- every stored column (the
    indexed copies ``rules``, ``model_version``, ``alert_kinds`` and ``round_key`` included), so
    an edit of any one breaks the record's hash. ``row``: column name -> value."""
    values = ["paigow-audit-v2"] + [row[c] for c in HASHED_COLUMNS]
    return hashlib.sha256(canonical_json(values).encode("utf-8")).hexdigest()


def meta_hash(meta: Mapping[str, str], schema_rows) -> str:
    """The ``prev_hash`` of the first record of a version 2 store: SHA-256 of the canonical JSON
    of the ``paigow_audit_meta`` table (key -> value) and the ``paigow_audit_schema`` rows
    (``[[version, applied_at], ...]`` by version), so the meta table is covered by the chain:
    an edit of it breaks record 1's link."""
    obj = {"meta": dict(meta), "schema": sorted([int(v), str(t)] for v, t in schema_rows)}
    return hashlib.sha256(("paigow-audit-meta:" + canonical_json(obj)).encode("utf-8")) \
        .hexdigest()


def anchor_hash(heads: Mapping[str, str], genesis: str) -> str:
    """The hash an anchor keeps (``paigow audit anchor``): SHA-256 of the canonical JSON of
    every chain's head (table id -> hash of its newest record; ``""`` -> the newest record of a
    store-wide chain) and the chains' start (:func:`meta_hash`), so a rewrite of any table's
    chain, not only of the newest record's, changes it."""
    obj = {"genesis": genesis, "heads": dict(heads)}
    return hashlib.sha256(("paigow-audit-anchor:" + canonical_json(obj)).encode("utf-8")) \
        .hexdigest()


def record_mac(key: bytes, hash_hex: str) -> str:
    """HMAC-SHA256 (64 hex digits) of a record's ``hash`` under the secret ``key``: whoever
    lacks the key cannot write a record (or recompute a changed chain) that verifies with
    it. The key is never stored in the store."""
    return hmac.new(key, ("paigow-audit-record:" + hash_hex).encode("ascii"),
                    hashlib.sha256).hexdigest()


def key_id(key: bytes) -> str:
    """A public fingerprint of a key (16 hex digits of an HMAC of a fixed text; the key cannot
    be recovered from it): stored in the meta table so a wrong key is named as such."""
    return hmac.new(key, b"paigow-audit-key-id", hashlib.sha256).hexdigest()[:16]


_ROUND_KEY_FIELDS = ("tiles", "states", "high", "low", "role", "result", "bet", "net",
                     "commission")


def round_key(payload: Mapping[str, Any], replay: str | None = None) -> str:
    """The identity of a round for exactly-once storage (64 hex digits): SHA-256 of the
    canonical JSON of the table, the source, the round's content (each position's faces,
    states, hands, result and money; each tile's face, state and position -- not its pixel
    coordinates) and, for a file source, the frame index. The source is the event's
    ``source_id`` (:func:`vision.sources.source_id`: a file by its content -- its size and
    first and last MiB -- so one video named relatively, absolutely, through a symlink, a hard
    link or a byte copy is one source); events without one (older versions) use ``source`` and
    ``source_file`` as typed.

    A round seen again -- the settled round still in view after a restart, the same file
    re-read, a second process on the same camera -- has the same key; the store keeps one
    record per ``(table_id, round_key)`` (docs/audit.md, exactly once). For cameras and
    streams the frame index restarts with the process and is left out: two rounds of one table
    with every face at every position and every result identical are one round (for shuffled
    tiles a chance far below one in 10^12 per pair of rounds).

    ``replay``: a recording played in a loop on purpose (``serve --loop``, a pit table's demo
    video) names its session and pass here, so each pass is new rounds, not the same ones.
    """
    if payload.get("kind") not in (None, "round"):  # a manual entry, an acknowledgement:
        obj = {"entry": dict(payload), "replay": replay}  # each one is its own record
        return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()
    positions = payload.get("positions") or {}
    pos = {str(p): {k: o.get(k) for k in _ROUND_KEY_FIELDS} for p, o in positions.items()
           if isinstance(o, Mapping)}
    tiles = sorted([str(t.get("face") or ""), str(t.get("state") or ""),
                    str(t.get("position") or "")]
                   for t in (payload.get("tiles") or []) if isinstance(t, Mapping))
    file = payload.get("source_file")
    sid = payload.get("source_id")
    if sid:  # where the frame came from, by the file itself -- never the typed path
        where = {"source_id": sid,
                 "frame_index": payload.get("frame_index") if str(sid).startswith("file-")
                 else None}
    else:  # events of older versions
        where = {"source": payload.get("source"), "source_file": file,
                 "frame_index": payload.get("frame_index") if file else None}
    obj = {"table_id": payload.get("table_id"), **where,
           "banker_position": payload.get("banker_position"),
           "settled": payload.get("settled", True), "positions": pos, "tiles": tiles}
    if replay is not None:
        obj["replay"] = str(replay)
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()


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
        round_key: the round's identity (:func:`round_key`; ``""`` in version 1 stores).
        mac: the record's HMAC-SHA256 (``""`` unkeyed).
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
    round_key: str = ""
    mac: str = ""

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
            frame write and the commit leaves one, of the record after the last; frames of
            records further on mean records were removed from the end: a failure).
        keyed: the store was written with a secret key (its meta table names a key id).
        macs_checked: every record's HMAC was checked with the key given (False: no key).
        anchor: the anchor checked (``{"head_hash", "rounds"}``), or None.
        notes: remarks that are not failures (a keyed store checked without its key, records
            after the anchor with ``allow_after``...).
        suspect_seq: the first record whose content can no longer be trusted (None when ok;
            read :attr:`marked_from`): the broken record itself, or for a broken link the
            record it links to (that record may have been edited and its hash recomputed), or
            1 when the store differs from its anchor (the rewrite may lie anywhere before).
    """

    ok: bool
    rounds: int
    head_hash: str
    broken_seq: int | None = None
    broken_round_id: str | None = None
    reason: str | None = None
    frames_checked: int = 0
    orphan_frames: list[str] = field(default_factory=list)
    keyed: bool = False
    macs_checked: bool = False
    anchor: dict | None = None
    notes: list[str] = field(default_factory=list)
    suspect_seq: int | None = None

    @property
    def marked_from(self) -> int | None:
        """The record id from which a reader of a broken store marks what it shows as not
        verified (:attr:`suspect_seq`, else :attr:`broken_seq`); None when ok."""
        if self.ok:
            return None
        return self.suspect_seq if self.suspect_seq is not None else self.broken_seq

    def to_dict(self) -> dict:
        """JSON-ready dict of every field."""
        return {"ok": self.ok, "rounds": self.rounds, "head_hash": self.head_hash,
                "broken_seq": self.broken_seq, "broken_round_id": self.broken_round_id,
                "reason": self.reason, "frames_checked": self.frames_checked,
                "orphan_frames": list(self.orphan_frames), "keyed": self.keyed,
                "macs_checked": self.macs_checked, "anchor": self.anchor,
                "notes": list(self.notes), "suspect_seq": self.marked_from}

    def __str__(self) -> str:
        if self.ok:
            return (f"ok: {self.rounds} rounds, chain intact, {self.frames_checked} frames "
                    f"checked, " + ("MACs checked, " if self.macs_checked else "")
                    + ("anchor matched, " if self.anchor else "") + f"head {self.head_hash}")
        rnd = f" (round {self.broken_round_id})" if self.broken_round_id else ""
        return f"BROKEN at record {self.broken_seq}{rnd}: {self.reason}"


def _opt_str(v) -> str | None:
    return None if v is None else str(v)


def _money(value, what: str) -> Decimal:
    if isinstance(value, (bool, float)):
        raise InputError(f"{what} {value!r} is not an exact decimal (money is text, e.g. '0.95')")
    from scoring.settle import parse_amount

    return parse_amount(value, what)  # the one money grammar: bounded, no exponent


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

"""Append-only, hash-chained audit store of settled rounds (SQLite by default).

One record per settled round (a round event, .agents/EVENT_SCHEMA.md): the event itself as
canonical JSON -- every position's tiles, high and low hands, results and net amounts, the
dealer's setting and whether it is the house way, rules profile, model version, per-tile
confidence -- plus the integrity alerts of :mod:`vision.alerts`, an optional key frame (JPEG)
and two hashes that chain the records:

* ``payload``: the event as canonical JSON (``sort_keys=True``, separators ``,`` and ``:``,
  UTF-8, no NaN); its ``alerts`` list is the event's own alerts merged with
  :func:`vision.alerts.round_alerts` (one per ``(kind, position)``).
* ``frame_sha256``: SHA-256 (hex) of the key-frame JPEG bytes, or ``""`` when none.
* ``hash = SHA-256(prev_hash + payload + frame_sha256)`` over the UTF-8 bytes of the plain
  concatenation (both hashes are 64 lower-case hex digits or empty, the payload ends in ``}``, so
  the concatenation is unambiguous). ``prev_hash`` is the previous record's ``hash``; the first
  record's is 64 zeros (:data:`GENESIS_HASH`).

:func:`verify` recomputes the chain and names the first broken record and why. What the chain
does not see by itself: removing the *last* records (truncation) leaves a valid shorter chain;
keep :attr:`VerifyResult.head_hash` and :attr:`VerifyResult.rounds` outside the store (a daily
report, a log line) to detect it.

Storage
-------
SQLite (standard library): one database file; key frames in the folder ``<db>.frames/`` beside
it (e.g. ``audit.db`` -> ``audit.db.frames/00000042_<sha16>.jpg``; the record stores the file
name, so database and folder move together). Settings, chosen for crash safety:

* ``journal_mode=WAL``: a crash (process killed, power lost) never leaves a half-written
  transaction visible; readers (verify, payout checks) do not block the writer.
* ``synchronous=FULL``: the WAL is fsynced at every commit, so a round reported as appended
  survives a power loss too (``NORMAL`` with WAL is corruption-safe but may lose the last commits
  on power loss; an audit log should not). The cost is one fsync per round (see
  scripts/bench_audit.py).
* ``PRAGMA application_id`` = :data:`APPLICATION_ID` and the table ``paigow_audit_meta`` with
  ``magic`` = :data:`MAGIC` mark the file as ours; ``paigow_audit_schema`` holds the schema
  version.
* Append-only: triggers abort every ``UPDATE`` and ``DELETE`` on the three tables.
* ``seq INTEGER PRIMARY KEY`` is the SQLite rowid: verify reads the chain in storage order.

Each :meth:`AuditStore.append` is one transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``): the key
frame is written to a temporary name, fsynced, renamed into place and the folder fsynced *before*
the row commits; a crash in between leaves at most an orphan frame file (never referenced, and
overwritten by nothing: names carry the hash) and never a row without its frame.

PostgreSQL: pass a URL (``postgresql://user@host/db``); the same SQL runs through a thin DB-API
adapter over ``psycopg`` (version 3, if installed; not a dependency). Key frames then go to
``frames_dir`` (required when a frame is appended). The PostgreSQL path is written to the same
portable SQL but only SQLite is tested.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sqlite3
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from scoring.errors import InputError

__all__ = [
    "AuditStore",
    "AuditRecord",
    "VerifyResult",
    "verify",
    "canonical_json",
    "record_hash",
    "GENESIS_HASH",
    "MAGIC",
    "SCHEMA_VERSION",
    "APPLICATION_ID",
    "check_payouts",
    "parse_time",
]

MAGIC = "paigow-audit-store"
"""Value of ``magic`` in the ``paigow_audit_meta`` table: marks a database as an audit store."""
SCHEMA_VERSION = 1
"""The schema version this code writes and reads (table ``paigow_audit_schema``)."""
APPLICATION_ID = 0x50475741  # "PGWA"
"""SQLite ``PRAGMA application_id`` of an audit store file."""
GENESIS_HASH = "0" * 64
"""``prev_hash`` of the first record."""

_SQLITE_HEADER = b"SQLite format 3\x00"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")

# Portable SQL (SQLite and PostgreSQL): "?" placeholders are rewritten per backend.
_TABLES = (
    """CREATE TABLE paigow_audit_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL)""",
    """CREATE TABLE paigow_audit_schema (
        version INTEGER PRIMARY KEY,
        applied_at TEXT NOT NULL)""",
    """CREATE TABLE paigow_rounds (
        seq INTEGER PRIMARY KEY,
        round_id TEXT NOT NULL,
        table_id TEXT NOT NULL,
        time TEXT NOT NULL,
        rules TEXT,
        model_version TEXT,
        alert_kinds TEXT NOT NULL,
        frame_file TEXT NOT NULL,
        frame_sha256 TEXT NOT NULL,
        payload TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        UNIQUE (table_id, round_id, time))""",
    "CREATE INDEX paigow_rounds_round_id ON paigow_rounds (round_id)",
    "CREATE INDEX paigow_rounds_time ON paigow_rounds (time)",
)
_GUARDED = ("paigow_audit_meta", "paigow_audit_schema", "paigow_rounds")
_COLUMNS = ("seq, round_id, table_id, time, rules, model_version, alert_kinds, frame_file, "
            "frame_sha256, payload, prev_hash, hash")


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


# --------------------------------------------------------------------------- backends


class _SQLiteBackend:
    name = "sqlite"

    def __init__(self, path: Path, create: bool):
        self.path = path
        self.label = str(path)
        exists = path.exists()
        if exists:
            if path.is_dir():
                raise InputError(f"audit store {str(path)!r} is a folder, not a database file")
            try:
                with open(path, "rb") as f:
                    head = f.read(len(_SQLITE_HEADER))
            except OSError as exc:
                raise InputError(f"cannot read audit store {str(path)!r}: {exc}") from None
            if head and head != _SQLITE_HEADER:
                raise InputError(f"{str(path)!r} is not an audit store (not an SQLite database)")
            if not head and not create:
                raise InputError(f"{str(path)!r} is not an audit store (empty file)")
        elif not create:
            raise InputError(f"audit store {str(path)!r} does not exist")
        else:
            if not path.parent.exists():
                raise InputError(f"folder of audit store {str(path)!r} does not exist")
        try:
            self.conn = sqlite3.connect(str(path), isolation_level=None, timeout=30.0)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"cannot open audit store {str(path)!r}: {exc}") from None
        self.frames_default = Path(str(path) + ".frames")

    def configure(self) -> None:
        """Crash-safety settings; called once the file is known to be ours (a foreign file is
        never modified)."""
        mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise InputError(f"audit store {self.label!r}: cannot enable WAL mode (got {mode!r})")
        self.conn.execute("PRAGMA synchronous=FULL")

    def sql(self, text: str) -> str:
        return text

    def execute(self, text: str, params=()):
        return self.conn.execute(text, params)

    def table_names(self) -> set[str]:
        rows = self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
        return {r[0] for r in rows}

    def begin_write(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def begin_read(self) -> None:
        self.conn.execute("BEGIN")

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    def create_extra(self) -> None:
        self.conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        for t in _GUARDED:
            for op in ("UPDATE", "DELETE"):
                self.conn.execute(
                    f"CREATE TRIGGER {t}_no_{op.lower()} BEFORE {op} ON {t} BEGIN "
                    f"SELECT RAISE(ABORT, 'paigow audit store is append-only: {op} refused'); "
                    "END")

    def close(self) -> None:
        self.conn.close()

    errors = (sqlite3.DatabaseError,)
    integrity_errors = (sqlite3.IntegrityError,)


class _PostgresBackend:  # pragma: no cover - needs a server; written to the same portable SQL
    name = "postgresql"

    def __init__(self, url: str, create: bool):
        try:
            import psycopg
        except ImportError:
            raise InputError(f"audit store URL {url!r} needs psycopg (pip install psycopg)") \
                from None
        self.label = re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)
        try:
            self.conn = psycopg.connect(url, autocommit=True)
        except psycopg.Error as exc:
            raise InputError(f"cannot connect to audit store {self.label!r}: {exc}") from None
        self.frames_default = None
        self.errors = (psycopg.Error,)
        self.integrity_errors = (psycopg.IntegrityError,)

    def configure(self) -> None:
        pass

    def sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def execute(self, text: str, params=()):
        return self.conn.execute(self.sql(text), params)

    def table_names(self) -> set[str]:
        rows = self.conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema()").fetchall()
        return {r[0] for r in rows}

    def begin_write(self) -> None:
        self.conn.execute("BEGIN")
        self.conn.execute("LOCK TABLE paigow_rounds IN EXCLUSIVE MODE")

    def begin_read(self) -> None:
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        self.conn.execute("ROLLBACK")

    def create_extra(self) -> None:
        self.conn.execute(
            "CREATE OR REPLACE FUNCTION paigow_append_only() RETURNS trigger AS $$ BEGIN "
            "RAISE EXCEPTION 'paigow audit store is append-only: % refused', TG_OP; END; "
            "$$ LANGUAGE plpgsql")
        for t in _GUARDED:
            self.conn.execute(
                f"CREATE TRIGGER {t}_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON {t} "
                "FOR EACH STATEMENT EXECUTE FUNCTION paigow_append_only()")

    def close(self) -> None:
        self.conn.close()


def _open_backend(path_or_url, create: bool):
    s = str(path_or_url)
    if re.match(r"^postgres(ql)?://", s):
        return _PostgresBackend(s, create)
    if "://" in s:
        raise InputError(f"audit store {s!r}: unsupported URL (a file path or postgresql://...)")
    return _SQLiteBackend(Path(s), create)


# --------------------------------------------------------------------------- the store


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(str(path), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class AuditStore:
    """The audit store of one table (or several): append rounds, read them back, verify.

    Args:
        path_or_url: an SQLite file path (created with its schema when missing) or a
            ``postgresql://`` URL (needs psycopg).
        table_id: when given, the store's table: an event without ``table_id`` gets it, an event
            naming another table is refused.
        frames_dir: folder for key frames (default ``<db>.frames`` beside an SQLite file;
            required for PostgreSQL when frames are appended).
        create: create the file and schema when missing (False: a missing file is an error).
        jpeg_quality: quality (0..100) used when a frame is given as an image array.

    Raises:
        InputError: naming the file when it is not SQLite, is SQLite but not an audit store
            (no ``paigow_audit_meta`` magic), has a newer schema version, or does not exist
            with ``create=False``.

    Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path_or_url: str | os.PathLike, *, table_id: str | None = None,
                 frames_dir: str | os.PathLike | None = None, create: bool = True,
                 jpeg_quality: int = 90):
        self._db = _open_backend(path_or_url, create)
        self.label = self._db.label
        self.table_id = table_id
        self.jpeg_quality = int(jpeg_quality)
        self.frames_dir = Path(frames_dir) if frames_dir is not None else self._db.frames_default
        try:
            self._check_or_create(create)
        except InputError:
            self._db.close()
            raise
        except self._db.errors as exc:
            self._db.close()
            raise InputError(f"{self.label!r} is not an audit store ({exc})") from None

    # ---------------------------------------------------------------- schema

    def _check_or_create(self, create: bool) -> None:
        names = self._db.table_names()
        if "paigow_audit_meta" not in names:
            if names or not create:
                what = ", ".join(sorted(names)[:5]) or "no tables"
                raise InputError(f"{self.label!r} is not an audit store (no paigow_audit_meta "
                                 f"table; holds {what})")
            self._db.configure()
            self._create()
            return
        rows = dict(self._db.execute("SELECT key, value FROM paigow_audit_meta").fetchall())
        if rows.get("magic") != MAGIC:
            raise InputError(f"{self.label!r} is not an audit store (magic "
                             f"{rows.get('magic')!r}, expected {MAGIC!r})")
        if "paigow_audit_schema" not in names or "paigow_rounds" not in names:
            raise InputError(f"{self.label!r} is a damaged audit store (tables missing)")
        v = self._db.execute("SELECT MAX(version) FROM paigow_audit_schema").fetchone()[0]
        if v is None or int(v) > SCHEMA_VERSION:
            raise InputError(f"audit store {self.label!r} has schema version {v}; this program "
                             f"reads version {SCHEMA_VERSION}")
        self.schema_version = int(v)
        self._db.configure()

    def _create(self) -> None:
        db = self._db
        db.begin_write() if db.name == "sqlite" else db.execute("BEGIN")
        try:
            for stmt in _TABLES:
                db.execute(stmt)
            db.execute("INSERT INTO paigow_audit_meta (key, value) VALUES (?, ?)",
                       ("magic", MAGIC))
            db.execute("INSERT INTO paigow_audit_meta (key, value) VALUES (?, ?)",
                       ("created", _now_iso()))
            db.execute("INSERT INTO paigow_audit_schema (version, applied_at) VALUES (?, ?)",
                       (SCHEMA_VERSION, _now_iso()))
            db.create_extra()
            db.commit()
        except BaseException:
            db.rollback()
            raise
        self.schema_version = SCHEMA_VERSION

    # ---------------------------------------------------------------- writing

    def append(self, event: Mapping, frame=None, *, compute_alerts: bool = True) -> AuditRecord:
        """Append one settled round (one transaction; durable when it returns).

        Args:
            event: a round event dict (.agents/EVENT_SCHEMA.md); needs ``round_id`` and
                ``time`` (ISO-8601) and ``positions``; ``table_id`` defaults to the store's.
            frame: the key frame: an image array (HxWx3 uint8 BGR; encoded to JPEG), JPEG bytes,
                a path to a JPEG file, or None.
            compute_alerts: merge :func:`vision.alerts.round_alerts` into the event's alerts.

        Returns:
            the stored :class:`AuditRecord`.

        Raises:
            InputError: for an event without round id/time/positions, a bad time or money
                text, another table's event, a round already stored (same table, round id and
                time), or an unreadable frame.
        """
        return self.append_many([(event, frame)], compute_alerts=compute_alerts)[0]

    def append_many(self, items: Iterable, *, compute_alerts: bool = True) -> list[AuditRecord]:
        """Append several rounds in ONE transaction (all or none), e.g. to import an events
        file. ``items``: events, or ``(event, frame)`` pairs. Same errors as :meth:`append`."""
        prepared = []
        for item in items:
            event, frame = item if isinstance(item, tuple) else (item, None)
            prepared.append((self._prepare(event, compute_alerts), frame))
        if not prepared:
            return []
        db = self._db
        written: list[Path] = []
        out: list[AuditRecord] = []
        db.begin_write()
        try:
            row = db.execute(
                "SELECT seq, hash FROM paigow_rounds ORDER BY seq DESC LIMIT 1").fetchone()
            seq, prev = (int(row[0]), row[1]) if row else (0, GENESIS_HASH)
            for payload_obj, frame in prepared:
                seq += 1
                dup = db.execute(
                    "SELECT seq FROM paigow_rounds WHERE table_id = ? AND round_id = ? AND "
                    "time = ?", (payload_obj["table_id"], payload_obj["round_id"],
                                 payload_obj["time"])).fetchone()
                if dup:
                    raise InputError(
                        f"round {payload_obj['round_id']!r} of table "
                        f"{payload_obj['table_id']!r} at {payload_obj['time']} is already "
                        f"recorded in {self.label!r} (record {dup[0]})")
                payload = canonical_json(payload_obj)
                frame_file, frame_sha = "", ""
                if frame is not None:
                    frame_file, frame_sha, fpath = self._write_frame(seq, frame)
                    written.append(fpath)
                h = record_hash(prev, payload, frame_sha)
                kinds = ",".join(sorted({a["kind"] for a in payload_obj["alerts"]}))
                db.execute(
                    f"INSERT INTO paigow_rounds ({_COLUMNS}) VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (seq, payload_obj["round_id"], payload_obj["table_id"], payload_obj["time"],
                     _opt_str(payload_obj.get("rules")),
                     _opt_str(payload_obj.get("model_version")), kinds, frame_file, frame_sha,
                     payload, prev, h))
                out.append(AuditRecord(seq, payload_obj["round_id"], payload_obj["table_id"],
                                       payload_obj["time"], payload,
                                       self.frames_dir / frame_file if frame_file else None,
                                       frame_sha, prev, h))
                prev = h
            db.commit()
        except BaseException as exc:
            try:
                db.rollback()
            finally:
                for p in written:  # never referenced by a committed row
                    try:
                        p.unlink()
                    except OSError:
                        pass
            if isinstance(exc, db.integrity_errors):
                raise InputError(f"audit store {self.label!r}: {exc}") from None
            raise
        return out

    def _prepare(self, event: Mapping, compute_alerts: bool) -> dict:
        if not isinstance(event, Mapping):
            raise InputError(f"a round event is a JSON object, got {type(event).__name__}")
        ev = dict(event)  # shallow copy: only top-level keys (table_id, alerts) are replaced
        rid = ev.get("round_id")
        if not isinstance(rid, str) or not rid.strip():
            raise InputError(f"round event without a round_id (got {rid!r})")
        tid = ev.get("table_id")
        if tid is None:
            if self.table_id is None:
                raise InputError(f"round {rid!r} has no table_id and the store has none")
            tid = ev["table_id"] = self.table_id
        elif self.table_id is not None and tid != self.table_id:
            raise InputError(f"round {rid!r} is from table {tid!r}; this store records table "
                             f"{self.table_id!r}")
        if not isinstance(tid, str) or not tid:
            raise InputError(f"round {rid!r}: table_id {tid!r} is not text")
        parse_time(ev.get("time"), what=f"time of round {rid!r}")
        positions = ev.get("positions")
        if not isinstance(positions, dict) or not positions:
            raise InputError(f"round {rid!r} has no positions")
        for pos, p in positions.items():
            if not isinstance(p, dict):
                raise InputError(f"round {rid!r}: position {pos!r} is not an object")
            for key in ("net", "bet", "commission"):
                if p.get(key) is not None:
                    _money(p[key], f"round {rid!r} position {pos!r} {key}")
        given = [a for a in (ev.get("alerts") or []) if isinstance(a, dict) and "kind" in a]
        if compute_alerts:
            from .alerts import merge_alerts, round_alerts

            ev["alerts"] = merge_alerts(given, round_alerts(ev))
        else:
            ev["alerts"] = given
        return ev

    def _write_frame(self, seq: int, frame) -> tuple[str, str, Path]:
        if self.frames_dir is None:
            raise InputError(f"audit store {self.label!r} has no frames folder (pass frames_dir)")
        data = _frame_bytes(frame, self.jpeg_quality)
        sha = hashlib.sha256(data).hexdigest()
        self.frames_dir.mkdir(parents=True, exist_ok=True)
        name = f"{seq:08d}_{sha[:16]}.jpg"
        final = self.frames_dir / name
        fd, tmp = tempfile.mkstemp(prefix=f".{seq:08d}_", suffix=".tmp", dir=self.frames_dir)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        _fsync_dir(self.frames_dir)
        return name, sha, final

    # ---------------------------------------------------------------- reading

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM paigow_rounds").fetchone()[0])

    def rounds(self, *, round_id: str | None = None, table_id: str | None = None,
               start: str | None = None, end: str | None = None) -> Iterator[AuditRecord]:
        """Stored rounds in chain order, optionally filtered (``start <= time < end`` compares
        the ISO text, which orders correctly for the UTC ``...Z`` form the pipeline writes)."""
        where, params = [], []
        for col, op, val in (("round_id", "=", round_id), ("table_id", "=", table_id),
                             ("time", ">=", start), ("time", "<", end)):
            if val is not None:
                where.append(f"{col} {op} ?")
                params.append(val)
        sql = f"SELECT {_COLUMNS} FROM paigow_rounds"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY seq"
        for row in self._db.execute(sql, tuple(params)).fetchall():
            yield self._record(row)

    def get(self, seq: int) -> AuditRecord:
        """The record with id ``seq``. Raises InputError when there is none."""
        row = self._db.execute(f"SELECT {_COLUMNS} FROM paigow_rounds WHERE seq = ?",
                               (int(seq),)).fetchone()
        if row is None:
            raise InputError(f"no record {seq!r} in audit store {self.label!r}")
        return self._record(row)

    def last_record(self, table_id: str | None = None) -> AuditRecord | None:
        """The newest stored record (of ``table_id`` when given; highest ``seq``), or None
        when there is none. Used by ``paigow run --audit`` to continue the round numbering of
        a table after a restart."""
        sql = f"SELECT {_COLUMNS} FROM paigow_rounds"
        params: tuple = ()
        if table_id is not None:
            sql += " WHERE table_id = ?"
            params = (table_id,)
        row = self._db.execute(sql + " ORDER BY seq DESC LIMIT 1", params).fetchone()
        return self._record(row) if row is not None else None

    def _record(self, row) -> AuditRecord:
        (seq, rid, tid, t, _rules, _mv, _kinds, ffile, fsha, payload, prev, h) = row
        return AuditRecord(int(seq), rid, tid, t, payload,
                           (self.frames_dir / ffile) if ffile and self.frames_dir else None,
                           fsha, prev, h)

    def verify(self, *, check_frames: bool = True, deep: bool = False) -> VerifyResult:
        """Recompute the whole chain (see :func:`verify`)."""
        return _verify_store(self, check_frames, deep)

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def __enter__(self) -> "AuditStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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


def _frame_bytes(frame, quality: int) -> bytes:
    if isinstance(frame, (bytes, bytearray, memoryview)):
        data = bytes(frame)
    elif isinstance(frame, (str, os.PathLike)):
        try:
            data = Path(frame).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read key frame {str(frame)!r}: {exc}") from None
    else:
        import cv2
        import numpy as np

        arr = np.asarray(frame)
        if arr.dtype != np.uint8 or arr.ndim not in (2, 3):
            raise InputError(f"key frame must be an HxWx3 uint8 image, got {arr.dtype} "
                             f"{arr.shape}")
        ok, buf = cv2.imencode(".jpg", arr, [int(cv2.IMWRITE_JPEG_QUALITY), quality])
        if not ok:
            raise InputError(f"cannot encode key frame of shape {arr.shape} as JPEG")
        data = buf.tobytes()
    if not data.startswith(b"\xff\xd8"):
        raise InputError("key frame is not a JPEG (bytes do not start with FF D8)")
    return data


# --------------------------------------------------------------------------- verify


def verify(path_or_url: str | os.PathLike, *, check_frames: bool = True,
           frames_dir: str | os.PathLike | None = None, deep: bool = False) -> VerifyResult:
    """Recompute the hash chain of an audit store and name the first broken record.

    Checks per record, in chain order: the ids run 1, 2, 3... (a gap means a record was
    removed), ``prev_hash`` equals the previous record's ``hash``, the key frame exists and its
    SHA-256 matches (``check_frames``), ``hash`` equals :func:`record_hash` of the stored
    payload, and the indexed columns (round id, table id, time) agree with the payload: by
    default each column value must appear in the canonical payload as ``"key":value`` (a text
    search, fast); ``deep=True`` parses every payload, compares the top-level keys and checks the
    text is canonical (about 3x slower).

    Returns:
        :class:`VerifyResult` (``ok`` False names ``broken_seq`` and ``reason``).

    Raises:
        InputError: when the file does not exist, is not SQLite, is not an audit store, or the
            database itself is corrupt (SQLite cannot read its pages).

    Speed: about 100,000 rounds in a few seconds without frames (scripts/bench_audit.py).
    """
    with AuditStore(path_or_url, create=False, frames_dir=frames_dir) as store:
        try:
            return _verify_store(store, check_frames, deep)
        except store._db.errors as exc:
            raise InputError(f"audit store {store.label!r} is corrupt: {exc}") from None


def _verify_store(store: AuditStore, check_frames: bool, deep: bool = False) -> VerifyResult:
    db = store._db
    db.begin_read()  # one consistent snapshot while the writer goes on
    try:
        cur = db.execute(
            "SELECT seq, round_id, table_id, time, frame_file, frame_sha256, payload, "
            "prev_hash, hash FROM paigow_rounds ORDER BY seq")
        prev = GENESIS_HASH
        expected = 1
        n = 0
        frames_checked = 0
        named: set[str] = set()
        sha256 = hashlib.sha256
        loads = json.loads

        def broken(seq, rid, why):
            return VerifyResult(False, _count(db), prev, seq, rid, why, frames_checked)

        while True:
            rows = cur.fetchmany(2000)
            if not rows:
                break
            for seq, rid, tid, t, ffile, fsha, payload, prev_hash, h in rows:
                n += 1
                if seq != expected:
                    why = (f"record missing: expected id {expected}, found {seq} "
                           f"({seq - expected} record(s) removed)")
                    return broken(seq, rid, why)
                if prev_hash != prev:
                    why = (f"prev link broken: prev_hash {prev_hash[:16]}... does not match the "
                           f"hash {prev[:16]}... of record {seq - 1} (that record's hash or "
                           "this link was changed)")
                    return broken(seq, rid, why)
                if fsha or ffile:
                    if ffile:
                        named.add(ffile)
                    if check_frames:
                        fpath = (store.frames_dir / ffile) if store.frames_dir else None
                        if fpath is None or not ffile or not fpath.is_file():
                            return broken(seq, rid, f"frame missing: {fpath or ffile!s}")
                        with open(fpath, "rb") as f:
                            got = sha256(f.read()).hexdigest()
                        frames_checked += 1
                        if got != fsha:
                            return broken(seq, rid, f"frame changed: {fpath} has SHA-256 "
                                                    f"{got[:16]}..., record says {fsha[:16]}...")
                want = sha256((prev_hash + payload + fsha).encode("utf-8")).hexdigest()
                if want != h:
                    return broken(seq, rid, f"payload changed: recomputed hash {want[:16]}... "
                                            f"!= stored {h[:16]}...")
                if deep:
                    try:
                        obj = loads(payload)
                        ok_cols = [obj["round_id"] == rid, obj["table_id"] == tid,
                                   obj["time"] == t, canonical_json(obj) == payload]
                    except (ValueError, KeyError, TypeError, InputError):
                        return broken(seq, rid, "payload is not a round event")
                else:  # the canonical payload holds each column as "key":value (fast check)
                    ok_cols = [f'"{k}":{_json_str(v)}' in payload
                               for k, v in (("round_id", rid), ("table_id", tid), ("time", t))]
                if not all(ok_cols):
                    name = ("round_id", "table_id", "time", "canonical form")[ok_cols.index(False)]
                    return broken(seq, rid, f"column {name} differs from the payload")
                prev = h
                expected += 1
        orphans: list[str] = []
        if store.frames_dir is not None and store.frames_dir.is_dir():
            orphans = sorted(p.name for p in store.frames_dir.glob("*.jpg")
                             if p.name not in named)
        return VerifyResult(True, n, prev, frames_checked=frames_checked, orphan_frames=orphans)
    finally:
        db.rollback()


def _json_str(v) -> str:
    if isinstance(v, str) and v.isprintable() and '"' not in v and "\\" not in v:
        return '"' + v + '"'
    return json.dumps(v, ensure_ascii=False)


def _count(db) -> int:
    return int(db.execute("SELECT COUNT(*) FROM paigow_rounds").fetchone()[0])


# --------------------------------------------------------------------------- payout check

_SEATS = ("dealer", "1", "2", "3", "4", "5", "6", "7")


def _seat_id(text: str, where: str) -> str:
    s = str(text).strip().lower()
    if s.startswith("seat"):
        s = s[4:].strip()
    if s in ("d", "dealer", "house"):
        return "dealer"
    if s.isdigit() and str(int(s)) in _SEATS:
        return str(int(s))
    raise InputError(f"{where}: seat {text!r} is not 'dealer' or a seat id 1..7")


def check_payouts(db: "AuditStore | str | os.PathLike", csv_path: str | os.PathLike, *,
                  unknown: str = "error") -> list[dict]:
    """Compare a payout log with the nets computed for the stored rounds (exact Decimal).

    The CSV (UTF-8, header row) needs ``seat``, ``amount_paid`` and a round reference:
    ``round_id`` (the event's round id; it must name one stored round) or ``time`` (ISO-8601,
    compared as an instant: ``...Z``, an offset, or naive = UTC). Other columns are ignored.
    ``amount_paid`` is a signed decimal from the player's side: ``0.95`` paid to the player,
    ``-1`` collected from the player, ``0`` a push. Several rows for the same round and seat
    add up. A seat's computed amount is its ``net`` in the stored event (positions with a
    ``net``; the bank has none).

    Differences (dicts with keys ``kind``, ``round_id``, ``time``, ``seq``, ``seat``, ``paid``,
    ``computed``, ``difference`` = paid - computed, amounts as exact decimal text or None):

    * ``amount``: both sides have the seat and the amounts differ;
    * ``seat_not_in_round``: paid for a seat the stored round did not settle;
    * ``not_paid``: a settled seat with a non-zero net and no CSV row (a zero net needs no
      payment; nor does the ``dealer`` position, whose net -- the house bank's, as the
      pipeline's events carry it -- is the house's own result: a ``dealer`` row, when given,
      is compared like any other); every stored round is checked, including rounds absent
      from the CSV;
    * ``round_not_in_store``: only with ``unknown="report"``.

    Order: store order (record id), seats dealer, 1..7; then rounds missing from the store.

    Raises:
        InputError: naming the file for a missing column (named), a non-numeric amount or a
            bad seat / time (named with its line number), a round id naming several stored
            rounds, and (with ``unknown="error"``, the default) a round that is not in the
            store (named with its line number).
    """
    import csv

    if unknown not in ("error", "report"):
        raise InputError(f"unknown={unknown!r} is not 'error' or 'report'")
    own = not isinstance(db, AuditStore)
    store = AuditStore(db, create=False) if own else db
    try:
        records = list(store.rounds())
    finally:
        if own:
            store.close()
    by_id: dict[str, list] = {}
    by_time: dict[datetime, list] = {}
    for r in records:
        by_id.setdefault(r.round_id, []).append(r)
        by_time.setdefault(parse_time(r.time, f"stored time of record {r.seq}"), []).append(r)

    name = str(csv_path)
    try:
        f = open(csv_path, newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read payouts file {name!r}: {exc}") from None
    paid: dict[tuple[int, str], Decimal] = {}
    paid_line: dict[tuple[int, str], int] = {}
    missing_rounds: dict[tuple[str, str], dict] = {}
    with f:
        reader = csv.DictReader(f)
        header = [h.strip().lower() for h in (reader.fieldnames or [])]
        reader.fieldnames = header
        key_col = "round_id" if "round_id" in header else ("time" if "time" in header else None)
        missing = [c for c in ("seat", "amount_paid") if c not in header]
        if key_col is None:
            missing.insert(0, "round_id or time")
        if missing:
            raise InputError(f"payouts file {name!r} lacks column(s): {', '.join(missing)} "
                             f"(header: {', '.join(header) or 'none'})")
        for row in reader:
            line = reader.line_num
            if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
                continue
            where = f"{name}: line {line}"
            ref = (row.get(key_col) or "").strip()
            if not ref:
                raise InputError(f"{where}: empty {key_col}")
            seat = _seat_id(row.get("seat") or "", where)
            text = (row.get("amount_paid") or "").strip()
            try:
                amount = Decimal(text)
            except (InvalidOperation, ValueError):
                amount = None
            if amount is None or not amount.is_finite():
                raise InputError(f"{where}: amount_paid {text!r} is not a decimal number")
            if key_col == "round_id":
                found = by_id.get(ref, [])
            else:
                found = by_time.get(parse_time(ref, f"{where}: time"), [])
            if len(found) > 1:
                raise InputError(f"{where}: {key_col} {ref!r} names {len(found)} stored rounds "
                                 f"(records {', '.join(str(r.seq) for r in found)}); use "
                                 f"{'time' if key_col == 'round_id' else 'round_id'}")
            if not found:
                if unknown == "error":
                    raise InputError(f"{where}: unknown round {ref!r} (not in the audit store)")
                d = missing_rounds.setdefault((ref, seat), {
                    "kind": "round_not_in_store", "seq": None,
                    "round_id": ref if key_col == "round_id" else None,
                    "time": ref if key_col == "time" else None, "seat": seat,
                    "paid": Decimal(0), "computed": None, "difference": None})
                d["paid"] += amount
                continue
            k = (found[0].seq, seat)
            paid[k] = paid.get(k, Decimal(0)) + amount
            paid_line.setdefault(k, line)

    out: list[dict] = []
    for r in records:
        positions = r.payload.get("positions") or {}
        nets = {}
        for pos, p in positions.items():
            if isinstance(p, dict) and p.get("net") is not None:
                nets[str(pos)] = Decimal(str(p["net"]))
        seats = [s for s in _SEATS if s in nets or (r.seq, s) in paid]
        seats += sorted({s for (q, s) in paid if q == r.seq} - set(seats))
        for s in seats:
            got = paid.get((r.seq, s))
            want = nets.get(s)
            base = {"seq": r.seq, "round_id": r.round_id, "time": r.time, "seat": s}
            if want is None:
                out.append({"kind": "seat_not_in_round", **base, "paid": got,
                            "computed": None, "difference": None})
            elif got is None:
                if want != 0 and s != "dealer":
                    out.append({"kind": "not_paid", **base, "paid": None, "computed": want,
                                "difference": -want})
            elif got != want:
                out.append({"kind": "amount", **base, "paid": got, "computed": want,
                            "difference": got - want})
    out.extend(missing_rounds.values())
    for d in out:
        for k in ("paid", "computed", "difference"):
            if d[k] is not None:
                d[k] = str(d[k])
    return out

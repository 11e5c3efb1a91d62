"""The audit store: append-only, hash-chained rounds with key frames (see the package
docstring for the storage and crash-safety design)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from scoring.errors import InputError

from ..schema import RoundEvent
from .backends import _COLUMNS, _TABLES, _open_backend
from .chain import (CHAIN_PER_TABLE, CHAIN_STORE, GENESIS_HASH, MAGIC, SCHEMA_VERSION,
                    AuditRecord, VerifyResult, _money, _opt_str, canonical_json, parse_time,
                    record_hash)



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
            if self._create():
                return
            names = self._db.table_names()  # another writer created it meanwhile
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
        self.chain = rows.get("chain", CHAIN_STORE)
        self._db.configure()

    def _create(self) -> bool:
        """Create the schema in one transaction; False when another writer created it first
        (two table workers starting on one empty database)."""
        db = self._db
        present = db.begin_create()
        try:
            if "paigow_audit_meta" in present:
                db.rollback()
                return False
            for stmt in _TABLES:
                db.execute(stmt)
            for key, value in (("magic", MAGIC), ("created", _now_iso()),
                               ("chain", CHAIN_PER_TABLE)):
                db.execute("INSERT INTO paigow_audit_meta (key, value) VALUES (?, ?)",
                           (key, value))
            db.execute("INSERT INTO paigow_audit_schema (version, applied_at) VALUES (?, ?)",
                       (SCHEMA_VERSION, _now_iso()))
            db.create_extra()
            db.commit()
        except BaseException:
            db.rollback()
            raise
        self.schema_version = SCHEMA_VERSION
        self.chain = CHAIN_PER_TABLE
        return True

    # ---------------------------------------------------------------- writing

    def append(self, event: RoundEvent | Mapping, frame=None, *,
               compute_alerts: bool = True) -> AuditRecord:
        """Append one round, settled or not (one transaction; durable when it returns).

        Args:
            event: a :class:`vision.schema.RoundEvent` or its JSON form (docs/round-event.md);
                needs ``round_id`` and
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
            seq, last = (int(row[0]), row[1]) if row else (0, GENESIS_HASH)
            heads: dict[str, str] = {}  # table id -> hash of its newest record (per-table chain)
            for payload_obj, frame in prepared:
                seq += 1
                tid = payload_obj["table_id"]
                if self.chain != CHAIN_PER_TABLE:
                    prev = last
                elif tid in heads:
                    prev = heads[tid]
                else:
                    r = db.execute("SELECT hash FROM paigow_rounds WHERE table_id = ? "
                                   "ORDER BY seq DESC LIMIT 1", (tid,)).fetchone()
                    prev = r[0] if r else GENESIS_HASH
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
                heads[tid] = last = h
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

    def _prepare(self, event: RoundEvent | Mapping, compute_alerts: bool) -> dict:
        if isinstance(event, RoundEvent):
            event = event.to_dict()
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
        if ev.get("kind") == "ack":  # an acknowledgement (vision.audit.entries): no round
            ev["alerts"] = []
            return ev
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
            from ..alerts import merge_alerts, round_alerts

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
        from .verification import verify_chain

        return verify_chain(self, check_frames, deep)

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def __enter__(self) -> "AuditStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
            return store.verify(check_frames=check_frames, deep=deep)
        except store._db.errors as exc:
            raise InputError(f"audit store {store.label!r} is corrupt: {exc}") from None



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

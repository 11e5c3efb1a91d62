"""The audit store: append-only, hash-chained rounds with key frames (see the package
docstring for the storage and crash-safety design)."""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from scoring.errors import InputError

from vision.schema import RoundEvent
from vision.sources import redact_url
from vision.audit.backends import _COLUMNS_BY_VERSION, _INSERT_COLUMNS, _TABLES, _open_backend
from vision.audit.chain import (CHAIN_PER_TABLE, CHAIN_STORE, GENESIS_HASH, MAGIC, READ_VERSIONS,
                    SCHEMA_VERSION, AuditRecord, VerifyResult, _money, _opt_str,
                    canonical_json, key_id, meta_hash, parse_time, record_hash_v2, record_mac,
                    round_key, round_number)


class DuplicateRound(InputError):
    """The round is already recorded (same table and :func:`vision.audit.chain.round_key`):
    exactly once, it is not stored again. ``record`` is the stored :class:`AuditRecord`."""

    def __init__(self, message: str, record: AuditRecord) -> None:
        super().__init__(message)
        self.record = record



def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def fsync_dir(path: Path) -> None:
    """Flush a folder's entries (a file created or renamed in it) to disk; quiet where the
    platform cannot (the write itself was fsynced)."""
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
        key: the secret key (bytes, :func:`vision.audit.keys.load_key`) of a keyed store: a
            new store is created keyed (its meta table names the key's id, never the key) and
            every record gets an HMAC; None for an unkeyed store.
        read_only: open for reading only (SQLite ``mode=ro``, ``immutable=1`` on read-only
            media); nothing is created or configured, appending is refused.

    Raises:
        InputError: naming the file when it is not SQLite, is SQLite but not an audit store
            (no ``paigow_audit_meta`` magic), has a newer schema version, or does not exist
            with ``create=False``; for writing: a version 1 store, a keyed store without its
            key, a key for an unkeyed store, or a key that is not the store's.

    Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path_or_url: str | os.PathLike, *, table_id: str | None = None,
                 frames_dir: str | os.PathLike | None = None, create: bool = True,
                 jpeg_quality: int = 90, key: bytes | None = None, read_only: bool = False):
        self._source = path_or_url  # kept for reconnect() (the label hides a password)
        self._db = _open_backend(path_or_url, create, read_only)
        self.label = self._db.label
        self.read_only = bool(read_only)
        self.key = bytes(key) if key else None
        self.meta: dict[str, str] = {}
        self.table_id = table_id
        self.jpeg_quality = int(jpeg_quality)
        self.frames_dir = Path(frames_dir) if frames_dir is not None else self._db.frames_default
        try:
            self._check_or_create(create and not self.read_only)
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
        if v is None or int(v) not in READ_VERSIONS:
            raise InputError(f"audit store {self.label!r} has schema version {v}; this program "
                             f"reads versions {', '.join(map(str, READ_VERSIONS))}")
        self.schema_version = int(v)
        self.meta = {str(k): str(val) for k, val in rows.items()}
        self.chain = rows.get("chain", CHAIN_STORE)
        if not self.read_only:
            self._check_writable()
        self._db.configure()

    @property
    def keyed(self) -> bool:
        """True when the store was created with a secret key (its meta table names its id)."""
        return "key_id" in self.meta

    def _check_writable(self) -> None:
        if self.schema_version != SCHEMA_VERSION:
            raise InputError(f"audit store {self.label!r} has schema version "
                             f"{self.schema_version} (written by an older paigow): it can be "
                             "verified but not appended to; start a new store")
        if self.keyed and self.key is None:
            from vision.audit.keys import KEY_ENV

            raise InputError(f"audit store {self.label!r} is keyed (key id "
                             f"{self.meta['key_id']}): set ${KEY_ENV} or give its key file")
        if self.key is not None and not self.keyed:
            raise InputError(f"audit store {self.label!r} was created without a key; a keyed "
                             "run needs a new store (or unset the key)")
        if self.key is not None and key_id(self.key) != self.meta["key_id"]:
            raise InputError(f"the audit key given (id {key_id(self.key)}) is not the key of "
                             f"{self.label!r} (id {self.meta['key_id']})")

    def _genesis(self) -> str:
        """``prev_hash`` of the first record (of each table's chain): the meta hash (version
        2), 64 zeros (version 1)."""
        if self.schema_version < 2:
            return GENESIS_HASH
        schema = self._db.execute("SELECT version, applied_at FROM paigow_audit_schema") \
            .fetchall()
        return meta_hash(self.meta, schema)

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
            meta = {"magic": MAGIC, "created": _now_iso(), "chain": CHAIN_PER_TABLE}
            if self.key is not None:
                meta.update({"mac": "hmac-sha256", "key_id": key_id(self.key)})
            for k, v in meta.items():
                db.execute("INSERT INTO paigow_audit_meta (key, value) VALUES (?, ?)", (k, v))
            db.execute("INSERT INTO paigow_audit_schema (version, applied_at) VALUES (?, ?)",
                       (SCHEMA_VERSION, _now_iso()))
            db.create_extra()
            db.commit()
        except BaseException:
            db.rollback()
            raise
        self.schema_version = SCHEMA_VERSION
        self.meta = meta
        self.chain = CHAIN_PER_TABLE
        return True

    # ---------------------------------------------------------------- writing

    def append(self, event: RoundEvent | Mapping, frame=None, *,
               compute_alerts: bool = True, renumber: bool = False,
               replay: str | None = None) -> AuditRecord:
        """Append one round, settled or not (one transaction; durable when it returns).

        Args:
            event: a :class:`vision.schema.RoundEvent` or its JSON form (docs/round-event.md);
                needs ``round_id`` and
                ``time`` (ISO-8601) and ``positions``; ``table_id`` defaults to the store's.
            frame: the key frame: an image array (HxWx3 uint8 BGR; encoded to JPEG), JPEG bytes,
                a path to a JPEG file, or None.
            compute_alerts: merge :func:`vision.table.alerts.round_alerts` into the event's alerts.
            renumber: give the round the next number of its table (``r<last + 1>``), decided
                inside the write transaction, so several writers of one table never record one
                round id twice (``paigow run``; the stored id is in the returned record).
            replay: the session and pass of a recording looped on purpose
                (:func:`vision.audit.chain.round_key`): each pass is new rounds.

        Returns:
            the stored :class:`AuditRecord`.

        Raises:
            DuplicateRound: the round is already recorded (same table and round content,
                :func:`vision.audit.chain.round_key`): nothing is written.
            InputError: for an event without round id/time/positions, a bad time or money
                text, another table's event, a round id already recorded for the table, an
                unreadable frame, or a store opened read-only.
            OSError: ``ENOSPC`` when the disk (or the database) is full; nothing is written.
        """
        return self.append_many([(event, frame)], compute_alerts=compute_alerts,
                                renumber=renumber, replay=replay)[0]

    def append_many(self, items: Iterable, *, compute_alerts: bool = True,
                    renumber: bool = False, replay: str | None = None) -> list[AuditRecord]:
        """Append several rounds in ONE transaction (all or none), e.g. to import an events
        file. ``items``: events, or ``(event, frame)`` pairs. Same errors as :meth:`append`.

        Exactly once: the write transaction (SQLite ``BEGIN IMMEDIATE``, PostgreSQL an
        exclusive table lock) serialises writers; inside it the chain head, the table's last
        round number and the round keys already stored are read afresh, so a second writer
        never forks the chain, never reuses a round id and never stores a round twice."""
        if self.read_only:
            raise InputError(f"audit store {self.label!r} is open read-only")
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
            seq, last = (int(row[0]), row[1]) if row else (0, None)
            heads: dict[str, str] = {}  # table id -> hash of its newest record (per-table chain)
            numbers: dict[str, int] = {}
            for payload_obj, frame in prepared:
                seq += 1
                tid = payload_obj["table_id"]
                if self.chain != CHAIN_PER_TABLE:
                    prev = last if last is not None else self._genesis()
                elif tid in heads:
                    prev = heads[tid]
                else:
                    r = db.execute("SELECT hash FROM paigow_rounds WHERE table_id = ? "
                                   "ORDER BY seq DESC LIMIT 1", (tid,)).fetchone()
                    prev = r[0] if r else self._genesis()
                rkey = round_key(payload_obj, replay)
                dup = db.execute(f"SELECT {self._cols} FROM paigow_rounds WHERE table_id = ? "
                                 "AND round_key = ?", (tid, rkey)).fetchone()
                if dup:
                    rec = self._record(dup)
                    raise DuplicateRound(
                        f"round {payload_obj['round_id']!r} of table {tid!r} is already "
                        f"recorded in {self.label!r} as record {rec.seq} (round "
                        f"{rec.round_id}, same source and content)", rec)
                camera = payload_obj.get("kind") in (None, "round")
                if renumber and camera:
                    if tid not in numbers:
                        numbers[tid] = self._last_number(tid)
                    numbers[tid] += 1
                    payload_obj["round_id"] = f"r{numbers[tid]:06d}"
                taken = camera and db.execute(
                    "SELECT seq FROM paigow_rounds WHERE table_id = ? AND round_id = ?",
                    (tid, payload_obj["round_id"])).fetchone()
                if taken:
                    raise InputError(
                        f"round {payload_obj['round_id']!r} of table {tid!r} is already "
                        f"recorded in {self.label!r} (record {taken[0]})")
                payload = canonical_json(payload_obj)
                frame_file, frame_sha = "", ""
                if frame is not None:
                    frame_file, frame_sha, fpath = self._write_frame(seq, frame)
                    written.append(fpath)
                cols = {"seq": seq, "round_id": payload_obj["round_id"], "table_id": tid,
                        "time": payload_obj["time"],
                        "rules": _opt_str(payload_obj.get("rules")),
                        "model_version": _opt_str(payload_obj.get("model_version")),
                        "alert_kinds": ",".join(sorted({a["kind"]
                                                        for a in payload_obj["alerts"]})),
                        "frame_file": frame_file, "frame_sha256": frame_sha,
                        "round_key": rkey, "payload": payload, "prev_hash": prev}
                h = record_hash_v2(cols)
                mac = record_mac(self.key, h) if self.key is not None else ""
                db.execute(
                    f"INSERT INTO paigow_rounds ({_INSERT_COLUMNS}) VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    tuple(cols.values()) + (h, mac))
                out.append(AuditRecord(seq, payload_obj["round_id"], tid, payload_obj["time"],
                                       payload,
                                       self.frames_dir / frame_file if frame_file else None,
                                       frame_sha, prev, h, rkey, mac))
                heads[tid] = last = h
            db.commit()
        except BaseException as exc:
            try:
                db.rollback()
            except db.errors:
                pass
            finally:
                for p in written:  # never referenced by a committed row
                    try:
                        p.unlink()
                    except OSError:
                        pass
            if db.is_full(exc):  # SQLITE_FULL: the disk (or the database) is full
                raise OSError(errno.ENOSPC, f"database or disk is full ({exc})",
                              self.label) from None
            if isinstance(exc, db.errors) and "locked" in str(exc):  # another writer, 30 s
                raise InputError(f"audit store {self.label!r} stayed locked by another "
                                 f"writer ({exc})") from None
            if isinstance(exc, db.integrity_errors):
                raise InputError(f"audit store {self.label!r}: {exc}") from None
            raise
        return out

    def _last_number(self, table_id: str) -> int:
        """The number of the table's newest camera round (``r000042`` -> 42; 0 for none):
        its newest record's, unless that is a manual entry or an acknowledgement, which name
        earlier rounds (then the largest of the table)."""
        db = self._db
        row = db.execute("SELECT round_id, payload FROM paigow_rounds WHERE table_id = ? "
                         "ORDER BY seq DESC LIMIT 1", (table_id,)).fetchone()
        if row is None:
            return 0
        import json

        if json.loads(row[1]).get("kind") in (None, "round"):
            return round_number(row[0])
        ids = db.execute("SELECT round_id FROM paigow_rounds WHERE table_id = ?", (table_id,))
        return max(round_number(r[0]) for r in ids.fetchall())

    def _prepare(self, event: RoundEvent | Mapping, compute_alerts: bool) -> dict:
        if isinstance(event, RoundEvent):
            event = event.to_dict()
        if not isinstance(event, Mapping):
            raise InputError(f"a round event is a JSON object, got {type(event).__name__}")
        ev = dict(event)  # shallow copy: only top-level keys (table_id, alerts) are replaced
        for key in ("source", "source_file"):  # the chain is append-only: never a password
            if isinstance(ev.get(key), str):
                ev[key] = redact_url(ev[key])
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
        if ev.get("kind") in ("ack", "setcheck"):  # vision.audit.entries: no round
            ev["alerts"] = []
            return ev
        positions = ev.get("positions")
        # a round not settled may name no position (its tiles lay in none: no layout, or all
        # outside it); it is stored all the same -- a round is never lost (docs/audit.md)
        if not isinstance(positions, dict) or (not positions and ev.get("settled")):
            raise InputError(f"round {rid!r} has no positions")
        for pos, p in positions.items():
            if not isinstance(p, dict):
                raise InputError(f"round {rid!r}: position {pos!r} is not an object")
            for key in ("net", "bet", "commission"):
                if p.get(key) is not None:
                    _money(p[key], f"round {rid!r} position {pos!r} {key}")
        given = [a for a in (ev.get("alerts") or []) if isinstance(a, dict) and "kind" in a]
        if compute_alerts:
            from vision.table.alerts import merge_alerts, round_alerts

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
        except BaseException as exc:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if isinstance(exc, OSError) and not exc.filename:  # name the file (disk full)
                raise OSError(exc.errno, exc.strerror, str(final)) from None
            raise
        fsync_dir(self.frames_dir)
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
        sql = f"SELECT {self._cols} FROM paigow_rounds"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY seq"
        for row in self._db.execute(sql, tuple(params)).fetchall():
            yield self._record(row)

    def get(self, seq: int) -> AuditRecord:
        """The record with id ``seq``. Raises InputError when there is none."""
        row = self._db.execute(f"SELECT {self._cols} FROM paigow_rounds WHERE seq = ?",
                               (int(seq),)).fetchone()
        if row is None:
            raise InputError(f"no record {seq!r} in audit store {self.label!r}")
        return self._record(row)

    def last_record(self, table_id: str | None = None) -> AuditRecord | None:
        """The newest stored record (of ``table_id`` when given; highest ``seq``), or None
        when there is none. Used by ``paigow run --audit`` to continue the round numbering of
        a table after a restart."""
        sql = f"SELECT {self._cols} FROM paigow_rounds"
        params: tuple = ()
        if table_id is not None:
            sql += " WHERE table_id = ?"
            params = (table_id,)
        row = self._db.execute(sql + " ORDER BY seq DESC LIMIT 1", params).fetchone()
        return self._record(row) if row is not None else None

    @property
    def _cols(self) -> str:
        return _COLUMNS_BY_VERSION[self.schema_version]

    def _record(self, row) -> AuditRecord:
        (seq, rid, tid, t, _rules, _mv, _kinds, ffile, fsha, _key, payload, prev, h, _mac) = row
        return AuditRecord(int(seq), rid, tid, t, payload,
                           (self.frames_dir / ffile) if ffile and self.frames_dir else None,
                           fsha, prev, h, _key or "", _mac or "")

    def head(self) -> tuple[str, int]:
        """``(anchor_hash, rounds)`` from one snapshot: the hash of every chain's head
        (:func:`vision.audit.chain.anchor_hash`) and the number of records -- an anchor to keep
        outside the store (``paigow audit anchor``; :func:`verify` ``anchor=``)."""
        from vision.audit.chain import anchor_hash

        db = self._db
        db.begin_read()
        try:
            n = int(db.execute("SELECT COUNT(*) FROM paigow_rounds").fetchone()[0])
            if self.chain == CHAIN_PER_TABLE:
                rows = db.execute("SELECT table_id, hash FROM paigow_rounds WHERE seq IN "
                                  "(SELECT MAX(seq) FROM paigow_rounds GROUP BY table_id)")
                heads = dict(rows.fetchall())
            else:
                row = db.execute("SELECT hash FROM paigow_rounds ORDER BY seq DESC LIMIT 1") \
                    .fetchone()
                heads = {"": row[0]} if row else {}
            return anchor_hash(heads, self._genesis()), n
        finally:
            db.rollback()

    def verify(self, *, check_frames: bool = True, deep: bool = False,
               anchor=None, allow_after: bool = False) -> VerifyResult:
        """Recompute the whole chain (see :func:`verify`); the MACs with this store's key."""
        from vision.audit.verification import verify_chain

        return verify_chain(self, check_frames, deep, key=self.key, anchor=anchor,
                            allow_after=allow_after)

    def unreachable(self, exc: BaseException) -> bool:
        """True when ``exc`` (raised by :meth:`append`) means the database cannot be written
        for now -- PostgreSQL down or the connection lost, an SQLite file made read-only or
        failing with I/O errors -- rather than a bad round, a bad store or a full disk
        (:class:`vision.io.sinks.AuditSink` then spools the round)."""
        return self._db.is_unreachable(exc)

    def reconnect(self) -> bool:
        """Open a fresh connection when the current one is lost (a PostgreSQL server that
        shut down); False when none was needed. The store is checked again (magic, schema
        version, key) as on opening.

        Raises:
            InputError: the database still cannot be reached (``cannot connect ...``) or is
                no longer this audit store."""
        if self._db.alive():
            return False
        try:
            self._db.close()
        except Exception:  # noqa: BLE001 - a lost connection may fail to close
            pass
        db = _open_backend(self._source, False, self.read_only)
        self._db = db
        try:
            self._check_or_create(False)
        except InputError:
            raise
        except db.errors as exc:
            raise InputError(f"audit store {self.label!r}: cannot check it again "
                             f"({str(exc).strip()})") from None
        return True

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def __enter__(self) -> "AuditStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def verify(path_or_url: str | os.PathLike, *, check_frames: bool = True,
           frames_dir: str | os.PathLike | None = None, deep: bool = False,
           key: bytes | None = None, anchor=None, allow_after: bool = False) -> VerifyResult:
    """Recompute the hash chain of an audit store and name the first broken record. The store
    is opened read-only (works on read-only media; never modified).

    Checks per record, in chain order: the ids run 1, 2, 3... (a gap means a record was
    removed), ``prev_hash`` equals the previous record's ``hash`` (record 1's: the hash of the
    meta table, version 2), the key frame exists and its SHA-256 matches (``check_frames``),
    ``hash`` equals the hash of every column (:func:`vision.audit.chain.record_hash_v2`;
    version 1: of the payload and frame hash), the indexed columns agree with the payload (by
    default each column value must appear in the canonical payload as ``"key":value``, a text
    search; ``deep=True`` parses every payload and checks the text is canonical, about 3x
    slower), and with ``key`` the record's HMAC. After the last record: frame files of records
    beyond the one after the last (records removed from the end) and, with ``anchor``, the
    anchored head.

    Args:
        key: the store's secret key (:func:`vision.audit.keys.load_key`): every record must
            carry a valid HMAC under it.
        anchor: ``(head_hash, rounds)`` taken earlier (``paigow audit anchor``), or a list of
            them: the store must hold record ``rounds`` with hash ``head_hash`` (fails when
            shorter or different) and, unless ``allow_after``, no record after the last anchor.

    Returns:
        :class:`VerifyResult` (``ok`` False names ``broken_seq`` and ``reason``).

    Raises:
        InputError: when the file does not exist, is not SQLite, is not an audit store, or the
            database itself is corrupt (SQLite cannot read its pages).

    Speed: about 100,000 rounds in a few seconds without frames (scripts/bench_audit.py).
    """
    with AuditStore(path_or_url, create=False, frames_dir=frames_dir, key=key,
                    read_only=True) as store:
        try:
            return store.verify(check_frames=check_frames, deep=deep, anchor=anchor,
                                allow_after=allow_after)
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

"""Storage backends of the audit store: SQLite (standard library, the default) and
PostgreSQL (``psycopg`` 3, the ``postgres`` extra), behind one small adapter running the same
portable SQL. Both are tested against real databases (tests/test_audit_backends.py starts a
throwaway PostgreSQL cluster)."""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path

from scoring.errors import InputError

from vision.audit.chain import APPLICATION_ID

_SQLITE_HEADER = b"SQLite format 3\x00"

# Portable SQL (SQLite and PostgreSQL): "?" placeholders are rewritten per backend.
_META_TABLES = (
    """CREATE TABLE paigow_audit_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL)""",
    """CREATE TABLE paigow_audit_schema (
        version INTEGER PRIMARY KEY,
        applied_at TEXT NOT NULL)""",
)
# Schema version 2: every column hashed; one record per (table, round content) -- exactly once
# (docs/audit.md; a camera round's id is unique in its table, checked on append: manual entries
# and acknowledgements name the round they belong to); ``mac`` the record's HMAC ("" unkeyed).
_TABLES = _META_TABLES + (
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
        round_key TEXT NOT NULL,
        payload TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        mac TEXT NOT NULL,
        UNIQUE (table_id, round_id, time),
        UNIQUE (table_id, round_key))""",
    "CREATE INDEX paigow_rounds_round_id ON paigow_rounds (round_id)",
    "CREATE INDEX paigow_rounds_time ON paigow_rounds (time)",
    "CREATE INDEX paigow_rounds_table ON paigow_rounds (table_id, seq)",
)
_GUARDED = ("paigow_audit_meta", "paigow_audit_schema", "paigow_rounds")
_COLUMNS_BY_VERSION = {
    1: ("seq, round_id, table_id, time, rules, model_version, alert_kinds, frame_file, "
        "frame_sha256, '' AS round_key, payload, prev_hash, hash, '' AS mac"),
    2: ("seq, round_id, table_id, time, rules, model_version, alert_kinds, frame_file, "
        "frame_sha256, round_key, payload, prev_hash, hash, mac"),
}
"""The columns read, per schema version (version 1 has no round key and no MAC)."""
_INSERT_COLUMNS = _COLUMNS_BY_VERSION[2]


class _SQLiteBackend:
    name = "sqlite"

    def __init__(self, path: Path, create: bool, read_only: bool = False):
        self.path = path
        self.label = str(path)
        self.read_only = read_only
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
            # check_same_thread=False: a session opens its store before the loop starts (to
            # reject a bad store before the models load) and the dealer display's loop then
            # runs in the feed thread; a store is used by one thread at a time.
            if read_only:
                self.conn = _connect_read_only(path)
            else:
                self.conn = sqlite3.connect(str(path), isolation_level=None, timeout=30.0,
                                            check_same_thread=False)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"cannot open audit store {str(path)!r}: {exc}") from None
        self.frames_default = Path(str(path) + ".frames")

    def configure(self) -> None:
        """Crash-safety settings; called once the file is known to be ours (a foreign file is
        never modified). Nothing to set on a read-only connection."""
        if self.read_only:
            return
        # Switching to WAL needs the file to itself: when a second writer opens an empty store
        # while the first creates the schema, SQLite answers "database is locked" at once
        # (its busy handler is not used for this lock). Retry for as long as the busy timeout.
        deadline = time.monotonic() + 30.0
        while True:
            try:
                mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        if str(mode).lower() != "wal":
            raise InputError(f"audit store {self.label!r}: cannot enable WAL mode (got {mode!r})")
        self.conn.execute("PRAGMA synchronous=FULL")

    def sql(self, text: str) -> str:
        return text

    def execute(self, text: str, params=()):
        return self.conn.execute(text, params)

    def stream(self, text: str):
        """A cursor over a long result, read with ``fetchmany`` (SQLite reads pages lazily)."""
        return self.conn.execute(text)

    def table_names(self) -> set[str]:
        rows = self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
        return {r[0] for r in rows}

    def begin_write(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def begin_read(self) -> None:
        self.conn.execute("BEGIN")

    def begin_create(self) -> set[str]:
        """Start the schema-creating transaction; returns the tables present once the write
        lock is held (another process may have created them meanwhile)."""
        self.conn.execute("BEGIN IMMEDIATE")
        return self.table_names()

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

    def alive(self) -> bool:
        """An SQLite connection survives a failed write (the file is retried as is)."""
        return True

    @staticmethod
    def is_unreachable(exc: BaseException) -> bool:
        """True when the file cannot be written for now -- read-only or immutable
        (``SQLITE_READONLY``), an I/O error (``SQLITE_IOERR``), it cannot be opened
        (``SQLITE_CANTOPEN``) -- as opposed to a bad store or a full disk."""
        if not isinstance(exc, sqlite3.OperationalError):
            return False
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None:
            return code & 0xFF in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR,
                                   sqlite3.SQLITE_CANTOPEN)
        text = str(exc)
        return any(w in text for w in ("readonly", "disk I/O error", "unable to open"))

    @staticmethod
    def is_full(exc: BaseException) -> bool:
        """True for SQLite's "database or disk is full" (SQLITE_FULL)."""
        return isinstance(exc, sqlite3.OperationalError) and (
            getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
            or "disk is full" in str(exc))


def _uri(path: Path, **params: str) -> str:
    from urllib.parse import quote

    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"file:{quote(str(path.resolve()))}?{query}"


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection (``mode=ro``: the file is never written; committed rounds still
    in the write-ahead log are read, a writer may go on meanwhile). On read-only media, where
    SQLite cannot create the ``-shm`` index beside the file, it opens the file
    ``immutable=1`` (no locks, no WAL) -- correct there, as nothing can change the file --
    unless a non-empty ``-wal`` file holds commits that this mode would not see (an error
    naming it)."""
    def connect(**params: str) -> sqlite3.Connection:
        conn = sqlite3.connect(_uri(path, **params), uri=True, isolation_level=None,
                               timeout=30.0, check_same_thread=False)
        try:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except BaseException:
            conn.close()
            raise
        return conn

    try:
        return connect(mode="ro")
    except sqlite3.OperationalError as first:
        wal = Path(str(path) + "-wal")
        try:
            pending = wal.stat().st_size > 0
        except OSError:
            pending = False
        if pending:
            raise InputError(
                f"audit store {str(path)!r}: cannot open it read-only ({first}) and its "
                f"write-ahead log {str(wal)!r} holds commits; copy both to a writable folder "
                "and verify there") from None
        return connect(mode="ro", immutable="1")


class _PostgresBackend:
    """PostgreSQL through psycopg 3 (autocommit connection; explicit transactions).

    Several writers (one per table worker) share one database: an append takes the table lock
    ``EXCLUSIVE`` for its transaction, so record ids stay gap-free and each table's chain link
    is read and written by one writer at a time (readers -- verify, payout checks -- are not
    blocked: ``EXCLUSIVE`` still admits ``SELECT``). Creating the schema is serialised by a
    transaction-level advisory lock, so two workers starting on an empty database do not race.
    """

    name = "postgresql"
    _CREATE_LOCK = 0x50475741  # advisory lock key for schema creation ("PGWA")

    def __init__(self, url: str, create: bool):
        try:
            import psycopg
        except ImportError:
            raise InputError(f"audit store URL {url!r} needs psycopg "
                             "(pip install 'psycopg[binary]')") from None
        self.label = re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)
        try:
            self.conn = psycopg.connect(url, autocommit=True)
        except psycopg.Error as exc:
            raise InputError(f"cannot connect to audit store {self.label!r}: "
                             f"{str(exc).strip()}") from None
        self.frames_default = None
        self.errors = (psycopg.Error,)
        self.integrity_errors = (psycopg.IntegrityError,)
        self.read_only = False

    @staticmethod
    def is_full(exc: BaseException) -> bool:
        return getattr(exc, "sqlstate", None) in ("53100", "53200")  # disk full, out of memory

    def alive(self) -> bool:
        """False once the connection is lost (server shut down, network cut): a new one is
        needed (:meth:`vision.audit.AuditStore.reconnect`)."""
        return not (self.conn.closed or self.conn.broken)

    @staticmethod
    def is_unreachable(exc: BaseException) -> bool:
        """True when the server cannot be reached for now: ``OperationalError`` with no SQL
        state (the connection was lost), class 08 (connection exception) or 57 (operator
        intervention: ``AdminShutdown``, crash shutdown, cannot connect now)."""
        import psycopg

        if not isinstance(exc, psycopg.OperationalError):
            return False
        state = getattr(exc, "sqlstate", None)
        return state is None or state[:2] in ("08", "57")

    def configure(self) -> None:
        pass

    def sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def execute(self, text: str, params=()):
        # no parameters: send the text as is (a literal % in a function body stays one)
        if not params:
            return self.conn.execute(text)
        return self.conn.execute(self.sql(text), params)

    def stream(self, text: str):
        """A server-side cursor over a long result (inside the read transaction), so verifying
        a store of many rounds does not load every payload at once."""
        cur = self.conn.cursor(name="paigow_stream")
        cur.itersize = 2000
        cur.execute(text)
        return cur

    def table_names(self) -> set[str]:
        rows = self.conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema()").fetchall()
        return {r[0] for r in rows}

    def begin_create(self) -> set[str]:
        """Start the schema-creating transaction; returns the tables present once the creation
        lock is held (another worker may have created them meanwhile)."""
        self.conn.execute("BEGIN")
        self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._CREATE_LOCK,))
        return self.table_names()

    def begin_write(self) -> None:
        self.conn.execute("BEGIN")
        self.conn.execute("LOCK TABLE paigow_rounds IN EXCLUSIVE MODE")

    def begin_read(self) -> None:
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        from psycopg.pq import TransactionStatus

        if self.conn.info.transaction_status != TransactionStatus.IDLE:
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


def _open_backend(path_or_url, create: bool, read_only: bool = False):
    s = str(path_or_url)
    if re.match(r"^postgres(ql)?://", s):
        return _PostgresBackend(s, create)
    if "://" in s:
        raise InputError(f"audit store {s!r}: unsupported URL (a file path or postgresql://...)")
    return _SQLiteBackend(Path(s), create and not read_only, read_only)

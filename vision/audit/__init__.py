"""Append-only, hash-chained audit store of rounds (SQLite by default).

One record per round, settled or not (a round event, docs/round-event.md): the event itself as
canonical JSON -- every position's tiles, high and low hands, results and net amounts, the
dealer's setting and whether it is the house way, rules profile, model version, per-tile
confidence -- plus the integrity alerts of :mod:`vision.table.alerts`, an optional key frame (JPEG)
and two hashes that chain the records:

* ``payload``: the event as canonical JSON (``sort_keys=True``, separators ``,`` and ``:``,
  UTF-8, no NaN); its ``alerts`` list is the event's own alerts merged with
  :func:`vision.table.alerts.round_alerts` (:func:`vision.table.alerts.merge_alerts`: one per
  ``(kind, position)``, a duplicate face one per finding).
* ``frame_sha256``: SHA-256 (hex) of the key-frame JPEG bytes, or ``""`` when none.
* ``round_key``: the round's identity (:func:`vision.audit.chain.round_key`): one record per
  table and key, so a round is stored exactly once (after a restart, with several writers).
* ``hash``: SHA-256 of the canonical JSON of every other column
  (:func:`vision.audit.chain.record_hash_v2`). ``prev_hash`` is the ``hash`` of the previous
  record of the same table (one chain per table, :data:`~vision.audit.chain.CHAIN_PER_TABLE`);
  a table's first record has the hash of the meta tables (:func:`vision.audit.chain.meta_hash`).
  Record ids (``seq``) run 1, 2, 3... over the whole store. Stores of schema version 1 (hash
  over payload and frame hash, first link 64 zeros; one chain over all records before
  per-table chains) are still verified.
* ``mac``: with a secret key (:mod:`vision.audit.keys`), HMAC-SHA256 of ``hash``.

:func:`verify` recomputes the chain and names the first broken record and why. What the chain
does not see by itself: removing the *last* records (truncation) leaves a valid shorter chain,
and without a key an edit followed by recomputing every later hash is consistent again; keep
anchors (``paigow audit anchor``: :attr:`VerifyResult.head_hash` and
:attr:`VerifyResult.rounds`) outside the store and pass them to ``verify --anchor``. The full
table of what is detected with and without a key is docs/audit.md.

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

Each :meth:`AuditStore.append` is one transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``; the head,
the round number and the stored round keys are read inside it, so writers are serialised): the
key
frame is written to a temporary name, fsynced, renamed into place and the folder fsynced *before*
the row commits; a crash in between leaves at most an orphan frame file (never referenced, and
overwritten by nothing: names carry the hash) and never a row without its frame.

PostgreSQL (many tables, one server): pass a URL (``postgresql://user@host/db``, libpq's form,
e.g. ``postgresql://paigow@/audit?host=/run/postgresql``); the same SQL runs through a thin
adapter over ``psycopg`` 3 (the ``postgres`` extra). Table workers write at once: an append
holds the ``paigow_rounds`` table lock (``EXCLUSIVE``, readers go on) for its one transaction, so
ids stay gap-free and each table's link is taken by one writer at a time; a writer killed
mid-transaction leaves nothing (the server rolls it back). Append-only: a statement trigger
refuses ``UPDATE``, ``DELETE`` and ``TRUNCATE``. Key frames go to ``frames_dir`` (required when
a frame is appended). Tested against a real server (tests/test_audit_backends.py).

Modules: :mod:`~vision.audit.chain` (canonical JSON, hashes, record types),
:mod:`~vision.audit.backends` (SQLite, PostgreSQL), :mod:`~vision.audit.store`
(:class:`AuditStore`), :mod:`~vision.audit.verification` (:func:`verify`),
:mod:`~vision.audit.payouts` (:func:`check_payouts`, docs/payouts.md),
:mod:`~vision.audit.integrity` (a store verified before a report or payout check reads it).
"""

from __future__ import annotations

from vision.audit.chain import (APPLICATION_ID, GENESIS_HASH, MAGIC, SCHEMA_VERSION, AuditRecord,
                    VerifyResult, canonical_json, parse_time, record_hash)
from vision.audit.payouts import check_payouts
from vision.audit.store import AuditStore, DuplicateRound, verify

__all__ = [
    "AuditStore",
    "DuplicateRound",
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

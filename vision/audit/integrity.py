"""A store is verified before it is read for a report or a payout check (``paigow audit
report``, ``check-payouts``; docs/audit.md, reports and payout checks read only a store that
verifies): a broken one is refused (:class:`StoreBroken`), or read with ``--force`` and marked
from :attr:`vision.audit.VerifyResult.marked_from` on (:func:`broken_header`)."""

from __future__ import annotations

from vision.audit.chain import VerifyResult
from vision.audit.store import verify

__all__ = ["StoreBroken", "verify_before_read", "broken_header", "broken_block"]


class StoreBroken(Exception):
    """A store whose chain (or anchor, or MACs) does not verify, refused by a reader
    (:func:`verify_before_read`): ``paigow audit check-payouts`` and ``report`` exit 1 with
    its one-line message unless ``--force`` is given.

    Attributes:
        result: the :class:`VerifyResult` (``ok`` False).
        store: the store as named by the caller (path or URL).
    """

    def __init__(self, result: VerifyResult, store: str) -> None:
        rnd = f" (round {result.broken_round_id})" if result.broken_round_id else ""
        super().__init__(f"audit store {store!r} BROKEN at record {result.broken_seq}{rnd}: "
                         f"{result.reason}; not read (use --force to read it anyway)")
        self.result, self.store = result, store


def broken_header(result: VerifyResult) -> str:
    """The line a forced reading of a broken store starts with (report header, first line of
    ``check-payouts``), e.g. ``"STORE BROKEN AT record 3 (round r000003): prev link broken
    ...; rows from record 2 on are marked"`` (rows from :attr:`VerifyResult.marked_from`)."""
    rnd = f" (round {result.broken_round_id})" if result.broken_round_id else ""
    return (f"STORE BROKEN AT record {result.broken_seq}{rnd}: {result.reason}; rows from "
            f"record {result.marked_from} on are marked")


def broken_block(result: VerifyResult) -> dict:
    """What a forced reading of a broken store carries as ``store_broken`` (report dict, JSON
    output): ``{"record", "round_id", "reason", "marked_from", "header"}``."""
    return {"record": result.broken_seq, "round_id": result.broken_round_id,
            "reason": result.reason, "marked_from": result.marked_from,
            "header": broken_header(result)}


def verify_before_read(db, *, key: bytes | None = None, anchor=None, allow_after: bool = False,
                       check_frames: bool = True, frames_dir=None,
                       force: bool = False) -> VerifyResult:
    """Verify a store before reading it for a report or a payout check (docs/audit.md): the
    chain, the key frames, and the MACs / anchors when given (the checks of ``paigow audit
    verify``, :func:`vision.audit.store.verify`).

    Args:
        db: the store's path or URL (never an open store: it is opened read-only here).
        key, anchor, allow_after, check_frames, frames_dir: as :func:`vision.audit.store.verify`.
        force: return the result of a broken store instead of raising (the reader then marks
            every row from :attr:`VerifyResult.marked_from` on, :func:`broken_header`).

    Returns:
        the :class:`VerifyResult`; when ``ok``, its ``rounds`` is the number of records
        verified (a reader shows records up to that id only: a writer may go on meanwhile).

    Raises:
        StoreBroken: the store does not verify and ``force`` is False.
        InputError: the store cannot be opened (see :func:`vision.audit.store.verify`).
    """
    res = verify(db, check_frames=check_frames, frames_dir=frames_dir, key=key, anchor=anchor,
                 allow_after=allow_after)
    if not res.ok and not force:
        raise StoreBroken(res, str(db))
    return res

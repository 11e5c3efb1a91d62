"""Re-audit of recorded video (``paigow reaudit``): recordings re-read in parallel as Ray tasks,
the rounds found written to an audit store, and compared with what was recorded live
(docs/reaudit.md).

Each recording is one Ray task (:func:`reread`): the same frame loop as ``paigow run``
(:class:`vision.session.Session`, no pacing, no outputs) over the whole file, returning its
round events. Ray schedules the tasks on a local Ray (started here, ``workers`` CPUs) or on a
cluster (``address``); at most ``workers`` tasks run at once. The driver writes each
recording's rounds to the audit store in one transaction, in the order the recordings were
given (the store's chain order does not depend on which task finished first), with a progress
bar over the recordings.

A recording is one table's: its table id is ``table_id`` when given, else the file's stem
(``table7.mp4`` -> ``table7``), so ``paigow run table7.mp4 --table-id table7`` and the
re-audit record the same table. Round ids are numbered per recording from ``r000001``, as a
live session started with an empty store numbers them.

:func:`compare_rounds` matches re-read and live rounds by ``(table_id, round_id)`` and lists
every disagreement: a round only one side has, whether it settled, and per position the tiles,
hands, result, bet, net and commission, and the bank's totals (times, sources, model versions,
confidences and pixel coordinates are not compared).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from scoring.errors import InputError

VIDEO_SUFFIXES = (".mp4", ".avi", ".mkv", ".mov", ".m4v", ".webm")
_POSITION_FIELDS = ("tiles", "high", "low", "result", "bet", "net", "commission")
_BANK_FIELDS = ("gross", "commission", "net", "house_net", "commission_total")

__all__ = ["recordings", "reread", "reaudit", "compare_rounds", "live_rounds",
           "VIDEO_SUFFIXES"]


def recordings(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """The video files named: files as given, folders expanded to their videos
    (:data:`VIDEO_SUFFIXES`, sorted by name, not recursive).

    Raises:
        InputError: a path that does not exist, a folder without videos, a file named twice.
    """
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.iterdir()
                           if f.is_file() and f.suffix.lower() in VIDEO_SUFFIXES)
            if not found:
                raise InputError(f"folder {str(p)!r} holds no video "
                                 f"({', '.join(VIDEO_SUFFIXES)})")
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise InputError(f"recording {str(p)!r} does not exist")
    seen: set[Path] = set()
    for p in out:
        r = p.resolve()
        if r in seen:
            raise InputError(f"recording {str(p)!r} is named twice")
        seen.add(r)
    if not out:
        raise InputError("no recording given")
    return out


def _config(path: Path, options: Mapping[str, Any]):
    from vision.config import SessionOptions, build_run_config

    o = dict(options)
    return build_run_config(SessionOptions(
        source=str(path), layout=o.get("layout"), config=o.get("config"),
        stable=o.get("stable"), banker=o.get("banker"),
        table_id=o.get("table_id") or path.stem, min_confidence=o.get("min_confidence"),
        models=o.get("models"), backend=o.get("backend") or None, progress=False))


def reread(path: str, options: Mapping[str, Any], detectors: Any = None) -> dict:
    """Re-read one recording (the body of a Ray task; also callable directly).

    Args:
        path: the video file.
        options: session options (``layout``, ``config``, ``stable``, ``banker``,
            ``table_id``, ``min_confidence``, ``models``, ``backend``).
        detectors: None (the models), or one picklable object with ``detect`` and
            ``detect_batch`` (tests).

    Returns:
        ``{"path", "table_id", "frames", "events" (round event dicts, in order), "wall_s"}``.

    Raises:
        InputError: an unreadable video or a bad setting (named).
    """
    from vision.session import Session

    cfg = _config(Path(path), options)
    session = Session(cfg, tile_detector=detectors, pip_detector=detectors)
    summary = session.run()
    return {"path": str(path), "table_id": cfg.pipeline.table.table_id,
            "frames": summary.get("frames"), "events": summary.get("events") or [],
            "wall_s": round(session.wall_s, 3)}


def _ray(address: str | None, workers: int):
    try:
        import ray
    except ImportError:
        raise InputError("paigow reaudit needs Ray: pip install 'paigow-vision[ray]'") from None
    if not ray.is_initialized():
        kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                              "configure_logging": False}
        if address:
            try:
                ray.init(address=address, **kw)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise InputError(f"cannot connect to the Ray cluster at {address!r}: "
                                 f"{exc}") from None
        else:
            ray.init(num_cpus=workers, **kw)
    return ray


def reaudit(paths: Sequence[str | os.PathLike], *, audit: str | os.PathLike | None = None,
            options: Mapping[str, Any] | None = None, workers: int = 2,
            address: str | None = None, progress: bool = True, detectors: Any = None,
            on_done: Callable[[dict], None] | None = None) -> list[dict]:
    """Re-read recordings in parallel as Ray tasks and store the rounds found (module
    docstring).

    Args:
        paths: video files or folders of them (:func:`recordings`).
        audit: the audit store the rounds are appended to (SQLite path or PostgreSQL URL), or
            None (only returned).
        options: session options for every recording (see :func:`reread`).
        workers: most tasks running at once (and the CPUs of a local Ray started here).
        address: a Ray cluster (``ray://host:10001`` or ``auto``); None: local Ray (an already
            initialised Ray is used as it is).
        progress: a progress bar on stderr over the recordings.
        detectors: handed to every task (tests).
        on_done: called with each recording's result once it is stored.

    Returns:
        one result per recording, in the order given (:func:`reread`'s, plus ``"stored"``:
        the number of rounds appended).

    Raises:
        InputError: bad paths, settings or store (before any task starts), a recording that
            cannot be read (named), no Ray or an unreachable cluster.
    """
    files = recordings(paths)
    if workers < 1:
        raise InputError(f"--workers must be >= 1, got {workers}")
    options = dict(options or {})
    for f in files:  # every setting checked before Ray starts
        _config(f, options)
    store = None
    if audit is not None:
        from vision.audit import AuditStore

        store = AuditStore(audit)
    try:
        ray = _ray(address, workers)
        task = ray.remote(num_cpus=1, max_retries=1)(reread)
        from vision.recognition.identify import progress_bar

        bar = progress_bar(len(files), progress, "reaudit")
        if bar is not None:
            bar.unit = "recording"
        pending: dict[Any, int] = {}
        results: dict[int, dict] = {}
        next_submit = next_store = 0
        ordered: list[dict] = []
        try:
            while next_store < len(files):
                while next_submit < len(files) and len(pending) < workers:
                    ref = task.remote(str(files[next_submit]), options, detectors)
                    pending[ref] = next_submit
                    next_submit += 1
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    i = pending.pop(ref)
                    try:
                        results[i] = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:
                        cause = exc.as_instanceof_cause()
                        if isinstance(cause, InputError):
                            raise InputError(f"{files[i]}: {cause}") from None
                        raise
                    if bar is not None:
                        bar.update(1)
                while next_store in results:  # store in the order given
                    res = results.pop(next_store)
                    res["stored"] = 0
                    if store is not None and res["events"]:
                        res["stored"] = len(store.append_many(res["events"]))
                    ordered.append(res)
                    if on_done is not None:
                        on_done(res)
                    next_store += 1
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)
            if bar is not None:
                bar.close()
        return ordered
    finally:
        if store is not None:
            store.close()


def live_rounds(db: str | os.PathLike, verified=None) -> tuple[list[dict], dict]:
    """The rounds of the live store as ``--compare`` reads them: each round's camera record
    (what the camera read live, as the re-read reads it; a supervisor's manual entries and
    acknowledgements are records of their own, not compared -- ``paigow audit report``
    shows them).

    Args:
        db: the live audit store (path or URL), verified first by the caller
            (:func:`vision.audit.integrity.verify_before_read`).
        verified: that verification's result: when ok, only the records it covered are read;
            when broken (``--force``), every record.

    Returns:
        ``(events, last_seq)``: the camera records' payloads in store order, and
        ``(table_id, round_id) -> the newest record id the round draws on`` (camera, manual
        and acknowledgement records; for marking rounds after a break).

    Raises:
        InputError: the store cannot be opened.
    """
    from vision.audit.report import stored_rounds

    upto = verified.rounds if verified is not None and verified.ok else None
    srs = stored_rounds(db, upto=upto)
    return ([sr.camera.payload for sr in srs],
            {(str(sr.table_id), str(sr.round_id)): sr.last_seq for sr in srs})


def _key(ev: Mapping) -> tuple[str, str]:
    return str(ev.get("table_id")), str(ev.get("round_id"))


def compare_rounds(reread_events: Iterable[Mapping], live_events: Iterable[Mapping],
                   tables: Iterable[str] | None = None) -> list[dict]:
    """Where the re-read rounds disagree with the live ones (module docstring).

    Args:
        reread_events: round events (JSON form) of the re-audit.
        live_events: round events recorded live (e.g. an audit store's payloads).
        tables: compare only these table ids (default: the tables of ``reread_events``).

    Returns:
        differences in round order: ``{"kind", "table_id", "round_id", "position", "field",
        "live", "reread"}``; ``kind`` is ``missing_live`` (re-read only), ``missing_reread``
        (live only), ``settled``, ``position`` (a position one side lacks), ``field`` (a
        position's field) or ``bank`` (a bank total).
    """
    rr = {_key(e): e for e in reread_events}
    tables = set(tables) if tables is not None else {t for t, _ in rr}
    live = {_key(e): e for e in live_events if str(e.get("table_id")) in tables}
    out: list[dict] = []

    def diff(kind, key, position=None, field=None, a=None, b=None):
        out.append({"kind": kind, "table_id": key[0], "round_id": key[1], "position": position,
                    "field": field, "live": a, "reread": b})

    for key in sorted(set(rr) | set(live)):
        a, b = live.get(key), rr.get(key)
        if a is None:
            diff("missing_live", key, b=b.get("settled"))
            continue
        if b is None:
            diff("missing_reread", key, a=a.get("settled"))
            continue
        if bool(a.get("settled")) != bool(b.get("settled")):
            diff("settled", key, a=a.get("settled"), b=b.get("settled"))
        pa, pb = a.get("positions") or {}, b.get("positions") or {}
        for pos in sorted(set(pa) | set(pb), key=lambda p: (p != "dealer", p)):
            if pos not in pa or pos not in pb:
                diff("position", key, pos, None, pos in pa, pos in pb)
                continue
            for f in _POSITION_FIELDS:
                if pa[pos].get(f) != pb[pos].get(f):
                    diff("field", key, pos, f, pa[pos].get(f), pb[pos].get(f))
        ba, bb = a.get("bank") or {}, b.get("bank") or {}
        for f in _BANK_FIELDS:
            if ba.get(f) != bb.get(f):
                diff("bank", key, None, f, ba.get(f), bb.get(f))
    return out

"""The tables file of ``paigow serve --tables`` (docs/pit.md): which tables one machine watches.

.. code-block:: yaml

    defaults:                 # optional: settings every table gets unless it names its own
      audit: postgresql://paigow@/audit?host=/run/postgresql
      config: common.yaml
    tables:
      - id: table-7           # the table id written in its rounds (unique)
        source: rtsp://admin@cam7/stream
        password_file: secrets/cam7.txt   # the camera's password (first line), kept out of
        layout: layouts/table7.yaml       # this file; or ${NAME} in the URL: from the environment
        banker: dealer
      - id: table-8
        source: /recordings/table8.mp4
        loop: true
        audit: table8.db      # SQLite file, relative to this file's folder

Per table: ``id`` and ``source`` (required); ``layout``, ``config``, ``audit``,
``audit_frames`` (key-frame folder; required with a PostgreSQL store), ``banker``,
``stable``, ``out``, ``min_confidence``, ``models``, ``backend``, ``loop`` (replay a file source),
``realtime`` (pace a file to its frame rate; default true), ``password_file`` (a file whose
first line is the password of the source URL's user: the URL is opened with it and shown,
logged and stored without it, docs/configuration.md). Relative paths (layout, config, out, a
file source, an SQLite audit store, models, password file) are taken from the tables file's
folder. ``paigow serve --tables`` refuses a file source that does not exist, a glob that
matches no image and a folder without one (:meth:`TableSpec.check_source`), naming the table,
before any worker starts. A tables file holds at most :data:`MAX_TABLES` tables.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from scoring.errors import InputError

_KEYS = {"id", "source", "layout", "config", "audit", "audit_frames", "banker", "stable", "out",
         "min_confidence", "models", "backend", "loop", "realtime", "password_file", "video"}
_PATHS = ("layout", "config", "out", "models", "audit_frames")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: Most tables in one tables file: one worker process (and 16 MiB of shared memory) per table;
#: a casino pit is tens of tables, and 10,000 were accepted before (issue 42).
MAX_TABLES = 256


@dataclass(frozen=True)
class TableSpec:
    """One table of the tables file (values as written, relative paths resolved).

    Attributes:
        table_id: the table's id (letters, digits, ``_.-``; used in URLs: ``/tables/<id>/``).
        source: camera index, stream URL or file.
        options: the session options (``layout``, ``config``, ``audit``, ``banker``,
            ``stable``, ``out``, ``min_confidence``, ``models``, ``backend``).
        loop: replay a file source when it ends.
        realtime: pace a file source to its frame rate.
    """

    table_id: str
    source: str = field(repr=False)  # may hold the camera's password: never shown
    options: Mapping[str, Any] = field(default_factory=dict)
    loop: bool = False
    realtime: bool = True

    def check_source(self) -> None:
        """Refuse a file source that does not exist, a glob that matches no image file and a
        folder that holds none -- a worker would die on it and be restarted for ever (issue
        42) -- (a camera or stream may be down: it is waited for).

        Raises:
            InputError: ``table 'ID': source not found: PATH``, ``table 'ID': glob matches no
                images: PATTERN``, ``table 'ID': folder contains no images: PATH``.
        """
        import glob

        s = self.source
        if not _is_file_source(s):
            return
        p = Path(s)
        if p.exists():
            if p.is_dir() and not any(_is_image(str(f)) for f in p.iterdir()):
                raise InputError(f"table {self.table_id!r}: folder contains no images: {s}")
            return
        if not (set("*?[") & set(s)):
            raise InputError(f"table {self.table_id!r}: source not found: {s}")
        if not any(_is_image(f) for f in glob.iglob(s, recursive=True)):
            raise InputError(f"table {self.table_id!r}: glob matches no images: {s}")

    def run_config(self):
        """The :class:`vision.config.RunConfig` of this table, built like ``paigow run``'s
        (:func:`vision.commands.common.run_config`).

        Raises:
            InputError: a bad setting, layout or config file (named).
        """
        from vision.config import SessionOptions, build_run_config
        from vision.recognition.backends import live_backend

        o = self.options
        try:
            return build_run_config(SessionOptions(
                source=self.source, layout=o.get("layout"), config=o.get("config"),
                out=o.get("out"), stable=o.get("stable"), banker=o.get("banker"),
                table_id=self.table_id, audit=o.get("audit"),
                audit_frames=o.get("audit_frames"), min_confidence=o.get("min_confidence"),
                models=o.get("models"), backend=o.get("backend") or None,
                default_backend=live_backend(), progress=False,
                wait_at_start=True, video=o.get("video")))
        except InputError as exc:
            raise InputError(f"table {self.table_id!r}: {exc}") from None


def _resolve(base: Path, value: Any) -> str:
    p = Path(os.path.expanduser(str(value)))
    return str(p if p.is_absolute() else base / p)


def _is_image(path: str) -> bool:
    """An image file by its extension, as :func:`vision.io.capture.open_source` takes them."""
    from vision.io.images import IMAGE_EXTENSIONS

    return Path(path).suffix.lower() in IMAGE_EXTENSIONS and os.path.isfile(path)


def _is_file_source(s: str) -> bool:
    return not (s.isdigit() or "://" in s)


def load_tables(path: str | os.PathLike) -> list[TableSpec]:
    """Read a tables file (module docstring).

    Returns:
        the tables in file order.

    Raises:
        InputError: a missing or unreadable file, bad YAML (:mod:`vision.io.yamlsafe`: over
            1 MiB, an alias), no ``tables`` list, more than :data:`MAX_TABLES` tables, a table
            without ``id`` or ``source``, a duplicate or malformed id, an unknown key (named
            with the table), a non-boolean ``loop``/``realtime``.
    """
    from vision.io.yamlsafe import load_yaml

    p = Path(path)
    if not p.is_file():
        raise InputError(f"tables file not found: {p}")
    data = load_yaml(p, "tables file") or {}  # size, aliases, depth capped
    if not isinstance(data, Mapping) or not isinstance(data.get("tables"), list) \
            or not data["tables"]:
        raise InputError(f"tables file {p}: expected a non-empty 'tables:' list")
    if len(data["tables"]) > MAX_TABLES:
        raise InputError(f"tables file {p}: {len(data['tables'])} tables; at most {MAX_TABLES} "
                         "are accepted on one machine")
    unknown_top = set(data) - {"tables", "defaults"}
    if unknown_top:
        raise InputError(f"tables file {p}: unknown key {sorted(unknown_top)[0]!r} "
                         "(allowed: tables, defaults)")
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise InputError(f"tables file {p}: 'defaults' must be a mapping")
    base = p.resolve().parent
    out: list[TableSpec] = []
    seen: set[str] = set()
    for n, entry in enumerate(data["tables"], 1):
        if not isinstance(entry, Mapping):
            raise InputError(f"tables file {p}: table {n} is not a mapping")
        merged = {**defaults, **entry}
        where = f"tables file {p}: table {entry.get('id', n)!r}"
        bad = sorted(set(merged) - _KEYS)
        if bad:
            raise InputError(f"{where}: unknown key {bad[0]!r} (allowed: "
                             f"{', '.join(sorted(_KEYS))})")
        tid, source = entry.get("id"), merged.get("source")
        if not isinstance(tid, str) or not _ID.match(tid):
            raise InputError(f"{where}: id must be 1-64 letters, digits, '_', '.', '-' "
                             f"(got {tid!r})")
        if tid in seen:
            raise InputError(f"{where}: id {tid!r} is used by two tables")
        seen.add(tid)
        if source is None or str(source).strip() == "":
            raise InputError(f"{where}: no source")
        source = str(source)
        if _is_file_source(source):
            source = _resolve(base, source)
        if merged.get("password_file") is not None:
            from vision.sources import with_password

            pw_path = Path(_resolve(base, merged["password_file"]))
            try:
                lines = pw_path.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"{where}: password_file {pw_path} cannot be read "
                                 f"({type(exc).__name__})") from None
            if not lines or not lines[0]:
                raise InputError(f"{where}: password_file {pw_path} is empty")
            try:
                source = with_password(source, lines[0])
            except InputError as exc:
                raise InputError(f"{where}: {exc}") from None
        opts = {k: merged[k] for k in _KEYS - {"id", "source", "loop", "realtime",
                                               "password_file"}
                if merged.get(k) is not None}
        for k in _PATHS:
            if k in opts:
                opts[k] = _resolve(base, opts[k])
        if "audit" in opts and "://" not in str(opts["audit"]):
            opts["audit"] = _resolve(base, opts["audit"])
        flags = {}
        for k, default in (("loop", False), ("realtime", True)):
            v = merged.get(k, default)
            if not isinstance(v, bool):
                raise InputError(f"{where}: {k} must be true or false (got {v!r})")
            flags[k] = v
        out.append(TableSpec(tid, source, opts, **flags))
    return out

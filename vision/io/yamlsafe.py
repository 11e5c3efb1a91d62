"""The one reader of YAML files in vision/ (layout, config, tables, training and data YAMLs),
with limits that a hostile file cannot get past (docs/configuration.md, "YAML files").

:func:`load_yaml` (a file) and :func:`load_yaml_text` (text already read) parse with PyYAML's
safe loader (libyaml's C parser where installed) and refuse, before anything is built:

* a file over :data:`MAX_YAML_BYTES` (1 MiB; every file the project reads is a few KiB);
* any alias (``*name``, also a ``<<: *name`` merge): a 385-byte "billion laughs" file of
  nested aliases expands to about 10^9 values once walked (48-75 s and 3.5 GB before a
  MemoryError, issue 42); none of the project's files needs one -- a tables file has
  ``defaults:`` for shared settings;
* nesting deeper than :data:`MAX_DEPTH` (a file of ``[[[[...`` recursing in the builder);
* more than :data:`MAX_NODES` values (scalars, lists and mappings): PyYAML builds about
  50,000 values a second, so 1 MiB of ``[0,0],`` (400,000 values) took 9 s before any check
  of its meaning could refuse it; the largest file the project accepts (256 tables, or 8
  polygons of 256 points) is about 10,000;
* more than one document.

Every error is a :class:`scoring.errors.InputError` of one line naming the file, and the line
and column (1-based) where the parser stopped: ``layout file t.yaml is not valid YAML: line 3,
column 9: aliases (*name) are not accepted``. The command line turns it into exit code 2.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from scoring.errors import InputError

__all__ = ["load_yaml", "load_yaml_text", "MAX_YAML_BYTES", "MAX_DEPTH", "MAX_NODES"]

#: Largest YAML file read (bytes).
MAX_YAML_BYTES = 1 << 20
#: Deepest nesting of mappings and sequences accepted.
MAX_DEPTH = 64
#: Most values (scalars, sequences, mappings) in one document.
MAX_NODES = 100_000


def _loader():
    import yaml

    return getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader


def _where(mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


def load_yaml_text(text: str, what: str) -> Any:
    """Parse YAML ``text`` under the module's limits (aliases, depth, one document).

    Args:
        text: the YAML text (str; its size is the caller's to check, :func:`load_yaml` does).
        what: the file named in messages, e.g. ``"layout file t.yaml"``.

    Returns:
        the document as plain Python values (dict / list / str / int / float / bool / None,
        dates as :class:`datetime.date`), None for an empty document.

    Raises:
        InputError: ``{what} is not valid YAML: line L, column C: {problem}`` -- a syntax
            error, an alias, nesting over :data:`MAX_DEPTH`, over :data:`MAX_NODES` values,
            several documents.
    """
    import yaml

    loader = _loader()
    depth = docs = nodes = 0
    try:
        for ev in yaml.parse(text, Loader=loader):  # events only: nothing is built yet
            if isinstance(ev, yaml.AliasEvent):
                raise InputError(f"{what} is not valid YAML: {_where(ev.start_mark)}aliases "
                                 f"(*{ev.anchor}) are not accepted")
            if isinstance(ev, (yaml.ScalarEvent, yaml.MappingStartEvent,
                               yaml.SequenceStartEvent)):
                nodes += 1
                if nodes > MAX_NODES:
                    raise InputError(f"{what} is not valid YAML: {_where(ev.start_mark)}more "
                                     f"than {MAX_NODES} values")
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise InputError(f"{what} is not valid YAML: {_where(ev.start_mark)}nested "
                                     f"deeper than {MAX_DEPTH} levels")
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            elif isinstance(ev, yaml.DocumentStartEvent):
                docs += 1
                if docs > 1:
                    raise InputError(f"{what} is not valid YAML: {_where(ev.start_mark)}more "
                                     "than one document")
        return yaml.load(text, Loader=loader)  # noqa: S506 -- a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        problem = " ".join(str(problem).split())
        raise InputError(f"{what} is not valid YAML: {_where(mark)}{problem}") from None
    except RecursionError:
        raise InputError(f"{what} is not valid YAML: nested too deeply") from None


def load_yaml(path: str | os.PathLike, what: str, *, max_bytes: int = MAX_YAML_BYTES) -> Any:
    """Read the YAML file ``path`` (UTF-8) under the module's limits.

    Args:
        path: the file.
        what: its kind for messages (``"layout file"``, ``"config file"``, ``"tables file"``);
            the path is appended.
        max_bytes: the size cap in bytes (default :data:`MAX_YAML_BYTES`).

    Returns:
        the document (:func:`load_yaml_text`).

    Raises:
        InputError: one line naming the file: not found or unreadable, over ``max_bytes``,
            not UTF-8 (the byte offset), or not valid YAML (line and column).
    """
    p = Path(path)
    name = f"{what} {p}"
    try:
        with open(p, "rb") as f:
            raw = f.read(max_bytes + 1)  # never more than the cap, whatever stat says
    except FileNotFoundError:
        raise InputError(f"{name} not found") from None
    except OSError as exc:
        raise InputError(f"{name} cannot be read: {exc.strerror or type(exc).__name__}") \
            from None
    if len(raw) > max_bytes:
        raise InputError(f"{name} is over {max_bytes} bytes (the limit for a YAML file)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name} is not UTF-8 text (byte {exc.start})") from None
    return load_yaml_text(text, name)

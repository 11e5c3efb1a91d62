"""A source's secrets and identity: camera credentials never shown, logged or stored; a stable
source id for exactly-once storage (docs/configuration.md, camera credentials; docs/audit.md,
exactly once).

* :func:`redact_url`: ``rtsp://admin:secret@cam7/live?token=abc`` ->
  ``rtsp://admin:***@cam7/live?token=***`` -- the password of the userinfo (or a userinfo
  without one, which may be a token, as a whole) and the value of every query parameter whose
  name says it is a secret (:data:`SECRET_QUERY`). Every place a source is shown (API, pages,
  stderr, logs), written (events.jsonl, summaries) or stored (audit payloads) uses this form;
  only the capture itself opens the URL with its credentials.
* :func:`redact_text`: every URL inside a line of text redacted (error messages, logs).
* :func:`expand_credentials`: ``${NAME}`` in a source spec replaced by the environment
  variable ``NAME`` at open time, so a password need not be typed on a command line or kept in
  a tables file (a tables file may also name a ``password_file``, :mod:`vision.pit.tables`).
* :func:`source_id`: a stable id of where a round's frame came from -- for a file
  ``file-<sha16>`` of its content: its size and its first and last MiB (the same recording
  named relatively, absolutely, through a symlink or ``./``, a hard link, or a byte copy in
  another folder with another modification time is one source; issue 42: a hard link and a
  copy doubled the rounds), for a camera or stream ``live-<sha16>`` of its redacted URL.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from scoring.errors import InputError

__all__ = ["redact_url", "redact_text", "expand_credentials", "source_id", "with_password",
           "is_live",
           "install_log_redaction", "SECRET_QUERY", "MASK"]

#: What a secret is replaced by.
MASK = "***"
#: Query parameter names (case-insensitive, anywhere in the name) whose values are secrets.
SECRET_QUERY = re.compile(r"pass|pas$|pwd|pw|secret|token|key|auth|sig|cred|session|apikey"
                          r"|^p$|^u?p$", re.I)
#: A ``key=value`` after ``?``, ``&``, ``;`` or ``#`` (:func:`redact_url`).
_PAIR = re.compile(r"([?&;#])([^?&;#=/]+)=([^&;#]*)")
_URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_URL_IN_TEXT = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def redact_url(spec: object) -> str:
    """``spec`` as text with its secrets masked (module docstring); anything that is not a
    URL (a camera index, a file, a folder) is returned unchanged. Idempotent.

    The userinfo runs to the last ``@`` (a password may hold ``/``, ``#``, ``?``, ``;``, ``=``
    or ``@``), unless what comes before it reads as a host, then a path with a parameter
    (``cam/x?mail=a@b``: no ``:`` before the first ``/?#;``);
    every ``key=value`` after a ``?``, ``&``, ``;`` or ``#`` whose key looks secret
    (:data:`SECRET_QUERY`) has its value masked, in the query, in ``;`` path parameters and
    in the fragment alike."""
    s = str(spec)
    if not _URL_RE.match(s):
        return s
    scheme, rest = s.split("://", 1)
    prefix = ""
    at = rest.rfind("@")
    if at >= 0:
        head = rest[:at]
        cut = min((head.find(c) for c in "/?#;" if c in head), default=-1)
        if not ("=" in head and cut >= 0 and ":" not in head[:cut]):
            user = head.split(":", 1)[0] if ":" in head else None
            prefix = f"{user}:{MASK}@" if user is not None else f"{MASK}@"
            rest = rest[at + 1:]

    def mask(m: re.Match) -> str:
        key = m.group(2)
        return f"{m.group(1)}{key}={MASK if SECRET_QUERY.search(unquote(key)) else m.group(3)}"

    return f"{scheme}://{prefix}{_PAIR.sub(mask, rest)}"


def redact_text(text: object) -> str:
    """``text`` with every URL in it redacted (:func:`redact_url`)."""
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), str(text))


def _redact_record(record: logging.LogRecord) -> logging.LogRecord:
    try:
        msg = record.getMessage()
    except Exception:  # noqa: BLE001 -- a bad log call is not ours to break
        return record
    if "://" in msg:
        red = redact_text(msg)
        if red != msg:
            record.msg, record.args = red, None
    return record


_installed = False


def install_log_redaction() -> None:
    """Make every log record of the process carry its URLs redacted (a record factory wraps
    the current one, whatever handler prints it; :func:`vision.cli.main` installs it once)."""
    global _installed
    if _installed:
        return
    base = logging.getLogRecordFactory()

    def factory(*args, **kwargs):
        return _redact_record(base(*args, **kwargs))

    logging.setLogRecordFactory(factory)
    _installed = True


def expand_credentials(spec: str, environ=None) -> str:
    """``spec`` with each ``${NAME}`` replaced by the environment variable ``NAME``
    (URL-quoted where it lands in the userinfo).

    Raises:
        InputError: a variable that is not set (naming it, never a value).
    """
    env = os.environ if environ is None else environ
    if "${" not in str(spec):
        return str(spec)

    def sub(m: re.Match) -> str:
        name = m.group(1)
        if name not in env:
            raise InputError(f"environment variable {name} is not set (named in the source "
                             f"{redact_url(spec)})")
        return quote(env[name], safe="")
    return _ENV_REF.sub(sub, str(spec))


def with_password(spec: str, password: str) -> str:
    """The URL ``spec`` with ``password`` as its userinfo's password (the user kept).

    Raises:
        InputError: ``spec`` is not a URL with a user name (``scheme://user@host/...``).
    """
    parts = urlsplit(str(spec)) if _URL_RE.match(str(spec)) else None
    if parts is None or "@" not in parts.netloc:
        raise InputError(f"a password is given for {redact_url(spec)}, which is not a URL "
                         "with a user name (scheme://user@host/...)")
    userinfo, host = parts.netloc.rsplit("@", 1)
    user = userinfo.split(":", 1)[0]
    return urlunsplit((parts.scheme, f"{user}:{quote(password, safe='')}@{host}", parts.path,
                       parts.query, parts.fragment))


def is_live(spec: object) -> bool:
    """True for a camera index (``"0"``) or a URL: a source that can be down and come back."""
    s = str(spec)
    return s.isdigit() or bool(_URL_RE.match(s))


#: Bytes read from each end of a file for its identity (:func:`source_id`).
IDENTITY_SPAN = 1 << 20


def _content_key(path: Path) -> str:
    """SHA-256 (hex) of a file's size and its first and last :data:`IDENTITY_SPAN` bytes
    (the whole file when it is shorter than two spans). Raises OSError."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        h.update(f"paigow-source-v2\0{size}\0".encode())
        h.update(f.read(IDENTITY_SPAN))
        if size > IDENTITY_SPAN:
            f.seek(max(IDENTITY_SPAN, size - IDENTITY_SPAN))
            h.update(b"\0")
            h.update(f.read(IDENTITY_SPAN))
    return h.hexdigest()


def source_id(source: object, source_file: object = None) -> str:
    """A stable id (``file-<16 hex>`` / ``live-<16 hex>``) of where a round's frame came from:
    the file ``source_file`` (else ``source`` when it names an existing file) by its content
    -- SHA-256 of its size and its first and last MiB (:data:`IDENTITY_SPAN`; at most 2 MiB
    read) -- so a symlink, a hard link or a byte copy of a recording (any name, folder or
    modification time) is the same source and a file of another size or with another byte in
    either end is another; otherwise the redacted spec of ``source`` (a camera, a stream, a
    glob). Raises nothing: an unreadable file falls back to the next candidate."""
    for cand in (source_file, source):
        if cand is None or cand == "" or _URL_RE.match(str(cand)):
            continue
        p = Path(str(cand))
        try:
            if p.is_file():
                return "file-" + _content_key(p)[:16]
        except OSError:
            continue
    return "live-" + hashlib.sha256(redact_url(source).encode("utf-8", "surrogatepass")
                                    ).hexdigest()[:16]

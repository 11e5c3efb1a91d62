"""The secret key of a keyed audit store: read from the environment variable
:data:`KEY_ENV` or from a key file, never written into the store (docs/audit.md, tamper
evidence).

With a key, every record carries an HMAC-SHA256 of its hash (:func:`vision.audit.chain.
record_mac`): someone with the database file but without the key can still delete, edit or
append rows, and recompute the plain hash chain, but cannot produce the MACs, so ``paigow audit
verify`` run with the key names the first record they touched.
"""

from __future__ import annotations

import os
from pathlib import Path

from scoring.errors import InputError

__all__ = ["KEY_ENV", "MIN_KEY_BYTES", "load_key"]

KEY_ENV = "PAIGOW_AUDIT_KEY"
"""Environment variable holding the key (its text, UTF-8)."""
MIN_KEY_BYTES = 16
"""Shortest key accepted (bytes): an HMAC key must not be guessable."""


def load_key(key_file: str | os.PathLike | None = None, *, env: bool = True) -> bytes | None:
    """The audit key: the contents of ``key_file`` (trailing newline removed) when given, else
    the value of ``$PAIGOW_AUDIT_KEY`` (when ``env``), else None (an unkeyed store).

    Raises:
        InputError: the key file cannot be read, or the key is shorter than
            :data:`MIN_KEY_BYTES` bytes (naming where it came from, never its value).
    """
    if key_file is not None:
        try:
            key = Path(key_file).read_bytes().rstrip(b"\r\n")
        except OSError as exc:
            raise InputError(f"cannot read audit key file {str(key_file)!r}: "
                             f"{exc.strerror or exc}") from None
        where = f"audit key file {str(key_file)!r}"
    elif env and os.environ.get(KEY_ENV):
        key = os.environ[KEY_ENV].encode("utf-8")
        where = f"${KEY_ENV}"
    else:
        return None
    if len(key) < MIN_KEY_BYTES:
        raise InputError(f"{where} holds {len(key)} byte(s); an audit key needs at least "
                         f"{MIN_KEY_BYTES}")
    return key

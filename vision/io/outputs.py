"""Checking an output folder before any work starts (``--out`` of ``paigow run`` / ``demo``).

A run that finds out at its first write that ``--out`` names an existing file or a place it
cannot write would end in a traceback after the models were loaded; :func:`check_out_dir`
says so first, in one line naming the path. Nothing is created: a missing folder is checked by
probing the nearest existing parent (the run creates the folder itself).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from scoring.errors import InputError

__all__ = ["check_out_dir"]


def check_out_dir(path: str | os.PathLike, what: str = "--out",
                  files: tuple[str, ...] = ("events.jsonl", "annotated.mp4", "annotated")
                  ) -> Path:
    """Make sure ``path`` is, or can become, a folder this process can write into.

    Args:
        path: the output folder.
        what: how the user named it (for the message), e.g. ``"--out"``.
        files: names the run will write inside it; each must not be an existing folder (but
            ``annotated``, the pictures' folder) nor a symbolic link (a run as root would
            write where the link points).

    Returns:
        ``Path(path)``.

    Raises:
        InputError: an output inside it is a symbolic link; ``path`` is an existing file (or
            another non-folder), lies under a file, or
            its folder (or nearest existing parent) cannot be written -- read-only file
            system, no permission, a pseudo file system; the message names the path and the
            reason.
    """
    p = Path(path)
    text = str(path)
    if not text.strip():
        raise InputError(f"{what} is empty")
    if p.exists() and not p.is_dir():
        raise InputError(f"{what} {text!r} is an existing file, not a folder")
    probe = p
    while not probe.exists():
        parent = probe.parent
        if parent == probe:
            break
        probe = parent
    if probe.exists() and not probe.is_dir():
        raise InputError(f"{what} {text!r} cannot be created: {str(probe)!r} is a file")
    try:  # the only reliable test of "writable" (root ignores modes; read-only mounts, /proc)
        fd, tmp = tempfile.mkstemp(prefix=".paigow-write-test-", dir=probe)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        where = "" if probe == p else f" (in {str(probe)!r})"
        raise InputError(f"{what} {text!r} is not writable{where}: {reason}") from None
    if p.is_dir():
        for name in files:
            if (p / name).is_symlink():
                # a service writing where a link points (issue 42): never followed
                raise InputError(f"{what} {text!r}: {name} inside it is a symbolic link "
                                 f"(to {os.readlink(p / name)!r}); outputs never follow links")
            if (p / name).is_dir() and name != "annotated":
                raise InputError(f"{what} {text!r}: {name} inside it is a folder")
    return p

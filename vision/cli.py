"""The ``paigow`` command: thin argument parsing over the ``scoring`` and ``vision`` packages.

Each sub-command module registers itself with :func:`argparse` and keeps its heavy imports
inside its handler, so ``paigow hand`` never loads OpenCV or PyTorch. Bad input -- an
:class:`scoring.errors.InputError` raised by a handler, or argparse's own complaint about the
command line -- becomes one line on stderr and exit code 2; when ``--json`` is on the command
line, also one JSON object ``{"error", "command", "exit_code"}`` on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys

from scoring.errors import InputError

__all__ = ["build_parser", "main", "version"]


class UsageError(Exception):
    """argparse rejected the command line (raised instead of printing and exiting)."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser, self.message = parser, message


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors raise :class:`UsageError`, so :func:`main` can
    print them as JSON under ``--json`` (sub-parsers are created with the same class)."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        raise UsageError(self, message)


def version() -> str:
    """The installed distribution's version (``pyproject.toml``), or ``"unknown"``."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("paigow-vision")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (scoring commands first, then vision commands)."""
    parser = Parser(
        prog="paigow",
        description="Pai gow tiles: exact scoring, house way, settlement and table vision.",
    )
    parser.add_argument("--version", action="version", version=f"paigow {version()}",
                        help="print the program's version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    from scoring import cli as scoring_cli
    from vision import commands as vision_commands

    scoring_cli.register(sub)
    vision_commands.register(sub)
    return parser


def _fail(command: str, message: str, as_json: bool, hint: str = "") -> int:
    from vision.sources import redact_text

    # one line, whatever the message holds; a camera URL in it shown without its credentials
    msg = redact_text(" ".join(str(message).split()))
    prog = " ".join(["paigow", command]).strip()
    print(f"{prog}: error: {msg}{hint}", file=sys.stderr, flush=True)
    if as_json:  # machine readers get the error as JSON on stdout
        print(json.dumps({"error": msg, "command": command or None, "exit_code": 2}),
              flush=True)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Entry point. Returns the exit code: 0 ok, 1 a check found differences, 2 bad input."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from vision.sources import install_log_redaction

    install_log_redaction()  # no log line shows a camera password
    as_json = "--json" in argv
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
    except UsageError as exc:
        command = exc.parser.prog.partition(" ")[2]
        return _fail(command, exc.message, as_json, f" (see '{exc.parser.prog} -h')")
    if extra:  # named by the sub-command they were given to, not by the root parser
        command = " ".join([args.command] + ([args.audit_command] if getattr(
            args, "audit_command", None) else []))
        return _fail(command, f"unrecognized arguments: {' '.join(extra)}", as_json,
                     f" (see 'paigow {command} -h')")
    as_json = bool(getattr(args, "json", False)) or as_json
    try:
        rc = args.func(args)
    except InputError as exc:
        return _fail(args.command, str(exc), as_json)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `paigow ... --json | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a full disk anywhere: one line naming the file, exit 2
        import errno

        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(args.command, f"disk full: {where}{exc.strerror or exc}", as_json)
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())

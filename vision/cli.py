"""The ``paigow`` command: thin argument parsing over the ``scoring`` and ``vision`` packages.

Each sub-command module registers itself with :func:`argparse` and keeps its heavy imports
inside its handler, so ``paigow hand`` never loads OpenCV or PyTorch. An
:class:`scoring.errors.InputError` becomes one line on stderr and exit code 2 (with ``--json``
also one JSON object ``{"error", "command", "exit_code"}`` on stdout).
"""

from __future__ import annotations

import argparse
import sys

from scoring.errors import InputError


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (scoring commands first, then vision commands)."""
    parser = argparse.ArgumentParser(
        prog="paigow",
        description="Pai gow tiles: exact scoring, house way, settlement and table vision.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    from scoring import cli as scoring_cli
    from vision import commands as vision_commands

    scoring_cli.register(sub)
    vision_commands.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point. Returns the exit code: 0 ok, 1 a check found differences, 2 bad input."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        rc = args.func(args)
    except InputError as exc:
        return _fail(args, str(exc))
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
        return _fail(args, f"disk full: {where}{exc.strerror or exc}")
    return int(rc or 0)


def _fail(args, message: str) -> int:
    """One line on stderr (with ``--json`` also ``{"error", "command", "exit_code"}`` on
    stdout); exit code 2."""
    msg = " ".join(message.split())  # one line, whatever the message holds
    print(f"paigow {args.command}: error: {msg}", file=sys.stderr)
    if getattr(args, "json", False):  # machine readers get the error as JSON on stdout
        import json

        print(json.dumps({"error": msg, "command": args.command, "exit_code": 2}))
    return 2


if __name__ == "__main__":
    sys.exit(main())

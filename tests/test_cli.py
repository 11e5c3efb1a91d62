"""The command line as a whole: --version, one name per option, help on every option, bad
input as one line on stderr (and JSON on stdout under --json), exit 2, for every command,
argparse's own errors included."""

from __future__ import annotations

import argparse
import json

import pytest

from vision.cli import build_parser, main, version


def _walk(parser, path=("paigow",)):
    """(command path, parser) for the root and every sub-command, depth first."""
    yield path, parser
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                yield from _walk(sp, path + (name,))


def _commands():
    return [(p, sp) for p, sp in _walk(build_parser())
            if not any(isinstance(a, argparse._SubParsersAction) for a in sp._actions)]


def test_every_option_of_every_command_has_help():
    missing = []
    for path, sp in _walk(build_parser()):
        for a in sp._actions:
            if isinstance(a, argparse._SubParsersAction):
                continue
            if not a.help:  # None or "" (argparse.SUPPRESS marks a hidden old alias)
                missing.append(f"{' '.join(path)} {'/'.join(a.option_strings) or a.dest}")
    assert not missing, missing
    assert len(_commands()) >= 15  # the walk reached the leaves (audit verify, serve, ...)


def test_one_shown_name_per_option():
    """No option is shown under two spellings; the same setting has the same name in every
    command (old spellings stay as hidden aliases)."""
    names: dict[str, set[str]] = {}
    for path, sp in _commands():
        for a in sp._actions:
            if a.help == argparse.SUPPRESS or not a.option_strings:
                continue
            assert len(a.option_strings) == 1 or a.dest == "help", (path, a.option_strings)
            names.setdefault(a.dest, set()).update(a.option_strings)
    assert names["models"] == {"--models"}
    assert names["json"] == {"--json"} and names["out"] == {"--out"}
    assert names["no_progress"] == {"--no-progress"}
    help_text = {" ".join(p): sp.format_help() for p, sp in _commands()}
    assert "--models-dir" not in help_text["paigow serve"]
    assert "--models " in help_text["paigow serve"] and "--models " in help_text["paigow run"]


def test_old_spellings_still_work():
    p = build_parser()
    a = p.parse_args(["serve", "x.mp4", "--models-dir", "m", "--banker", "3"])
    assert (a.models, a.banker) == ("m", "3")
    a = p.parse_args(["run", "x.mp4", "--models", "m2", "--banking-seat", "2"])
    assert (a.models, a.banker) == ("m2", "2")
    assert p.parse_args(["settle", "--dealer", "1-1 2-2 3-3 4-4"]).banker == "1-1 2-2 3-3 4-4"


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out == f"paigow {version()}" and version() != "unknown"


@pytest.mark.parametrize("path", [" ".join(p[1:]) for p, _ in _commands()])
def test_argparse_errors_are_json_under_json(path, capsys):
    """A command line argparse rejects (an unknown option, or a missing argument reported
    first), on every command: one line on stderr, exit 2; with --json also one JSON object
    on stdout."""
    argv = path.split() + ["--no-such-option", "--json"]
    assert main(argv) == 2
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert doc == {"error": doc["error"], "command": path, "exit_code": 2}
    assert cap.err.strip() .startswith(f"paigow {path}: error: {doc['error']}")
    assert len(cap.err.strip().splitlines()) == 1
    assert main(argv[:-1]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and len(cap.err.strip().splitlines()) == 1
    assert cap.err.startswith(f"paigow {path}: error: ")


@pytest.mark.parametrize("argv,value", [
    (["render", "--n", "0", "--out", "{tmp}/d"], "--n"),
    (["settle", "--banker", "1-5 1-5 3-3 1-3", "--seat", "3=4-4 4-4 / 1-6 2-5",
      "--seat", "1=6-6 6-6 / 1-1 5-5", "--bet", "dealer=5", "--banking-seat", "3",
      "--co-bank"], "dealer=5"),
    (["audit", "verify", "{tmp}/absent.db"], "absent.db"),
    (["audit", "report", "{tmp}/absent.db"], "absent.db"),
    (["hand", "1-1"], "two"),
    (["train", "--config", "{tmp}/absent.yaml"], "absent.yaml"),
])
def test_bad_input_is_one_line_or_json(argv, value, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    cap = capsys.readouterr()
    assert len(cap.err.strip().splitlines()) == 1 and value in cap.err, cap.err
    assert main(argv + ["--json"]) == 2
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert set(doc) == {"error", "command", "exit_code"} and value in doc["error"]
    assert doc["exit_code"] == 2 and cap.err.count("\n") == 1
    assert not (tmp_path / "d").exists()  # render --n 0 wrote nothing


def test_train_writes_to_runs_by_default_never_models():
    a = build_parser().parse_args(["train", "--config", "c.yaml"])
    assert a.out == "runs"

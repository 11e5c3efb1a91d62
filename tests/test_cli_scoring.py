"""End-to-end tests of the scoring sub-commands of ``paigow`` (hand, set, settle, analyze,
poker) through :func:`vision.cli.main`: JSON shapes, text output, exit code 2 on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vision.cli import main

BANK = "6-6 4-5 / 1-3 2-2"


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def run_json(capsys, *argv):
    rc, out, err = run(capsys, *argv, "--json")
    assert rc == 0, err
    return json.loads(out)


def fails(capsys, *argv) -> str:
    """Exit code 2 and one line on stderr, returned."""
    try:
        rc = main(list(argv))
    except SystemExit as e:  # argparse-level errors
        rc = e.code
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    return err.strip()


# ---------------------------------------------------------------- hand

def test_hand_json(capsys):
    d = run_json(capsys, "hand", "1-2", "5-6")
    assert d["tiles"] == ["1-2", "5-6"]
    assert (d["category"], d["points"], d["high_tile"], d["name"]) == (
        "points", 7, "5-6", "7 points, Foo")


def test_hand_categories_and_rules(capsys):
    assert run_json(capsys, "hand", "1-1", "4-4")["category"] == "gong"
    assert run_json(capsys, "hand", "6-6", "4-5")["category"] == "wong"
    d = run_json(capsys, "hand", "2-4", "1-2")
    assert d["category"] == "pair" and d["points"] is None
    # zero-zero: same key under pa (copy), different under nj
    pa = [run_json(capsys, "hand", *h)["key"] for h in (("5-5", "4-6"), ("3-3", "2-2"))]
    nj = [run_json(capsys, "hand", *h, "--rules", "nj")["key"] for h in (("5-5", "4-6"),
                                                                         ("3-3", "2-2"))]
    assert pa[0] == pa[1] and nj[0] > nj[1]


def test_hand_text(capsys):
    rc, out, _ = run(capsys, "hand", "2-4", "1-5")
    assert rc == 0 and "9 points" in out


def test_hand_bad_input(capsys):
    err = fails(capsys, "hand", "7-7", "1-1")
    assert "'7-7'" in err and len(err.splitlines()) == 1
    assert "3" in fails(capsys, "hand", "1-1", "2-2", "3-3")
    fails(capsys, "hand", "1-1", "2-2", "--rules", "xx")


# ---------------------------------------------------------------- set

def test_set_house_way_json(capsys):
    d = run_json(capsys, "set", "6-6", "6-6", "1-2", "1-3")
    assert d["high"] == ["6-6", "6-6"]
    assert sorted(d["low"]) == ["1-2", "1-3"]
    assert d["way"] == "reference"
    assert d["high_hand"] == "Teen pair" and d["low_hand"].startswith("7 points")


def test_set_other_ways_and_errors(capsys):
    d = run_json(capsys, "set", "6-6", "6-6", "1-2", "1-3", "--way", "pa-minimal")
    assert d["way"] == "pa-minimal" and d["high"] == ["6-6", "6-6"]
    assert "'nowhere'" in fails(capsys, "set", "6-6", "6-6", "1-2", "1-3", "--way", "nowhere")
    assert "6-6" in fails(capsys, "set", "6-6", "6-6", "6-6", "1-3")
    assert "5" in fails(capsys, "set", "6-6", "6-6", "1-2", "1-3", "2-2")


# ---------------------------------------------------------------- settle

def test_settle_json(capsys):
    d = run_json(capsys, "settle", "--banker", BANK, "--seat", "1=1-2 2-4 / 1-1 2-5",
                 "--seat", "2=5-5 5-5 / 1-6 1-5", "--seat", "3=1-1 3-6 / 2-2 4-6",
                 "--bet", "1=25", "--bet", "3=4")
    assert d["banker"]["high"] == ["6-6", "4-5"] and d["banker"]["low"] == ["1-3", "2-2"]
    s = d["seats"]
    assert s["1"]["high"] == ["2-4", "1-2"] or sorted(s["1"]["high"]) == ["1-2", "2-4"]
    assert (s["1"]["result"], s["1"]["net"], s["1"]["commission"]) == ("win", "23.75", "1.25")
    assert (s["2"]["result"], s["2"]["net"]) == ("push", "0")
    assert (s["3"]["result"], s["3"]["net"]) == ("lose", "-4")
    assert d["house_net"] == "-19.75"  # bank -(25 - 4) = -21, plus 1.25 commission


def test_settle_unset_seat_and_default_bet_and_commission(capsys):
    d = run_json(capsys, "settle", "--banker", BANK, "--seat", "1=1-2 2-4 / 1-1 2-5",
                 "--seat", "2=5-6 1-6 3-3 5-5", "--bet", "10", "--commission", "0.04")
    assert d["seats"]["1"]["net"] == "9.60"
    assert d["seats"]["2"]["reset_by_house_way"] is True
    assert d["seats"]["2"]["bet"] == "10"


def test_settle_banking_seat_and_co_bank(capsys):
    args = ["settle", "--banker", "1-5 1-5 3-3 1-3", "--seat", "3=4-4 4-4 / 1-6 2-5",
            "--seat", "1=6-6 6-6 / 1-1 5-5", "--seat", "2=1-2 2-4 / 5-5 3-4",
            "--seat", "4=2-2 2-2 / 3-6 2-3", "--bet", "3=20", "--bet", "2=10", "--bet", "4=5",
            "--banking-seat", "3"]
    d = run_json(capsys, *args)
    assert d["banker"]["position"] == "3"
    assert (d["banker"]["gross"], d["banker"]["commission"], d["banker"]["net"]) == (
        "15", "0.75", "14.25")
    assert d["seats"]["dealer"]["net"] == "-20"
    assert d["house_net"] == "-18.75"
    d = run_json(capsys, *args, "--co-bank")
    assert d["banker"]["net"] == "-2.5" and d["house_net"] == "-2.00"
    rc, out, _ = run(capsys, *args)
    assert rc == 0 and "14.25" in out and "dealer" in out


def test_settle_text_table(capsys):
    rc, out, _ = run(capsys, "settle", "--banker", BANK, "--seat", "1=1-2 2-4 / 1-1 2-5")
    assert rc == 0
    line = next(l for l in out.splitlines() if l.startswith("1 "))
    assert "win" in line and "0.95" in line


@pytest.mark.parametrize("extra,needle", [
    (["--seat", "1=1-1 3-6 2-2 4-6 5-5"], "five|5"),
    (["--seat", "1=6-6 6-6 1-1 1-2"], "6-6"),
    (["--seat", "1=1-1 3-6 2-2 4-6", "--bet", "1=-5"], "'-5'"),
    (["--seat", "1=1-1 3-6 2-2 4-6", "--bet", "-5"], "'-5'"),
    (["--seat", "1=1-1 3-6 2-2 4-6", "--bet", "1=abc"], "'abc'"),
    (["--seat", "1=1-1 3-6 2-2 4-6", "--bet", "1=0"], "'0'"),
    (["--seat", "8=1-1 3-6 2-2 4-6"], "'8'"),
    (["--seat", "1=7-7 3-6 2-2 4-6"], "'7-7'"),
    (["--seat", "1=1-1 3-6 2-2 4-6", "--banking-seat", "4"], "'4'"),
    (["--seat", "1=1-1 3-6 2-2 4-6", "--co-bank"], "banking"),
    (["--seat", "1=1-1 3-6 2-2 4-6", "--commission", "1.5"], "'1.5'"),
    (["--seat", "1=1-1 3-6 2-2 4-6", "--way", "nowhere"], "'nowhere'"),
])
def test_settle_bad_input_exit_2(capsys, extra, needle):
    import re

    err = fails(capsys, "settle", "--banker", BANK, *extra)
    assert len(err.splitlines()) == 1
    assert re.search(needle, err), err


def test_argparse_errors_exit_2(capsys):
    fails(capsys, "settle", "--seat", "1=1-1 3-6 2-2 4-6")  # --banker missing
    fails(capsys, "settle", "--banker", BANK, "--rules", "xx")
    fails(capsys, "analyze", "--strategy", "bogus")


# ---------------------------------------------------------------- analyze (wiring only)

def test_analyze_wiring(capsys, monkeypatch):
    import scoring.analysis as an

    seen = {}

    class Fake:
        def to_dict(self):
            return {"p_win": "1/3", "edge": "1/100", "edge_float": 0.01}

    def fake(**kw):
        seen.update(kw)
        return Fake()

    monkeypatch.setattr(an, "analyze", fake)
    d = run_json(capsys, "analyze", "--strategy", "optimal", "--banking", "--commission", "0.04",
                 "--rules", "nj")
    assert d == {"p_win": "1/3", "edge": "1/100", "edge_float": 0.01}
    assert seen["strategy"] == "optimal" and seen["banking"] is True
    assert str(seen["commission"]) == "0.04" and seen["rules"] == "nj"
    rc, out, _ = run(capsys, "analyze")
    assert rc == 0 and "edge: 1/100" in out
    assert seen["strategy"] == "house" and seen["banking"] is False


def test_analyze_bad_commission(capsys):
    assert "'abc'" in fails(capsys, "analyze", "--commission", "abc")


# ---------------------------------------------------------------- poker

def test_poker_one_hand(capsys):
    d = run_json(capsys, "poker", "As", "Kd", "Qh", "Jc", "Tc")
    assert d["hands"][0]["rank"] == "straight"
    assert "winners" not in d


def test_poker_compare(capsys):
    d = run_json(capsys, "poker", "As", "Ks", "Qs", "Js", "Ts", "/", "2c", "2d", "5h", "9s", "Kh")
    assert [h["rank"] for h in d["hands"]] == ["royal flush", "one pair"]
    assert d["winners"] == [1] and d["result"] == "hand 1 wins"
    d = run_json(capsys, "poker", "Ac Kd 9h 7s 3c", "/", "Ah Ks 9c 7d 3h")
    assert d["result"] == "push" and d["winners"] == [1, 2]
    rc, out, _ = run(capsys, "poker", "Qc", "Kd", "Ah", "2s", "3c")
    assert rc == 0 and "high card" in out


def test_poker_bad_cards(capsys):
    assert "'Tx'" in fails(capsys, "poker", "As", "Kd", "Qh", "Jc", "Tx")
    assert "As" in fails(capsys, "poker", "As", "As", "Qh", "Jc", "Tc")
    assert "4" in fails(capsys, "poker", "As", "Kd", "Qh", "Jc")


# ---------------------------------------------------------------- the installed script

def test_console_script_exit_code_2():
    exe = Path(sys.executable).with_name("paigow")
    if not exe.exists():
        pytest.skip("console script not installed")
    p = subprocess.run([str(exe), "settle", "--banker", BANK, "--seat", "1=1-1 1-1 6-6 6-6"],
                       capture_output=True, text=True, env=dict(os.environ), timeout=60)
    assert p.returncode == 2
    assert "6-6" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = subprocess.run([str(exe), "hand", "1-2", "5-6", "--json"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and json.loads(p.stdout)["points"] == 7

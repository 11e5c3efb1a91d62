"""Fault: hostile input files (issue 42, item 6). A 385-byte YAML alias bomb as the layout,
the config or the tables file ran 48-75 s, took 3.5 GB and ended in a MemoryError traceback;
a 100,000-point layout polygon was accepted (98 ms of scoring and 315 ms of drawing a frame); a
tables file of 10,000 tables was accepted; a glob source matching nothing in the pit had its
worker restarted for ever; a payout row with more fields than the header was read silently
(``0,95`` read as 0 paid).

Now every YAML file is read by one loader with limits (:mod:`vision.io.yamlsafe`: no alias,
1 MiB, 64 levels, one document, errors as one line with line and column), a layout polygon
has at most :data:`vision.table.layout.MAX_VERTICES` points, a tables file at most
:data:`vision.pit.tables.MAX_TABLES` tables, ``serve --tables`` refuses a glob that matches no
image before any worker starts, and a payout row with extra fields is refused naming its line:
each is exit code 2 and one line naming the file."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from scoring.errors import InputError
from vision.audit import AuditStore
from vision.cli import main
from vision.io.yamlsafe import (MAX_DEPTH, MAX_NODES, MAX_YAML_BYTES, load_yaml,
                                 load_yaml_text)
from vision.pit import load_tables
from vision.pit.tables import MAX_TABLES
from vision.table.layout import MAX_VERTICES, Layout
from fakes import event_from_deal

pytestmark = [pytest.mark.faults, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]

#: Eight levels of nine aliases: 9^9 = 387,420,489 strings once walked.
_DEFS = ('[&a ["l","l","l","l","l","l","l","l","l"], '
         + ", ".join(f"&{n} [" + ",".join([f"*{p}"] * 9) + "]"
                     for p, n in zip("abcdefg", "bcdefgh")) + "]")
_BOMB9 = "[" + ",".join(["*h"] * 9) + "]"
BOMBS = {  # each one a plausible file of its kind whose one value explodes when read
    "layout": (f"table_id: {_DEFS}\npositions:\n  dealer: [[0, 0], [100, 0], [100, 100], "
               f"[0, 100]]\nbets:\n  dealer: {_BOMB9}\n"),
    "config": f"table:\n  table_id: {_DEFS}\n  rules: {_BOMB9}\n",
    "tables": f"defaults:\n  banker: {_DEFS}\ntables:\n  - id: t1\n    source: {_BOMB9}\n",
}

#: ``python -c``: ``paigow ARGV``, then the child's own peak RSS (VmHWM) on stdout.
_CHILD = ("import sys\n"
          "from vision.cli import main\n"
          "rc = main(sys.argv[1:])\n"
          "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
          "print('RSS_KB', hwm.split()[1])\n"
          "sys.exit(rc)\n")


def _picture(tmp_path: Path) -> Path:
    p = tmp_path / "frame.png"
    cv2.imwrite(str(p), np.full((120, 160, 3), 90, np.uint8))
    return p


@pytest.mark.parametrize("kind", sorted(BOMBS))
def test_an_alias_bomb_is_one_line_and_exit_2(tmp_path, kind):
    """In a child process (the bomb took 3.5 GB): exit 2, one line naming the file, the line
    and column of the first alias; the child stays small (it peaked above 1.6 GB under a
    2.5 GB limit before, then a MemoryError or the 40 s timeout)."""
    bomb = tmp_path / f"{kind}.yaml"
    bomb.write_text(BOMBS[kind])
    assert bomb.stat().st_size < 450
    frame = str(_picture(tmp_path))
    argv = {"layout": ["run", frame, "--layout", str(bomb), "--no-progress"],
            "config": ["run", frame, "--config", str(bomb), "--no-progress"],
            "tables": ["serve", "--tables", str(bomb), "--port", "0"]}[kind]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "YOLO_OFFLINE": "1",
           "YOLO_AUTOINSTALL": "false", "YOLO_CONFIG_DIR": str(ROOT / ".yolo_config")}
    p = subprocess.run([sys.executable, "-c", _CHILD, *argv], capture_output=True, text=True,
                       env=env, cwd=str(tmp_path), timeout=120)
    assert p.returncode == 2, p.stderr[-2000:]
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr[-2000:]
    assert str(bomb) in lines[0] and "aliases (*a) are not accepted" in lines[0]
    assert "line 1, column" in lines[0] or "line 2, column" in lines[0]
    rss_mb = int(p.stdout.split("RSS_KB")[1].split()[0]) / 1024
    assert rss_mb < 600, f"{rss_mb:.0f} MB"


def test_the_loader_limits(tmp_path):
    """Size, depth, documents, merge keys, syntax and encoding: one line each, with the line
    and column where there is one; an ordinary file reads as before."""
    ok = tmp_path / "ok.yaml"
    ok.write_text("a: 1\nb: [x, 'y', 2.5]\nc: {d: null}\n")
    assert load_yaml(ok, "config file") == {"a": 1, "b": ["x", "y", 2.5], "c": {"d": None}}
    big = tmp_path / "big.yaml"
    big.write_bytes(b"# " + b"x" * (MAX_YAML_BYTES - 3) + b"\n")
    assert load_yaml(big, "config file") is None  # exactly the cap: read
    big.write_bytes(b"# " + b"x" * (MAX_YAML_BYTES - 2) + b"\n")
    with pytest.raises(InputError, match=f"config file {big} is over {MAX_YAML_BYTES} bytes"):
        load_yaml(big, "config file")
    cases = {
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1): f"line 1, column {MAX_DEPTH + 1}: "
                                                       f"nested deeper than {MAX_DEPTH}",
        "base: &b {x: 1}\nother:\n  <<: *b\n": "line 3, column 7: aliases (*b)",
        "a: 1\n---\nb: 2\n": "line 2, column 1: more than one document",
        "a: [1,\n b": "line 3, column 1: did not find expected ',' or ']'",
        "a: 1\n  b: 2\n": "line 2, column 4: mapping values are not allowed",
    }
    for text, want in cases.items():
        with pytest.raises(InputError) as exc:
            load_yaml_text(text, "layout file t.yaml")
        msg = str(exc.value)
        assert msg.startswith("layout file t.yaml is not valid YAML: ") and want in msg, msg
        assert "\n" not in msg
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"a: 1\nb: \xff\n")
    with pytest.raises(InputError, match=r"is not UTF-8 text \(byte 8\)"):
        load_yaml(bad, "tables file")


def test_no_yaml_is_read_around_the_loader():
    """Every YAML read in vision/ goes through vision.io.yamlsafe (safe_dump is writing)."""
    bad = [f"{p.relative_to(ROOT)}:{i}" for p in (ROOT / "vision").rglob("*.py")
           if p.name != "yamlsafe.py"
           for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
           if any(s in line for s in ("yaml.safe_load", "yaml.load", "yaml.full_load",
                                      "yaml.unsafe_load", "yaml.compose", "yaml.parse"))]
    assert not bad, bad


def _circle(n: int, r: float = 50.0, c: float = 60.0) -> list[list[float]]:
    return [[c + r * math.cos(2 * math.pi * k / n), c + r * math.sin(2 * math.pi * k / n)]
            for k in range(n)]


def test_a_100000_point_layout_is_refused(tmp_path, capsys):
    """From the file: 100,000 points (written short, under the 1 MiB cap) pass the 100,000
    values of the loader before anything is built; 5,000 points are refused by the point cap;
    from a dict (the layout editor's path) too; 256 points pass."""
    frame = str(_picture(tmp_path))
    lay = tmp_path / "layout.yaml"
    for n, want in ((100_000, f"line 2, column 200001: more than {MAX_NODES} values"),
                    (5_000, f"polygon of position 'dealer' has 5000 points; at most "
                            f"{MAX_VERTICES}")):
        pts = ",".join(f"[{k % 10},{k // 10 % 10}]" for k in range(n))
        lay.write_text(f"positions:\n  dealer: [{pts}]\n")
        assert lay.stat().st_size < MAX_YAML_BYTES
        rc = main(["run", frame, "--layout", str(lay), "--no-progress", "--json"])
        out, err = capsys.readouterr()
        assert rc == 2, err
        assert want in err and str(lay) in err and len(err.strip().splitlines()) == 1, err
        assert json.loads(out.splitlines()[-1])["exit_code"] == 2
    with pytest.raises(InputError, match="has 100000 points"):
        Layout.from_dict({"positions": {"dealer": _circle(100_000)}})
    ok = Layout.from_dict({"positions": {"dealer": _circle(MAX_VERTICES)}})
    assert ok.positions["dealer"].shape == (MAX_VERTICES, 2)
    with pytest.raises(InputError, match=f"has {MAX_VERTICES + 1} points"):
        Layout.from_dict({"positions": {"dealer": _circle(MAX_VERTICES + 1)}})


def test_a_10000_table_tables_file_is_refused(tmp_path, capsys):
    many = tmp_path / "tables.yaml"
    many.write_text("tables:\n" + "".join(f"  - {{id: t{i}, source: '0'}}\n"
                                          for i in range(10_000)))
    rc = main(["serve", "--tables", str(many), "--port", "0"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"10000 tables; at most {MAX_TABLES}" in err and str(many) in err
    many.write_text("tables:\n" + "".join(f"  - {{id: t{i}, source: '{i}'}}\n"
                                          for i in range(MAX_TABLES)))
    assert len(load_tables(many)) == MAX_TABLES


def test_a_glob_matching_nothing_is_refused_by_the_pit(tmp_path, capsys, monkeypatch):
    """Refused before any worker starts (the socket is never bound); a folder without an
    image too; a glob that matches an image passes; ``run`` refuses the glob as well."""
    import vision.commands.serve as serve

    def started(*a, **k):
        raise AssertionError("the pit started")
    monkeypatch.setattr(serve, "bind_socket", started)
    (tmp_path / "frames").mkdir()
    (tmp_path / "frames" / "notes.txt").write_text("no pictures here")
    tables = tmp_path / "tables.yaml"
    for source, want in (("frames/*.png", "glob matches no images"),
                         ("frames", "folder contains no images")):
        tables.write_text(f"tables:\n  - id: t1\n    source: {source}\n")
        rc = main(["serve", "--tables", str(tables), "--port", "0"])
        err = capsys.readouterr().err
        assert rc == 2, err
        assert f"table 't1': {want}: {tmp_path / source}" in err
    cv2.imwrite(str(tmp_path / "frames" / "f1.png"), np.zeros((8, 8, 3), np.uint8))
    for source in ("frames/*.png", "frames"):
        tables.write_text(f"tables:\n  - id: t1\n    source: {source}\n")
        load_tables(tables)[0].check_source()  # no error
    rc = main(["run", str(tmp_path / "frames" / "*.jpg"), "--no-progress"])
    assert rc == 2 and "glob matches no images" in capsys.readouterr().err


@pytest.fixture()
def store(tmp_path):
    db = tmp_path / "audit.db"
    with AuditStore(db, table_id="t1") as st:
        st.append(event_from_deal({"dealer": ["6-6", "4-5", "1-3", "2-2"],
                                   "1": ["1-1", "3-6", "2-2", "5-5"]}, table_id="t1"))
    return db


def test_a_payout_row_with_extra_fields_is_refused(store, tmp_path, capsys):
    """``r000001,1,0,95`` (a decimal comma) is line 3 with 4 fields: exit 2 naming it, also
    under --json; a line of only commas is blank and skipped."""
    with AuditStore(store, create=False) as st:
        net = next(iter(st.rounds())).payload["positions"]["1"]["net"]
    csv = tmp_path / "pay.csv"
    csv.write_text(f"round_id,seat,amount_paid\nr000001,1,{net}\nr000001,1,0,95\n")
    rc = main(["audit", "check-payouts", str(store), str(csv), "--json"])
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert f"{csv}: line 3: 4 fields, the header has 3" in err
    assert len(err.strip().splitlines()) == 1
    assert json.loads(out.splitlines()[-1])["exit_code"] == 2
    csv.write_text(f"round_id,seat,amount_paid\nr000001,1,{net}\n,,,,\n")
    assert main(["audit", "check-payouts", str(store), str(csv)]) == 0

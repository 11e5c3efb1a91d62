"""A report or payout check never reads a broken store silently (issue 41, item 1): every
tamper case of docs/audit.md (tamper evidence) run through ``paigow audit check-payouts`` and
``paigow audit report`` (csv, html). Each store is a real one (tests/helpers/audit_events.py),
then edited as an insider with the file can (the triggers dropped, SQL run).

Without ``--force``: exit 1, one line naming the first broken record, nothing read. With
``--force``: the output starts with ``STORE BROKEN AT record N`` and every row drawing on a
record from the break on is marked; exit 1 all the same. An untampered store's output is what
it was before the check."""

from __future__ import annotations

import csv
import io
import json
import shutil

import pytest
from helpers.audit_events import jpeg as _jpeg, make_event
from helpers.tamper import edited_payload as _payload, forge, rechain as _rechain, rows as _rows
from helpers.tamper import sql as _sql

from vision.audit import AuditStore, verify
from vision.audit.chain import HASHED_COLUMNS, record_hash_v2
from vision.audit.report import shift_report
from vision.audit.report_csv import report_csv
from vision.audit.report_html import report_html
from vision.cli import main

KEY = b"correct horse battery staple 42"
PAID = [f"r{i:06d},{s},{a}" for i in range(1, 6) for s, a in (("1", "0.95"), ("2", "-1"))]


def _make(path, key=None, n=5):
    """Rounds r000001..r00000n of table-1 (seat 1 wins 0.95, seat 2 loses 1), key frames on
    records 2 and 4."""
    with AuditStore(path, key=key) as s:
        for i in range(1, n + 1):
            s.append(make_event(i), frame=_jpeg(i) if i in (2, 4) else None)
    return path


def _rehash(path, seq):
    """Recompute record ``seq``'s own hash (its link kept)."""
    rows, _ = _rows(path)
    r = next(r for r in rows if r["seq"] == seq)
    _sql(path, ("UPDATE paigow_rounds SET hash = ? WHERE seq = ?",
                (record_hash_v2({c: r[c] for c in HASHED_COLUMNS}), seq)))


def _net(p, value="9.95"):
    p["positions"]["1"]["net"] = value


def _forge(path, seq):
    forge(path, seq, net1="500")


def _anchor_text(path):
    with AuditStore(path, create=False, read_only=True) as s:
        h, n = s.head()
    return f"{h}:{n}"


def _frame(path, seq):
    rows, _ = _rows(path)
    return path.parent / (path.name + ".frames") / next(r for r in rows
                                                         if r["seq"] == seq)["frame_file"]


# --------------------------------------------------------------------------- the cases
# Each: (name, key or None, tamper(path) -> extra CLI args, first broken record, first record
# marked). docs/audit.md, "Tamper evidence": every row of its table, plus reordering.


def _edit_net(p):
    _sql(p, ("UPDATE paigow_rounds SET payload = ? WHERE seq = 3", (_payload(p, 3, _net),)))
    return []


def _edit_net_rehashed(p):  # the record's own hash recomputed: the next link breaks
    _sql(p, ("UPDATE paigow_rounds SET payload = ? WHERE seq = 2", (_payload(p, 2, _net),)))
    _rehash(p, 2)
    return []


def _edit_column(p):
    _sql(p, "UPDATE paigow_rounds SET rules = 'nj' WHERE seq = 2")
    return []


def _edit_byte(p):
    data = bytearray(p.read_bytes())
    i = data.index(b'"round_id":"r000004"')
    data[i:i + 20] = b'"round_id":"r000094"'
    p.write_bytes(bytes(data))
    return []


def _frame_changed(p):
    _frame(p, 4).write_bytes(_jpeg(99))
    return []


def _frame_removed(p):
    _frame(p, 2).unlink()
    return []


def _deleted_middle(p):
    _sql(p, "DELETE FROM paigow_rounds WHERE seq = 2")
    return []


def _reordered(p):
    _sql(p, "UPDATE paigow_rounds SET seq = 100 WHERE seq = 2",
         "UPDATE paigow_rounds SET seq = 2 WHERE seq = 3",
         "UPDATE paigow_rounds SET seq = 3 WHERE seq = 100")
    return []


def _meta_edited(p):
    _sql(p, "UPDATE paigow_audit_meta SET value = '2020-01-01T00:00:00.000Z' "
            "WHERE key = 'created'")
    return []


def _rechained_anchor(p):
    anchor = _anchor_text(p)
    _sql(p, ("UPDATE paigow_rounds SET payload = ? WHERE seq = 2", (_payload(p, 2, _net),)))
    _rechain(p, 2)
    assert verify(p).ok  # consistent again: only the anchor (or the key) tells
    return ["--anchor", anchor]


def _rechained_key(p):
    _sql(p, ("UPDATE paigow_rounds SET payload = ? WHERE seq = 2", (_payload(p, 2, _net),)))
    _rechain(p, 2)
    assert verify(p).ok
    return []  # the key comes with the case


def _appended_anchor(p):
    anchor = _anchor_text(p)
    _forge(p, 6)
    assert verify(p).ok
    return ["--anchor", anchor]


def _appended_key(p):
    _forge(p, 6)
    return []


def _truncated_frames(p):  # key frames of removed records remain
    _sql(p, "DELETE FROM paigow_rounds WHERE seq >= 3")
    return []


def _truncated_anchor(p):
    anchor = _anchor_text(p)
    _sql(p, "DELETE FROM paigow_rounds WHERE seq = 5")
    assert verify(p).ok
    return ["--anchor", anchor]


def _older_copy(p):
    older = p.parent / "older.db"
    _make(older, n=3)
    anchor = _anchor_text(p)
    shutil.copyfile(older, p)  # the same rounds, three of them: a valid store, an older one
    return ["--anchor", anchor]


CASES = [
    ("edited net", None, _edit_net, 3, 3, "record changed"),
    ("edited net, its hash recomputed", None, _edit_net_rehashed, 3, 2, "prev link broken"),
    ("column edited", None, _edit_column, 2, 2, "rules"),
    ("byte edited in the file", None, _edit_byte, 4, 4, "column round_id"),
    ("frame changed", None, _frame_changed, 4, 4, "frame changed"),
    ("frame removed", None, _frame_removed, 2, 2, "frame missing"),
    ("record removed from the middle", None, _deleted_middle, 3, 3, "record missing"),
    ("records reordered", None, _reordered, 2, 1, "prev link broken"),
    ("meta tables edited", None, _meta_edited, 1, 1, "meta changed"),
    ("edit, later hashes recomputed, anchor", None, _rechained_anchor, 5, 1,
     "differs from the anchor"),
    ("edit, later hashes recomputed, key", KEY, _rechained_key, 2, 2, "MAC mismatch"),
    ("forged record appended, anchor", None, _appended_anchor, 6, 6, "longer than the anchor"),
    ("forged record appended, key", KEY, _appended_key, 6, 6, "MAC"),
    ("last records removed, frames remain", None, _truncated_frames, 4, 4,
     "records removed from the end"),
    ("last records removed, anchor", None, _truncated_anchor, 5, 5, "shorter than the anchor"),
    ("replaced by an older copy, anchor", None, _older_copy, 4, 4, "shorter than the anchor"),
]


@pytest.fixture
def pay(tmp_path):
    p = tmp_path / "pay.csv"
    p.write_text("round_id,seat,amount_paid\n" + "".join(r + "\n" for r in PAID))
    return p


@pytest.fixture
def key_file(tmp_path):
    p = tmp_path / "audit.key"
    p.write_bytes(KEY + b"\n")
    return p


def _seqs(path):
    """round id -> record id of the camera record (after the tampering)."""
    return {r["round_id"]: r["seq"] for r in _rows(path)[0]}


@pytest.mark.parametrize("name,key,tamper,broken,marked,why", CASES,
                         ids=[c[0] for c in CASES])
def test_tampered_store_is_refused_then_marked_with_force(tmp_path, pay, key_file, capsys,
                                                          monkeypatch, name, key, tamper,
                                                          broken, marked, why):
    monkeypatch.delenv("PAIGOW_AUDIT_KEY", raising=False)
    db = _make(tmp_path / "audit.db", key=key)
    extra = tamper(db) + (["--key-file", str(key_file)] if key else [])
    seqs = _seqs(db)
    capsys.readouterr()

    # refused: exit 1, one line naming the first broken record, nothing on stdout
    for argv in (["check-payouts", str(db), str(pay)], ["report", str(db)],
                 ["report", str(db), "--format", "html"]):
        assert main(["audit", *argv, *extra]) == 1, argv
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1, (argv, out, err)
        assert f"BROKEN at record {broken}" in err and why in err and "--force" in err, err
        assert err.startswith(f"paigow audit {argv[0]}: audit store {str(db)!r}")
    assert main(["audit", "check-payouts", str(db), str(pay), "--json", *extra]) == 1
    obj = json.loads(capsys.readouterr().out)
    assert obj["exit_code"] == 1 and obj["verify"]["broken_seq"] == broken
    assert f"BROKEN at record {broken}" in obj["error"]

    # --force, check-payouts: the header line, every difference from the break on marked
    mark = f" -- BROKEN (record {marked} on)"
    assert main(["audit", "check-payouts", str(db), str(pay), "--force", "--all",
                 "--report-unknown", *extra]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"STORE BROKEN AT record {broken}") and why in lines[0]
    assert f"rows from record {marked} on are marked" in lines[0]
    assert lines[-1].endswith(f"STORE BROKEN AT record {broken}: not a check of the store as "
                              "written")
    for ln in lines[1:-1]:
        rid = ln.split("round ", 1)[1].split(" ", 1)[0]
        after = rid not in seqs or seqs[rid] >= marked  # not in the store: maybe removed
        assert ln.endswith(mark) == after, ln
    assert main(["audit", "check-payouts", str(db), str(pay), "--force", "--json",
                 "--report-unknown", *extra]) == 1
    obj = json.loads(capsys.readouterr().out)
    assert obj["store_broken"]["record"] == broken
    assert obj["store_broken"]["marked_from"] == marked
    assert all(d["after_break"] == (d["seq"] is None or d["seq"] >= marked)
               for d in obj["differences"])

    # --force, report csv: the first line, then a column marking each row
    assert main(["audit", "report", str(db), "--force", *extra]) == 1
    f = io.StringIO(capsys.readouterr().out)
    (first,) = next(csv.reader(f))  # one field (quoted when the reason holds a comma)
    assert first.startswith(f"STORE BROKEN AT record {broken}") and why in first
    rows = list(csv.DictReader(f))
    total = rows.pop()
    assert total["round_id"] == "TOTAL"
    assert total["integrity"] == f"STORE BROKEN AT record {broken}"
    assert [r["round_id"] for r in rows] == sorted(seqs, key=seqs.get)
    for r in rows:
        want = f"BROKEN (record {marked} on)" if seqs[r["round_id"]] >= marked else "verified"
        assert r["integrity"] == want, r

    # --force, report html: the title and a boxed first paragraph, the rows marked
    assert main(["audit", "report", str(db), "--force", "--format", "html", *extra]) == 1
    page = capsys.readouterr().out
    assert f"<title>STORE BROKEN AT record {broken}:" in page
    assert f"<p class='store-broken'>STORE BROKEN AT record {broken}" in page
    n_after = sum(s >= marked for s in seqs.values())
    rounds_table = page.split("<h2>Rounds</h2>", 1)[1].split("</table>", 1)[0]
    assert rounds_table.count("<tr class='after-break'>") == n_after
    assert rounds_table.count(f"<td class='integrity'>BROKEN (record {marked} on)</td>") \
        == n_after
    assert rounds_table.count("<td>verified</td>") == len(seqs) - n_after


def test_the_issue_case_a_forged_net_no_longer_checks_out(tmp_path, pay, capsys):
    """One round's net edited in a copy of the store and the payout log made to match it:
    before, check-payouts said "0 difference(s)", exit 0, and the report showed the forged
    win. Now neither reads the store; with --force both say it is broken."""
    db = _make(tmp_path / "audit.db")
    _sql(db, ("UPDATE paigow_rounds SET payload = ? WHERE seq = 2",
              (_payload(db, 2, lambda p: _net(p, "1.00")),)))
    forged = tmp_path / "forged.csv"
    forged.write_text("round_id,seat,amount_paid\nr000002,1,1.00\nr000002,2,-1\n")
    assert main(["audit", "check-payouts", str(db), str(forged)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "BROKEN at record 2 (round r000002): record changed" in err
    assert main(["audit", "check-payouts", str(db), str(forged), "--force"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("STORE BROKEN AT record 2 (round r000002)")
    assert out[-1] == "0 difference(s); STORE BROKEN AT record 2: not a check of the store " \
                      "as written"
    assert main(["audit", "report", str(db)]) == 1
    assert capsys.readouterr().out == ""
    assert main(["audit", "report", str(db), "--force"]) == 1
    row = next(r for r in csv.reader(io.StringIO(capsys.readouterr().out))
               if r[1:2] == ["r000002"])
    assert "seat 1 win 1.00" in row[7] and row[-1] == "BROKEN (record 2 on)"
    out_file = tmp_path / "shift.html"
    assert main(["audit", "report", str(db), "--force", "--out", str(out_file)]) == 1
    assert capsys.readouterr().out.startswith("STORE BROKEN AT record 2")
    assert "<tr class='after-break'>" in out_file.read_text()


def test_untampered_store_output_is_unchanged(tmp_path, pay, key_file, capsys, monkeypatch):
    """The verification first changes nothing of an intact store's output: check-payouts
    prints what it printed before, the report what shift_report alone gives (with --force
    too); a keyed store is read with its key, and without it with a note on stderr."""
    monkeypatch.delenv("PAIGOW_AUDIT_KEY", raising=False)
    db = _make(tmp_path / "audit.db")
    assert main(["audit", "check-payouts", str(db), str(pay)]) == 0
    assert capsys.readouterr() == ("0 difference(s)\n", "")
    bad = tmp_path / "bad.csv"
    bad.write_text("round_id,seat,amount_paid\n" + "".join(r + "\n" for r in PAID[:-1])
                   + "r000005,2,-2\n")
    assert main(["audit", "check-payouts", str(db), str(bad)]) == 1
    assert capsys.readouterr() == (
        "amount: round r000005 seat 2 (table table-1): paid -2, computed -1, difference -1\n"
        "1 difference(s)\n", "")
    assert main(["audit", "check-payouts", str(db), str(bad), "--json"]) == 1
    obj = json.loads(capsys.readouterr().out)
    assert set(obj) == {"differences", "count"} and "after_break" not in obj["differences"][0]
    want_csv, want_html = report_csv(shift_report(db)), report_html(shift_report(db))
    for force in ([], ["--force"]):
        assert main(["audit", "report", str(db), *force]) == 0
        assert capsys.readouterr() == (want_csv, "")
        assert main(["audit", "report", str(db), "--format", "html", *force]) == 0
        assert capsys.readouterr().out == want_html
    assert "STORE BROKEN" not in want_csv + want_html and "integrity" not in want_csv
    assert main(["audit", "report", str(db), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert "store_broken" not in rep and all("after_break" not in r for r in rep["rounds"])
    assert main(["audit", "report", str(db), "--anchor", _anchor_text(db)]) == 0
    assert capsys.readouterr().out == want_csv

    keyed = _make(tmp_path / "keyed.db", key=KEY)
    assert main(["audit", "report", str(keyed), "--key-file", str(key_file)]) == 0
    assert capsys.readouterr().err == ""
    assert main(["audit", "report", str(keyed)]) == 0  # readable; the MACs not checked
    assert "note: the store is keyed" in capsys.readouterr().err
    assert main(["audit", "report", str(keyed), "--allow-after"]) == 2
    assert "--allow-after needs --anchor" in capsys.readouterr().err


def test_a_writer_going_on_after_the_check_is_not_read(tmp_path):
    """The records read are those the verification covered: one appended in between (a table
    still playing) waits for the next report."""
    from vision.audit.integrity import verify_before_read

    db = _make(tmp_path / "audit.db", n=3)
    res = verify_before_read(db)
    with AuditStore(db) as s:
        s.append(make_event(4))
    assert [r["round_id"] for r in shift_report(db, verified=res)["rounds"]] == \
        ["r000001", "r000002", "r000003"]
    assert len(shift_report(db)["rounds"]) == 4

"""Fault: tampering by an insider with the database file went undetected (issue 10, item 8):
deleting the last records (only "a note"), an edit followed by recomputing the rest of the
chain, a forged record appended at the end, edits to the rules / model_version / alert_kinds
columns and to the meta table.

Now every column and the meta table are hashed; with a secret key (``$PAIGOW_AUDIT_KEY`` or a
key file, never stored) every record carries an HMAC that whoever lacks the key cannot
recompute; ``paigow audit anchor`` prints the head hash and count to keep elsewhere and
``verify --anchor`` fails on a shorter, different or longer store. docs/audit.md says what is
and is not detected without a key."""

from __future__ import annotations

import json

import pytest
from helpers.audit_events import jpeg as _jpeg, make_event
from helpers.tamper import edited_payload as _edit_payload, forge as _forge, rechain as _rechain
from helpers.tamper import sql as _sql

from scoring.errors import InputError
from vision.audit import AuditStore, verify
from vision.cli import main

pytestmark = pytest.mark.faults

KEY = b"correct horse battery staple 42"


def _make(path, key=KEY, n=5):
    with AuditStore(path, key=key) as s:
        for i in range(1, n + 1):
            s.append(make_event(i), frame=_jpeg(i) if i in (2, 4) else None)
    return path


@pytest.fixture
def keyed(tmp_path):
    return _make(tmp_path / "keyed.db")


@pytest.fixture
def plain(tmp_path):
    return _make(tmp_path / "plain.db", key=None)


def _anchor(path):
    with AuditStore(path, create=False, read_only=True) as s:
        return s.head()


# --------------------------------------------------------------------------- with a key


def test_untouched_keyed_store_verifies_with_its_key(keyed, capsys, monkeypatch):
    res = verify(keyed, key=KEY)
    assert res.ok and res.macs_checked and res.keyed and res.rounds == 5
    assert KEY not in keyed.read_bytes()  # the key is never in the store
    monkeypatch.setenv("PAIGOW_AUDIT_KEY", KEY.decode())
    assert main(["audit", "verify", str(keyed)]) == 0
    assert "MACs checked" in capsys.readouterr().out


def test_keyed_edit_with_the_chain_recomputed(keyed):
    text = _edit_payload(keyed, 3, lambda p: p["positions"]["1"].update(net="95"))
    _sql(keyed, ("UPDATE paigow_rounds SET payload = ? WHERE seq = 3", (text,)))
    _rechain(keyed, 3)
    assert verify(keyed).ok  # without the key the recomputed chain looks whole ...
    res = verify(keyed, key=KEY)  # ... with it, the first record touched is named
    assert not res.ok and res.broken_seq == 3 and res.reason.startswith("MAC mismatch")


def test_keyed_forged_record_appended(keyed):
    _forge(keyed, 6)
    assert verify(keyed).ok  # well formed: without the key it passes
    res = verify(keyed, key=KEY)
    assert not res.ok and res.broken_seq == 6 and "MAC" in res.reason


@pytest.mark.parametrize("column,value", [("rules", "nj"), ("model_version", "tiles-x+pips-y"),
                                          ("alert_kinds", "mis_set")])
def test_keyed_column_edits(keyed, column, value):
    """The indexed columns: an edit alone is caught by the column check / hash; the same edit
    made consistently in the payload with the chain recomputed, by the MAC."""
    _sql(keyed, (f"UPDATE paigow_rounds SET {column} = ? WHERE seq = 2", (value,)))
    res = verify(keyed)
    assert not res.ok and res.broken_seq == 2 and (column in res.reason
                                                   or "record changed" in res.reason)
    _rechain(keyed, 2)
    res = verify(keyed, key=KEY)
    assert not res.ok and res.broken_seq == 2


def test_keyed_consistent_rules_edit(keyed):
    text = _edit_payload(keyed, 2, lambda p: p.update(rules="nj"))
    _sql(keyed, ("UPDATE paigow_rounds SET rules = 'nj', payload = ? WHERE seq = 2", (text,)))
    _rechain(keyed, 2)
    assert verify(keyed).ok  # consistent and rehashed: only the key tells
    res = verify(keyed, key=KEY)
    assert not res.ok and res.broken_seq == 2 and "MAC" in res.reason


def test_keyed_alert_kinds_edit(keyed):
    """alert_kinds disagreeing with the payload's alerts is named even without the key."""
    _sql(keyed, "UPDATE paigow_rounds SET alert_kinds = 'mis_set' WHERE seq = 4")
    _rechain(keyed, 4)
    res = verify(keyed)
    assert not res.ok and res.broken_seq == 4 and "alert_kinds" in res.reason


def test_keyed_meta_table_edit(keyed):
    _sql(keyed, "UPDATE paigow_audit_meta SET value = '2020-01-01T00:00:00.000Z' "
                "WHERE key = 'created'")
    res = verify(keyed)
    assert not res.ok and res.broken_seq == 1 and res.reason.startswith("meta changed")
    _rechain(keyed)  # record 1 chained to the new meta, the rest recomputed
    res = verify(keyed, key=KEY)
    assert not res.ok and res.broken_seq == 1 and "MAC" in res.reason


def test_keyed_meta_key_removed(keyed):
    """Making the store look unkeyed: the meta is covered, and a key given to verify demands
    a MAC on every record."""
    _sql(keyed, "DELETE FROM paigow_audit_meta WHERE key IN ('mac', 'key_id')",
         "UPDATE paigow_rounds SET mac = ''")
    _rechain(keyed)
    res = verify(keyed, key=KEY)
    assert not res.ok and res.broken_seq == 1 and res.reason.startswith("MAC missing")


def test_keyed_delete_last_records(keyed, tmp_path):
    anchor = _anchor(keyed)
    _sql(keyed, "DELETE FROM paigow_rounds WHERE seq >= 4")
    res = verify(keyed, key=KEY, anchor=anchor)
    assert not res.ok and res.reason.startswith("shorter than the anchor")
    # without an anchor: the key frames of records removed from the end still tell when they
    # lie beyond the record after the last (before: only "a note")
    _sql(keyed, "DELETE FROM paigow_rounds WHERE seq >= 3")
    res = verify(keyed, key=KEY)
    assert not res.ok and res.reason.startswith("records removed from the end")


def test_writing_a_keyed_store_needs_its_key(keyed, plain, tmp_path):
    with pytest.raises(InputError, match="is keyed"):
        AuditStore(keyed)
    with pytest.raises(InputError, match="not the key of"):
        AuditStore(keyed, key=b"another key, long enough too")
    with pytest.raises(InputError, match="created without a key"):
        AuditStore(plain, key=KEY)
    res = verify(keyed)  # readable without the key; says what was not checked
    assert res.ok and not res.macs_checked and "without its key" in res.notes[0]
    bad = tmp_path / "short.key"
    bad.write_text("short\n")
    assert main(["audit", "verify", str(keyed), "--key-file", str(bad)]) == 2


# --------------------------------------------------------------------------- without a key


def test_anchor_command_and_truncation_detected(plain, tmp_path, capsys):
    assert main(["audit", "anchor", str(plain)]) == 0
    text = capsys.readouterr().out.strip()
    h, n = text.split(":")
    assert n == "5" and len(h) == 64
    assert main(["audit", "anchor", str(plain), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["head_hash"] == h and obj["rounds"] == 5
    log = tmp_path / "anchors.log"
    log.write_text(json.dumps(obj) + "\n")
    assert main(["audit", "verify", str(plain), "--anchor", text]) == 0
    assert main(["audit", "verify", str(plain), "--anchor", str(log)]) == 0
    capsys.readouterr()
    _sql(plain, "DELETE FROM paigow_rounds WHERE seq = 5")
    assert main(["audit", "verify", str(plain)]) == 0  # a shorter chain is a valid chain ...
    capsys.readouterr()
    assert main(["audit", "verify", str(plain), "--anchor", text]) == 1  # ... not the anchored
    assert "shorter than the anchor" in capsys.readouterr().out


def test_appended_forgery_detected_with_anchor(plain, capsys):
    anchor = _anchor(plain)
    _forge(plain, 6)
    assert verify(plain).ok  # a well-formed record at the end
    res = verify(plain, anchor=anchor)
    assert not res.ok and res.reason.startswith("longer than the anchor")
    assert verify(plain, anchor=anchor, allow_after=True).ok


def test_rewritten_store_differs_from_anchor(plain):
    anchor = _anchor(plain)
    text = _edit_payload(plain, 2, lambda p: p["positions"]["2"].update(net="1"))
    _sql(plain, ("UPDATE paigow_rounds SET payload = ? WHERE seq = 2", (text,)))
    _rechain(plain, 2)
    assert verify(plain).ok
    res = verify(plain, anchor=anchor)
    assert not res.ok and res.reason.startswith("differs from the anchor")


def test_bad_anchor_text_is_one_line_exit_2(plain, capsys):
    assert main(["audit", "verify", str(plain), "--anchor", "nothex:5"]) == 2
    err = capsys.readouterr().err
    assert "--anchor 'nothex:5'" in err and err.count("\n") == 1


def test_keyed_run_through_the_cli(tmp_path, monkeypatch, capsys):
    """``paigow run --audit DB --audit-key-file K`` writes a keyed store (only the model
    loader is replaced); verify checks its MACs with the key from the file or the
    environment; a run without the key, or with another, is refused in one line."""
    import pickle

    import vision.recognition.engine
    from faultkit import N_STABLE, make_video

    video = make_video(tmp_path)
    with open(video["fake"], "rb") as f:
        fake = pickle.load(f)
    monkeypatch.setattr(vision.recognition.engine, "load_detectors", lambda *a, **k: (fake, fake))
    monkeypatch.delenv("PAIGOW_AUDIT_KEY", raising=False)
    keyf = tmp_path / "audit.key"
    keyf.write_bytes(KEY + b"\n")
    db = tmp_path / "audit.db"
    argv = ["run", str(video["path"]), "--audit", str(db), "--stable", str(N_STABLE),
            "--no-progress", "--max-frames", "32"]
    assert main(argv + ["--audit-key-file", str(keyf)]) == 0
    capsys.readouterr()
    res = verify(db, key=KEY)
    assert res.ok and res.macs_checked and res.rounds == 2
    assert KEY not in db.read_bytes()
    assert main(["audit", "verify", str(db), "--key-file", str(keyf)]) == 0
    assert "MACs checked" in capsys.readouterr().out
    assert main(argv) == 2  # no key
    assert "is keyed" in capsys.readouterr().err
    monkeypatch.setenv("PAIGOW_AUDIT_KEY", "another key of enough length")
    assert main(argv) == 2
    assert "is not the key of" in capsys.readouterr().err
    assert main(["audit", "verify", str(db)]) == 1  # the wrong key from the environment
    assert "MAC mismatch" in capsys.readouterr().out

"""Camera secrets in every URL form are masked (issue 42 item 3; vision/sources.py)."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings, strategies as st

from vision.sources import MASK, redact_text, redact_url


@pytest.mark.parametrize("url,want", [
    ("rtsp://admin:secret@cam7/live?token=abc", "rtsp://admin:***@cam7/live?token=***"),
    ("rtsp://admin:ab/cd@cam/x", "rtsp://admin:***@cam/x"),
    ("rtsp://a:b#c?d@cam/s", "rtsp://a:***@cam/s"),
    ("rtsp://cam/x?loginpas=zz&user=bob", "rtsp://cam/x?loginpas=***&user=bob"),
    ("http://cam/x?pw=1&p=2&q=3", "http://cam/x?pw=***&p=***&q=3"),
    ("rtsp://cam/live;password=abc;x=1", "rtsp://cam/live;password=***;x=1"),
    ("http://cam/x?mail=a@b.com", "http://cam/x?mail=a@b.com"),
    ("rtsp://tok@cam", "rtsp://***@cam"),
    ("/tmp/table.mp4", "/tmp/table.mp4"),
])
def test_every_url_form(url, want):
    assert redact_url(url) == want
    assert redact_url(want) == want  # idempotent


PASSWORD = st.text(alphabet=string.ascii_letters + string.digits + "/#?;@!$%&*+,=-_.~:",
                   min_size=4, max_size=24)
KEYS = st.sampled_from(["password", "pass", "pwd", "pw", "p", "loginpas", "token",
                        "apikey", "auth", "sig", "secret", "key"])


@settings(max_examples=300, deadline=None)
@given(user=st.text(alphabet=string.ascii_letters, min_size=1, max_size=8),
       password=PASSWORD, key=KEYS, value=st.text(alphabet=string.ascii_letters
                                                   + string.digits, min_size=4, max_size=16),
       sep=st.sampled_from(["?", ";"]))
def test_no_generated_secret_survives(user, password, key, value, sep):
    """A password of any characters in the userinfo, and a secret-looking key's value after
    ``?`` or ``;``, never appear in the redacted URL (nor in a line of text holding it)."""
    url = f"rtsp://{user}:{password}@cam.example/stream{sep}{key}={value}"
    want = f"rtsp://{user}:{MASK}@cam.example/stream{sep}{key}={MASK}"
    assert redact_url(url) == want
    assert redact_text(f"camera {url} is down") == f"camera {want} is down"

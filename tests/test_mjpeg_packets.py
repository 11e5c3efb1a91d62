"""An MJPEG stream read as its packets (vision.io.live: EncodedFrame, MjpegPackets): only the
frame the loop takes is decoded; a packet cut short or undecodable is a corrupt frame, never the
end of the feed; a stream whose packets do not decode on their own is read decoded."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import cv2
import numpy as np
import pytest

from fakes import FakeCap
from scoring.errors import InputError
from vision.io import live
from vision.io.capture import ReconnectPolicy, open_source
from vision.io.live import EncodedFrame, MjpegPackets

GREYS = (40, 120, 200)


def _jpeg(value: int, h: int = 48, w: int = 64) -> bytes:
    ok, buf = cv2.imencode(".jpg", np.full((h, w, 3), value, np.uint8))
    assert ok
    return buf.tobytes()


class _Stream:
    """An MJPEG camera on 127.0.0.1: ``pictures`` (JPEG bytes) in a loop at ``fps``."""

    def __init__(self, pictures: list[bytes], fps: float = 30.0) -> None:
        self.pictures, self.fps, self.sent = pictures, fps, 0
        stream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                self.send_response(200)
                self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=frame")
                self.end_headers()
                i = 0
                while not stream.stop.is_set():
                    data = stream.pictures[i % len(stream.pictures)]
                    try:
                        self.wfile.write(b"--frame\r\nContent-Type: image/jpeg\r\n"
                                         b"Content-Length: %d\r\n\r\n" % len(data)
                                         + data + b"\r\n")
                        self.wfile.flush()
                    except OSError:
                        return
                    stream.sent += 1
                    i += 1
                    stream.stop.wait(1.0 / stream.fps)

        self.stop = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/cam.mjpeg"

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def stream_of():
    made = []

    def make(pictures, fps=30.0):
        s = _Stream(pictures, fps)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


POLICY = ReconnectPolicy(initial_delay_s=0.05, max_attempts=3, open_timeout_ms=5000,
                         read_timeout_ms=5000)


def _take(src, n: int, pause: float = 0.0) -> list:
    got = []
    for f in src:
        got.append(f)
        if len(got) == n:
            break
        time.sleep(pause)
    return got


def test_mjpeg_stream_is_read_as_packets_and_only_taken_frames_are_decoded(stream_of,
                                                                            monkeypatch):
    s = stream_of([_jpeg(v) for v in GREYS])
    decoded = []
    real = EncodedFrame.decode

    def counting(self):
        decoded.append(1)
        return real(self)

    monkeypatch.setattr(EncodedFrame, "decode", counting)
    src = open_source(s.url, policy=POLICY)
    try:
        assert isinstance(src._cap, MjpegPackets)
        opened_checks = len(decoded)       # the opener's one check of the first packet
        got = _take(src, 6, pause=0.15)    # a slow loop: about 4 of 5 frames are skipped
        st = src.stats()
    finally:
        src.close()
    assert opened_checks == 1
    for f in got:
        assert f.image.dtype == np.uint8 and f.image.shape == (48, 64, 3)
        assert min(abs(float(f.image.mean()) - v) for v in GREYS) < 3
    assert len(decoded) - opened_checks == 6           # one decode per frame taken, no more
    assert st.frames_read > st.frames_yielded + 10 and st.dropped > 10
    assert st.skipped_corrupt == 0


def test_a_packet_cut_short_is_a_corrupt_frame_and_the_feed_goes_on(stream_of):
    good = _jpeg(200)
    s = stream_of([_jpeg(40), good[: len(good) // 2], good])
    src = open_source(s.url, policy=POLICY)
    try:
        got = _take(src, 8, pause=0.05)
        st = src.stats()
    finally:
        src.close()
    assert len(got) == 8 and st.skipped_corrupt >= 1 and st.reconnects == 0
    assert all(abs(float(f.image.mean()) - 40) < 3 or abs(float(f.image.mean()) - 200) < 3
               for f in got)


# whole by its markers, but no picture inside
NOT_A_PICTURE = b"\xff\xd8" + b"\x00" * 64 + b"\xff\xd9"


def test_a_whole_packet_that_does_not_decode_is_skipped_when_taken():
    gate = threading.Event()
    caps = [FakeCap([NOT_A_PICTURE, gate, _jpeg(120), "drop"])]
    # one connection: the drop at the end cannot reconnect
    src = open_source("rtsp://fake/cam", opener=lambda spec: caps.pop() if caps else None,
                      policy=ReconnectPolicy(initial_delay_s=0.01, max_attempts=1))

    def open_gate_once_skipped():   # the good packet comes after the bad one was taken
        deadline = time.monotonic() + 10
        while src.stats().skipped_corrupt < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        gate.set()

    threading.Thread(target=open_gate_once_skipped, daemon=True).start()
    frames = []
    try:
        with pytest.raises(InputError, match="rtsp://fake/cam"):
            for f in src:
                frames.append(f)
    finally:
        gate.set()
        src.close()
    assert src.stats().skipped_corrupt == 1 and src.stats().frames_read == 2
    assert [round(float(f.image.mean())) for f in frames] == [120]


def test_sequential_live_decodes_each_packet_and_counts_the_broken_ones():
    good = _jpeg(120)
    cap = FakeCap([good, good[:40], NOT_A_PICTURE, _jpeg(200)])
    src = open_source("rtsp://fake/cam", live=False, opener=lambda s: cap,
                      policy=ReconnectPolicy(initial_delay_s=0.01, max_attempts=1))
    values = []
    with pytest.raises(InputError, match="rtsp://fake/cam"):
        for f in src:
            assert isinstance(f.image, np.ndarray) and f.image.shape == (48, 64, 3)
            values.append(round(float(f.image.mean())))
    src.close()
    assert len(values) == 2 and abs(values[0] - 120) < 3 and abs(values[1] - 200) < 3
    assert src.stats().skipped_corrupt == 2 and src.stats().frames_read == 2


@pytest.mark.parametrize("case", ["do_not_decode_alone", "carry_padding"])
def test_a_stream_whose_packets_are_not_whole_jpegs_is_read_decoded(case, stream_of,
                                                                     monkeypatch):
    """Packets OpenCV cannot decode on their own (an MJPEG without Huffman tables), or that
    carry bytes after the JPEG's end marker (they never look whole): the stream is read
    decoded by FFmpeg, rather than every frame counted corrupt and the camera reconnected for
    ever."""
    pad = b"\x00" * 100 if case == "carry_padding" else b""
    s = stream_of([_jpeg(v) + pad for v in GREYS])
    if case == "do_not_decode_alone":
        monkeypatch.setattr(EncodedFrame, "decode", lambda self: None)
    src = open_source(s.url, policy=POLICY)
    try:
        assert not isinstance(src._cap, MjpegPackets)
        got = _take(src, 3)
    finally:
        src.close()
    assert all(min(abs(float(f.image.mean()) - v) for v in GREYS) < 3 for f in got)
    assert src.stats().skipped_corrupt == 0 and src.stats().reconnects == 0


def test_encoded_frame_whole_needs_both_markers():
    good = _jpeg(120)
    assert EncodedFrame(np.frombuffer(good, np.uint8)).whole()
    assert EncodedFrame(np.frombuffer(good + b"\x00" * 8, np.uint8)).whole()   # padding
    assert not EncodedFrame(np.frombuffer(good[:-200], np.uint8)).whole()
    assert not EncodedFrame(np.frombuffer(good[2:], np.uint8)).whole()
    assert EncodedFrame(np.frombuffer(good, np.uint8)).size == len(good)
    assert live._usable(EncodedFrame(np.frombuffer(good, np.uint8)))

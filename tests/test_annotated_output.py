"""The annotated video's encoder thread (vision/io/sinks.py AnnotatedOutput): every frame is
written, in order, by close; an encoder failure reaches the frame loop once."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import cv2
import numpy as np
import pytest

from vision.io.sinks import VIDEO_QUEUE, AnnotatedOutput


def _frame(i: int) -> np.ndarray:
    """The frame number in black and white bars (8 bits, 16 px each): read back through the
    lossy codec exactly."""
    img = np.zeros((96, 128, 3), np.uint8)
    for b in range(8):
        if i >> b & 1:
            img[:, 16 * b:16 * b + 16] = 255
    return img


def _number(img: np.ndarray) -> int:
    return sum(1 << b for b in range(8) if img[:, 16 * b + 4:16 * b + 12].mean() > 128)


def test_every_frame_is_written_in_order(tmp_path):
    out = AnnotatedOutput(tmp_path, "video", 10.0)
    n = 3 * VIDEO_QUEUE + 5  # more than the queue holds: the loop waits, nothing is dropped
    for i in range(n):
        assert out.frame(_frame(i), SimpleNamespace(index=i), None) is True
    out.close()
    cap = cv2.VideoCapture(out.output)
    got = []
    while True:
        ok, img = cap.read()
        if not ok:
            break
        got.append(_number(img))
    cap.release()
    assert len(got) == n
    assert got == list(range(n))


class _Boom:
    def __init__(self, real):
        self.real, self.calls = real, 0

    def write(self, image):
        self.calls += 1
        if self.calls == 2:
            raise OSError(5, "Input/output error")
        self.real.write(image)

    def release(self):
        self.real.release()


def test_an_encoder_failure_reaches_the_frame_loop_once(tmp_path):
    out = AnnotatedOutput(tmp_path, "video", 10.0)
    out.frame(_frame(0), SimpleNamespace(index=0), None)
    out.writer = _Boom(out.writer)
    out.frame(_frame(1), SimpleNamespace(index=1), None)
    out.frame(_frame(2), SimpleNamespace(index=2), None)  # fails in the thread
    end = time.monotonic() + 60  # an upper bound for a loaded machine, not a speed check
    while not out._failed and time.monotonic() < end:
        time.sleep(0.01)
    assert out._failed
    with pytest.raises(OSError, match="Input/output error"):
        out.frame(_frame(3), SimpleNamespace(index=3), None)
    assert out.output is None  # the broken file is not named as the output
    out.close()  # closes without raising the same failure again


class _Slow:
    """An encoder that lags: each write waits until the test lets it go."""

    def __init__(self, real):
        self.real, self.go = real, threading.Event()

    def write(self, image):
        self.go.wait(60)
        self.real.write(image)

    def release(self):
        self.real.release()


def test_a_lagging_encoder_is_not_a_full_disk(tmp_path, monkeypatch):
    """CI failure of stop 35: on a loaded machine the queue held frames, their room was
    counted too, and a disk with room for the frames once written was called full. Room
    for four frames plus the margin, queued frames aside: the loop waits for the encoder,
    then goes on."""
    import vision.io.sinks as sinks

    out = AnnotatedOutput(tmp_path, "video", 10.0)
    out.frame(_frame(0), SimpleNamespace(index=0), None)
    out._queue.join()  # frame 0 written
    slow = _Slow(out.writer)
    out.writer = slow
    room = sinks.VIDEO_SPACE_MARGIN + 4 * out._per_frame + out._per_frame // 2
    monkeypatch.setattr(sinks, "free_bytes", lambda path: room)
    for i in (1, 2):  # waiting for the encoder: room counting them would need 5 or 6 frames
        out._queue.put(_frame(i))
    threading.Timer(0.2, slow.go.set).start()
    assert out.frame(_frame(3), SimpleNamespace(index=3), None) is True
    assert out.output is not None
    out.close()
    monkeypatch.setattr(sinks, "free_bytes", lambda path: sinks.VIDEO_SPACE_MARGIN)
    out2 = AnnotatedOutput(tmp_path / "b", "video", 10.0)
    with pytest.raises(OSError, match="No space left"):  # truly short: still disk full
        out2.frame(_frame(0), SimpleNamespace(index=0), None)
    out2.close()

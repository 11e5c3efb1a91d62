"""The frames of a still picture averaged before its still reading (vision.recognition.stack)."""

from __future__ import annotations

import numpy as np
import pytest

from vision.recognition.stack import MAX_FRAMES, FrameStack


def test_the_mean_of_the_still_frames_is_read_and_alike_frames_give_the_picture_back():
    s = FrameStack()
    a = np.full((4, 6, 3), 100, np.uint8)
    b = np.full((4, 6, 3), 103, np.uint8)
    s.add(a)
    assert s.mean(b) is not b and np.array_equal(s.mean(b), b)  # one frame: the picture
    s.add(b)
    s.add(b)
    m = s.mean(b)
    assert m.dtype == np.uint8 and m.shape == (4, 6, 3)
    assert int(m[0, 0, 0]) == 102  # (100 + 103 + 103) / 3 = 102
    s.reset()
    for _ in range(5):
        s.add(a)
    assert np.array_equal(s.mean(a), a)  # a file repeating one picture reads it unchanged


def test_only_the_first_frames_count_and_another_shape_starts_again():
    s = FrameStack(max_frames=2)
    s.add(np.zeros((2, 2, 3), np.uint8))
    s.add(np.full((2, 2, 3), 10, np.uint8))
    s.add(np.full((2, 2, 3), 250, np.uint8))  # beyond max_frames: not counted
    assert s.count == 2 and int(s.mean(np.zeros((2, 2, 3), np.uint8))[0, 0, 0]) == 5
    s.add(np.full((3, 2, 3), 7, np.uint8))  # the camera's size changed
    assert s.count == 1
    other = np.full((5, 5, 3), 9, np.uint8)
    assert np.array_equal(s.mean(other), other)
    assert MAX_FRAMES == 8
    with pytest.raises(ValueError, match="max_frames must be >= 1"):
        FrameStack(0)


def test_noise_falls_by_the_square_root_of_the_frames():
    rng = np.random.default_rng(5)
    clean = np.full((200, 200, 3), 120, np.uint8)
    s = FrameStack()
    frames = [np.clip(clean + rng.normal(0, 8, clean.shape), 0, 255).astype(np.uint8)
              for _ in range(MAX_FRAMES)]
    for f in frames:
        s.add(f)
    one = float(np.std(frames[0].astype(np.float32) - clean))
    avg = float(np.std(s.mean(frames[0]).astype(np.float32) - clean))
    assert one == pytest.approx(8.0, rel=0.05)
    assert avg == pytest.approx(8.0 / MAX_FRAMES ** 0.5, rel=0.15)


def test_the_engine_reads_the_still_frames_mean():
    """Video: the fused still reading of a still picture reads the mean of its still frames
    (the gate saw no motion: sensor noise only), not the last frame alone."""
    from vision.detections import Detections
    from vision.recognition.engine import Detectors, RecognitionEngine

    class Tiles:
        def detect(self, image, imgsz=None):
            return Detections.empty()

    class NoSpots:
        def detect_batch(self, crops):
            return [Detections.empty() for _ in crops]

    e = RecognitionEngine(detectors=Detectors(Tiles(), NoSpots()))
    read = []
    e._read_still = lambda image, *a, **k: (read.append(image.copy()) or ([], Detections.empty()))
    rng = np.random.default_rng(1)
    clean = np.full((120, 160, 3), 90, np.uint8)
    for _ in range(6):
        e.read(np.clip(clean + rng.integers(-2, 3, clean.shape), 0, 255).astype(np.uint8),
               "video")
    assert read, "the still reading was made"
    last = read[0]
    # the picture read is the mean of the frames so far: nearer the clean picture than any
    # single frame (each +-2 grey levels off)
    assert np.abs(last.astype(int) - 90).mean() < 0.7

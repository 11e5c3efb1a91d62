"""Tests for vision.io.capture: image/folder/glob/video sources, errors, live newest-frame-only
reading and reconnect with backoff (fake camera injected through ``opener``)."""

from __future__ import annotations

import logging
import threading

import cv2
import numpy as np
import pytest

from scoring.errors import InputError
from fakes import FakeCap
from vision.io.capture import Frame, ReconnectPolicy, open_source, read_image, to_bgr

pytestmark = pytest.mark.timeout(60)

FAST = ReconnectPolicy(initial_delay_s=0.01, factor=2.0, max_delay_s=0.03, max_attempts=3,
                       max_total_s=5.0)


def _img(value, h=20, w=30):
    return np.full((h, w, 3), value, np.uint8)


# ----------------------------------------------------------------------------- images

def test_folder_natural_order_and_metadata(tmp_path):
    for name, v in [("f10.png", 10), ("f2.png", 2), ("f1.png", 1)]:
        cv2.imwrite(str(tmp_path / name), _img(v))
    (tmp_path / "notes.txt").write_text("not an image")
    with open_source(tmp_path) as src:
        assert src.kind == "images" and src.frame_count == 3 and not src.live
        frames = list(src)
    assert [int(f.image[0, 0, 0]) for f in frames] == [1, 2, 10]
    assert [f.index for f in frames] == [0, 1, 2]
    assert [f.timestamp for f in frames] == pytest.approx([0, 1 / 30, 2 / 30])
    assert frames[2].path.endswith("f10.png")
    assert all(isinstance(f, Frame) and f.image.shape == (20, 30, 3) for f in frames)


def test_glob_matches_sorted(tmp_path):
    for i in (3, 1, 2):
        cv2.imwrite(str(tmp_path / f"a{i}.jpg"), _img(50 * i))
    cv2.imwrite(str(tmp_path / "b1.jpg"), _img(0))
    frames = list(open_source(str(tmp_path / "a*.jpg"), fps=10))
    assert [f.path.rsplit("/", 1)[1] for f in frames] == ["a1.jpg", "a2.jpg", "a3.jpg"]
    assert frames[1].timestamp == pytest.approx(0.1)


def test_rgba_composited_on_grey(tmp_path):
    rgba = np.zeros((4, 3, 4), np.uint8)
    rgba[..., :3] = (0, 0, 255)          # red in BGR
    rgba[0, :, 3] = 0                    # transparent row -> grey 128
    rgba[1, :, 3] = 255                  # opaque row -> red
    rgba[2, :, 3] = 51                   # 20 % -> 0.2*255 + 0.8*128 = 153.4 red, 102.4 others
    p = tmp_path / "t.png"
    cv2.imwrite(str(p), rgba)
    img = read_image(p)
    assert img.shape == (4, 3, 3) and img.dtype == np.uint8
    assert tuple(img[0, 0]) == (128, 128, 128)
    assert tuple(img[1, 0]) == (0, 0, 255)
    assert tuple(img[2, 0]) == (102, 102, 153)
    # the same through a source
    frame = next(iter(open_source(p)))
    np.testing.assert_array_equal(frame.image, img)


def test_grey_and_16bit_become_bgr_uint8(tmp_path):
    g = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    cv2.imwrite(str(tmp_path / "g.png"), g)
    img = read_image(tmp_path / "g.png")
    assert img.shape == (3, 4, 3)
    np.testing.assert_array_equal(img[..., 0], g)
    np.testing.assert_array_equal(img[..., 2], g)
    out = to_bgr(np.full((2, 2), 65535, np.uint16))
    assert out.dtype == np.uint8 and out.shape == (2, 2, 3) and int(out.max()) == 255


def test_corrupt_image_in_folder_skipped_and_counted(tmp_path, caplog):
    cv2.imwrite(str(tmp_path / "01.png"), _img(1))
    (tmp_path / "02.png").write_bytes(b"\x89PNG garbage \x00\x01\x02" * 10)
    cv2.imwrite(str(tmp_path / "03.png"), _img(3))
    with caplog.at_level(logging.WARNING, logger="vision.io.capture"):
        src = open_source(tmp_path)
        frames = list(src)
    assert [int(f.image[0, 0, 0]) for f in frames] == [1, 3]
    assert [f.index for f in frames] == [0, 2]     # index is the file's position
    st = src.stats()
    assert (st.frames_read, st.skipped_corrupt, st.frames_yielded) == (2, 1, 2)
    assert "02.png" in caplog.text


@pytest.mark.parametrize("case", ["missing", "text_png", "text_txt", "empty_dir", "glob"])
def test_input_errors_name_the_path(tmp_path, case):
    if case == "missing":
        spec = str(tmp_path / "nope.mp4")
    elif case == "text_png":
        spec = str(tmp_path / "notes.png")
        (tmp_path / "notes.png").write_text("hello, not an image")
    elif case == "text_txt":
        spec = str(tmp_path / "notes.txt")
        (tmp_path / "notes.txt").write_text("hello, not a video")
    elif case == "empty_dir":
        spec = str(tmp_path / "empty")
        (tmp_path / "empty").mkdir()
        (tmp_path / "empty" / "readme.md").write_text("x")
    else:
        spec = str(tmp_path / "*.png")
    with pytest.raises(InputError) as err:
        open_source(spec)
    assert spec in str(err.value)


def test_unreachable_stream_raises_after_attempts():
    url = "rtsp://127.0.0.1:9/none"
    with pytest.raises(InputError, match=r"rtsp://127\.0\.0\.1:9/none.*2 attempt"):
        open_source(url, policy=ReconnectPolicy(initial_delay_s=0.01, max_attempts=2,
                                                open_timeout_ms=500))


# ----------------------------------------------------------------------------- video

@pytest.fixture(scope="module")
def video_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("video") / "clip.avi"
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (64, 48))
    assert w.isOpened()
    for i in range(12):
        w.write(_img(20 * i, 48, 64))
    w.release()
    return path


def test_video_file_read_back_in_order(video_path):
    with open_source(video_path) as src:
        assert src.kind == "video" and src.fps == pytest.approx(10.0)
        assert src.frame_count == 12
        frames = list(src)
    assert len(frames) == 12
    assert [f.index for f in frames] == list(range(12))
    assert [f.timestamp for f in frames] == pytest.approx([i / 10 for i in range(12)])
    means = [float(f.image.mean()) for f in frames]
    np.testing.assert_allclose(means, [20 * i for i in range(12)], atol=4)
    assert src.stats().frames_read == 12


def test_video_replayed_live_ends_at_eof(video_path):
    src = open_source(video_path, live=True, policy=FAST)
    try:
        assert src.live and src.kind == "video"
        frames = list(src)          # ends without error at the end of the file
    finally:
        src.close()
    st = src.stats()
    assert st.frames_read == 12 and st.reconnects == 0
    assert 1 <= len(frames) <= 12
    ts = [f.timestamp for f in frames]
    assert ts == sorted(ts)


# ----------------------------------------------------------------------------- fake live

def test_live_keeps_only_newest_frame():
    burst_done, go_on = threading.Event(), threading.Event()
    cap = FakeCap([_img(i) for i in range(10)] + [go_on, "drop"], on_blocked=burst_done)
    calls = []

    def opener(spec):
        calls.append(spec)
        return cap if len(calls) == 1 else None

    src = open_source("rtsp://fake/cam", opener=opener,
                      policy=ReconnectPolicy(initial_delay_s=0.01, max_attempts=1))
    assert src.live and src.kind == "stream"
    it = iter(src)
    assert burst_done.wait(10)
    frame = next(it)
    assert frame.index == 9 and int(frame.image[0, 0, 0]) == 9   # the newest, not frame 0
    assert src.stats().dropped == 9
    go_on.set()
    with pytest.raises(InputError, match="rtsp://fake/cam"):
        next(it)   # the stream drops and cannot reconnect (1 attempt allowed)
    src.close()
    assert cap.released


def test_live_reconnects_with_exponential_backoff(caplog):
    gate = threading.Event()
    first = FakeCap([_img(0), _img(1), "empty", _img(2), "drop"])
    second = FakeCap([_img(3), _img(4), gate, "drop"])
    plan = [first, None, None, second, None, None, None]
    calls = []

    def opener(spec):
        calls.append(spec)
        return plan[len(calls) - 1]

    with caplog.at_level(logging.INFO, logger="vision.io.capture"):
        src = open_source("0", opener=opener, policy=FAST)
        assert src.kind == "camera"
        seen = []
        with pytest.raises(InputError, match="could not reconnect to camera 0"):
            for f in src:
                seen.append(int(f.image[0, 0, 0]))
                if seen[-1] == 4 or src.stats().frames_read >= 5:
                    gate.set()
        src.close()
    st = src.stats()
    assert st.frames_read == 5 and st.skipped_corrupt == 1
    assert st.reconnects == 1 and st.gaps_s > 0
    # first drop: 2 failed attempts (waits 0.01, 0.02) then success; second drop: attempts 1, 2
    # fail (waits 0.01, 0.02), attempt 3 fails -> give up
    assert src.backoff_history == pytest.approx([0.01, 0.02, 0.01, 0.02])
    assert len(calls) == 7
    assert seen == sorted(seen) and seen[-1] == 4
    assert "frames back after a gap of" in caplog.text and st.gaps == 1
    assert first.released and second.released


def test_live_false_reads_every_frame_of_a_camera():
    cap = FakeCap([_img(i) for i in range(5)])
    src = open_source("1", live=False, opener=lambda s: cap,
                      policy=ReconnectPolicy(initial_delay_s=0.01, max_attempts=1))
    assert not src.live
    with pytest.raises(InputError, match="camera 1"):
        values = []
        for f in src:
            values.append(int(f.image[0, 0, 0]))
    assert values == [0, 1, 2, 3, 4]
    # the opener keeps giving the exhausted capture: the first drop reconnects (1), the
    # reconnection gives no frame and counts as a failed attempt, so this ends instead of spinning
    assert src.stats().frames_read == 5 and src.stats().reconnects == 1


def test_backoff_delays_cap():
    p = ReconnectPolicy(initial_delay_s=0.5, factor=2, max_delay_s=3)
    assert [p.delay(i) for i in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]

"""Faults in the input files: a video with damaged bytes, a folder of unreadable images, a
decompression bomb. Unreadable frames are skipped and counted and the reading goes on to the
end; an input with no usable frame, or an image declaring more than MAX_IMAGE_PIXELS, is an
error (InputError -> exit 2, one line naming the input)."""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest

from scoring.errors import InputError
from vision.io.capture import MAX_IMAGE_PIXELS, open_source, read_image
from vision.cli import main
from helpers.pictures import black_png, png_chunk, run_with_peak_rss

ROOT = Path(__file__).resolve().parents[2]
W, H, FPS = 160, 120, 30.0


def _frame(i: int) -> np.ndarray:
    """A frame whose number is written in 10 black/white blocks (readable after mp4v)."""
    img = np.full((H, W, 3), 90, np.uint8)
    for b in range(10):
        img[70:110, b * 16 + 2: b * 16 + 14] = 255 if (i >> b) & 1 else 0
    cv2.putText(img, str(i), (8, 50), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (200, 200, 255), 2)
    return img


def _number(img: np.ndarray) -> int:
    return sum(1 << b for b in range(10) if img[80:100, b * 16 + 5: b * 16 + 11].mean() > 128)


def _damaged_video(path: Path, n: int, where: str, seed: int = 0) -> Path:
    """Render ``n`` frames with cv2.VideoWriter (mp4v) and write random bytes into the media
    data: ``"middle"`` (4000 bytes at half the file), ``"start"`` (the first 3000 bytes of the
    media data) or ``"all"`` (all of it)."""
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (W, H))
    assert w.isOpened()
    for i in range(n):
        w.write(_frame(i))
    w.release()
    data = bytearray(path.read_bytes())
    mdat = data.find(b"mdat") + 4
    if where == "middle":
        a, b = len(data) // 2, len(data) // 2 + 4000
    elif where == "start":
        a, b = mdat, mdat + 3000
    else:
        moov = data.find(b"moov")
        a, b = mdat, (moov - 4 if moov > mdat else len(data))
    data[a:b] = np.random.default_rng(seed).integers(0, 256, b - a, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(data))
    return path


@pytest.mark.faults
@pytest.mark.parametrize("where", ["middle", "start"])
def test_damaged_video_is_read_to_the_end(tmp_path, where):
    n = 540
    path = _damaged_video(tmp_path / "table.mp4", n, where)
    with open_source(path) as src:
        frames = list(src)
        st = src.stats()
    idx = [f.index for f in frames]
    # read on past the damage to the last frame (before: 275 of 540 frames, or for damage at
    # the start "video has no readable frame"), the lost frames counted
    assert idx[-1] == n - 1
    assert st.skipped_corrupt >= 1
    assert st.frames_read == len(frames) >= n - 40
    assert st.frames_read + st.skipped_corrupt == n
    assert idx == sorted(set(idx))
    assert [f.timestamp for f in frames] == pytest.approx([i / FPS for i in idx])
    # indices stay true across the damage: each frame carries its own number (frames next to
    # the damage may be concealed copies of a neighbour, so only clean ones are compared)
    clean = [f for f in frames if abs(f.index - idx[len(idx) // 2]) > 30][-100:]
    assert sum(_number(f.image) == f.index for f in clean) >= len(clean) - 2


@pytest.mark.faults
def test_run_reports_unreadable_frames(tmp_path, capsys):
    """``paigow run`` goes on to the end of a damaged video and says how many frames it
    skipped (before: "32 frame(s)" of 60, exit 0, nothing said)."""
    path = _damaged_video(tmp_path / "short.mp4", 60, "middle")
    with open_source(path) as src:
        n_read = len(list(src))
        skipped = src.stats().skipped_corrupt
    assert n_read + skipped == 60 and skipped > 0
    rc = main(["run", str(path), "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
    assert re.search(rf"\b{n_read} frame\(s\), \d+ round\(s\)( \([^)]*\))?, {skipped} "
                     r"unreadable frame\(s\) skipped", out), out[-1000:]


def _run_cli(capsys, *argv):
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.mark.faults
@pytest.mark.parametrize("command", ["run", "identify"])
def test_folder_of_only_unreadable_images_is_an_error(tmp_path, capsys, command):
    folder = tmp_path / "frames"
    folder.mkdir()
    for i in range(3):
        (folder / f"f{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(50)) * 3)
    argv = [command, str(folder)] + (["--no-progress"] if command == "run" else [])
    rc, out, err = _run_cli(capsys, *argv)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(folder) in lines[0] and "no readable image" in lines[0]


@pytest.mark.faults
def test_video_with_no_usable_frame_is_an_error(tmp_path, capsys):
    path = _damaged_video(tmp_path / "dead.mp4", 30, "all")
    rc, out, err = _run_cli(capsys, "run", str(path), "--no-progress", "--json")
    assert rc == 2
    line = err.strip().splitlines()[-1]
    assert str(path) in line and "no readable frame" in line
    assert '"error"' in out and str(path) in out


# ----------------------------------------------------------------------------- huge images

def _png_header_only(path: Path, width: int, height: int) -> Path:
    """A tiny PNG that declares width x height (8-bit RGB) with a few bytes of image data."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr)
                     + png_chunk(b"IDAT", zlib.compress(b"\x00" * 1000)) + png_chunk(b"IEND", b""))
    return path


@pytest.mark.faults
@pytest.mark.parametrize("size,shown", [((30000, 30000), "900000000 pixels"),
                                        ((12000, 10000), "12000 x 10000")])
def test_image_above_the_pixel_cap_is_refused_before_decoding(tmp_path, capsys, size, shown):
    assert size[0] * size[1] > MAX_IMAGE_PIXELS
    bomb = _png_header_only(tmp_path / "bomb.png", *size)
    assert bomb.stat().st_size < 200
    with pytest.raises(InputError, match="too large") as err:
        read_image(bomb)
    assert shown in str(err.value) and str(bomb) in str(err.value)
    # through the CLI: one line, exit 2 -- also when the bomb hides in a folder of good frames
    folder = tmp_path / "frames"
    folder.mkdir()
    cv2.imwrite(str(folder / "a.png"), _frame(1))
    bomb.rename(folder / "b.png")
    for spec, named in ((str(folder / "b.png"), folder / "b.png"), (str(folder), folder / "b.png")):
        rc, out, err_text = _run_cli(capsys, "run", spec, "--no-progress")
        lines = err_text.strip().splitlines()
        assert rc == 2 and len(lines) == 1 and "too large" in lines[0] and str(named) in lines[0]
    # an image at the cap's scale but within it still decodes (the cap is not a size filter)
    ok = tmp_path / "ok.png"
    cv2.imwrite(str(ok), _frame(7))
    assert read_image(ok).shape == (H, W, 3)


@pytest.mark.faults
def test_decompression_bomb_costs_no_memory(tmp_path):
    """A real 110 KB PNG of 30000 x 30000 (it took 5.8 GB before): refused from its header, so
    the process stays small."""
    bomb = black_png(tmp_path / "bomb.png", 30000)
    assert bomb.stat().st_size < 300_000
    p, rss_mb = run_with_peak_rss(bomb, tmp_path, timeout=120)
    assert p.returncode == 2, p.stderr[-2000:]
    assert "too large" in p.stderr and str(bomb) in p.stderr
    assert rss_mb < 800, f"{rss_mb:.0f} MB"

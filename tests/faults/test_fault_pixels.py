"""Fault: a small file with a huge picture (issue 23, item 9). A 118 KB PNG of 10000 x 10000
took 5.5 GB: the 100 MP cap allowed it. The pixel budget (:data:`vision.io.images.
MAX_IMAGE_PIXELS`, 36 MP: 8K UHD fits) refuses it from its header, before any pixel is
decoded: exit 2, one line, and the process stays small."""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from scoring.errors import InputError
from vision.io.images import MAX_IMAGE_PIXELS, check_image_size, read_image

ROOT = Path(__file__).resolve().parents[2]


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + \
        struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _png(path: Path, side: int) -> Path:
    """A complete, valid 1-bit grey PNG of side x side (all black), about 118 KB at 10000."""
    ihdr = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    row = b"\x00" * (1 + (side + 7) // 8)
    comp = zlib.compressobj(9)
    body = b"".join(comp.compress(row) for _ in range(side)) + comp.flush()
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", body)
                     + _chunk(b"IEND", b""))
    return path


@pytest.mark.faults
def test_a_10000_square_png_is_refused_and_costs_no_memory(tmp_path):
    png = _png(tmp_path / "big.png", 10000)
    assert png.stat().st_size < 200_000
    assert 10000 * 10000 > MAX_IMAGE_PIXELS >= 7680 * 4320  # 8K UHD fits the budget
    with pytest.raises(InputError, match="too large"):
        read_image(png)
    check_image_size(7680, 4320, "an 8K frame")  # no error
    code = ("import sys\n"
            "from vision.cli import main\n"
            "rc = main(['run', sys.argv[1], '--no-progress'])\n"
            "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
            "print('RSS_KB', hwm.split()[1])\n"
            "sys.exit(rc)\n")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "YOLO_OFFLINE": "1",
           "YOLO_AUTOINSTALL": "false", "YOLO_CONFIG_DIR": str(ROOT / ".yolo_config")}
    p = subprocess.run([sys.executable, "-c", code, str(png)], capture_output=True, text=True,
                       env=env, cwd=str(ROOT), timeout=300)
    assert p.returncode == 2, p.stderr[-2000:]
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "too large (10000 x 10000" in lines[0] and str(png) in lines[0]
    rss_mb = int(p.stdout.split("RSS_KB")[1].split()[0]) / 1024
    assert rss_mb < 1024, rss_mb  # the decoded picture alone would be 300 MB, reading it GBs

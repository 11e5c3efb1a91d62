"""Pictures that attack the reader (decompression bombs, over-size headers) and the child
process that reads them with the real ``paigow run``, measuring its own peak memory."""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: ``python -c`` script: ``paigow run PICTURE --no-progress``, then the child's own peak RSS
#: (VmHWM; ru_maxrss would carry the parent's peak across fork + exec) on stdout.
_PEAK_RSS_RUN = ("import sys\n"
                 "from vision.cli import main\n"
                 "rc = main(['run', sys.argv[1], '--no-progress'])\n"
                 "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
                 "print('RSS_KB', hwm.split()[1])\n"
                 "sys.exit(rc)\n")


def png_chunk(kind: bytes, data: bytes) -> bytes:
    """One PNG chunk: length, type, data, CRC."""
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def black_png(path: Path, side: int) -> Path:
    """A complete, valid 1-bit grey PNG of side x side px, all black: about 110 KB on disk at
    30000, side**2 bytes once decoded to 8 bits, three times that as BGR."""
    ihdr = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    row = b"\x00" * (1 + (side + 7) // 8)
    comp = zlib.compressobj(9)
    body = b"".join(comp.compress(row) for _ in range(side)) + comp.flush()
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", body)
                     + png_chunk(b"IEND", b""))
    return path


def run_with_peak_rss(picture: Path, cwd: Path, timeout: float
                      ) -> tuple[subprocess.CompletedProcess, float]:
    """``paigow run PICTURE`` in a child process (the repository on its path, offline
    ultralytics); returns the finished process and the child's peak RSS in MB."""
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "YOLO_OFFLINE": "1",
           "YOLO_AUTOINSTALL": "false", "YOLO_CONFIG_DIR": str(ROOT / ".yolo_config")}
    p = subprocess.run([sys.executable, "-c", _PEAK_RSS_RUN, str(picture)],
                       capture_output=True, text=True, env=env, cwd=str(cwd), timeout=timeout)
    rss = p.stdout.split("RSS_KB")
    return p, (int(rss[1].split()[0]) / 1024 if len(rss) > 1 else float("nan"))

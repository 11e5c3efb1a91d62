"""The pictures of the HTML shift report (:mod:`vision.audit.report_html`; docs/payouts.md,
key frames and game pace): each round's key frame as a small JPEG thumbnail and the plot of
rounds per hour over the shift as a PNG, both as ``data:`` URIs, so the page stays one
self-contained file; and the full key frames copied beside the page for its links
(:func:`copy_key_frames`)."""

from __future__ import annotations

import base64
import os
import re
import shutil
from pathlib import Path

__all__ = ["THUMB_WIDTH", "thumbnail_uri", "pace_plot_uri", "copy_key_frames",
           "frames_folder"]

THUMB_WIDTH = 200
"""Width in pixels of a key-frame thumbnail (height by the frame's aspect ratio)."""


def thumbnail_uri(path: str | os.PathLike, width: int = THUMB_WIDTH,
                  quality: int = 75) -> str | None:
    """A key frame as a small JPEG ``data:`` URI.

    Args:
        path: the key-frame JPEG (the audit store's ``DB.frames/`` file).
        width: the thumbnail's width in pixels (a narrower frame keeps its own size).
        quality: JPEG quality 0..100.

    Returns:
        ``"data:image/jpeg;base64,..."``, or None when the file is missing or not a readable
        image (the report then says so instead of showing a picture).
    """
    import cv2
    import numpy as np

    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    flag = cv2.IMREAD_COLOR
    try:  # decode a large frame at 1/2, 1/4 or 1/8 scale (JPEG DCT scaling: several x faster)
        import io

        from PIL import Image

        with Image.open(io.BytesIO(data)) as im:
            w0 = im.size[0]
        for f, reduced in ((8, cv2.IMREAD_REDUCED_COLOR_8), (4, cv2.IMREAD_REDUCED_COLOR_4),
                           (2, cv2.IMREAD_REDUCED_COLOR_2)):
            if w0 // f >= width:
                flag = reduced
                break
    except Exception:  # not an image Pillow reads: OpenCV decides below
        pass
    img = cv2.imdecode(np.frombuffer(data, np.uint8), flag)
    if img is None or img.size == 0:
        return None
    h, w = img.shape[:2]
    if w > width:
        img = cv2.resize(img, (width, max(1, round(h * width / w))),
                         interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", img, [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
    if not ok:
        return None
    return "data:image/jpeg;base64," + base64.b64encode(buf.tobytes()).decode("ascii")


def pace_plot_uri(pace: dict) -> str | None:
    """The plot of rounds per hour over the shift, one line per table, as a PNG ``data:`` URI
    (matplotlib, Agg backend; about 900 x 300 pixels).

    Args:
        pace: :func:`vision.audit.pace.game_pace`'s result (``hourly``: per table, ``[hour
            start, rounds in that clock hour]``).

    Returns:
        ``"data:image/png;base64,..."``, or None when there is no round to plot.
    """
    hourly = pace.get("hourly") or {}
    if not any(hourly.values()):
        return None
    import io

    import matplotlib.dates as mdates
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    from vision.audit.chain import parse_time

    fig = Figure(figsize=(9, 3), dpi=100)  # no pyplot: the Agg canvas, no global state
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for tid, series in sorted(hourly.items()):
        xs = [parse_time(h, "hour") for h, _ in series]
        ys = [n for _, n in series]
        ax.plot(xs, ys, marker="o", label=f"table {tid}")
    hours = sorted({parse_time(h, "hour") for series in hourly.values() for h, _ in series})
    days = {h.date() for h in hours}
    fmt = "%H:00" if len(days) == 1 else "%m-%d %H:00"
    if len(hours) <= 24:  # one tick per clock hour
        ax.set_xticks(hours)
        ax.set_xticklabels([h.strftime(fmt) for h in hours])
    else:
        ax.xaxis.set_major_locator(mdates.AutoDateLocator())
        ax.xaxis.set_major_formatter(mdates.DateFormatter(fmt))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("rounds in the hour")
    ax.set_xlabel("hour (UTC)" + (f", {hours[0]:%Y-%m-%d}" if len(days) == 1 else ""))
    ax.set_title("Rounds per hour over the shift")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def frames_folder(out: str | os.PathLike) -> Path:
    """The folder the full key frames of the report ``out`` go to: ``report.html`` ->
    ``report_frames/`` beside it."""
    out = Path(out)
    return out.with_name(out.stem + "_frames")


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)) or "_"


def copy_key_frames(report: dict, out: str | os.PathLike) -> dict[int, str]:
    """Copy every round's key frame beside the HTML report ``out`` (:func:`frames_folder`,
    one file ``<table>_<round>.jpg`` per round; an existing file of that name is replaced).

    Args:
        report: :func:`vision.audit.report.shift_report`'s result (rows with ``key_frame``).
        out: the HTML file the report is written to.

    Returns:
        camera record id -> the copy's path relative to the page's folder (the link the page
        gives), for every frame copied; a missing frame file is left out.

    Raises:
        OSError: the folder or a copy cannot be written (disk full: the file named).
    """
    folder = frames_folder(out)
    links: dict[int, str] = {}
    for r in report["rounds"]:
        kf = r.get("key_frame")
        if not kf or not kf.get("path") or not Path(kf["path"]).is_file():
            continue
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{_safe(r['table_id'])}_{_safe(r['round_id'])}.jpg"
        shutil.copyfile(kf["path"], folder / name)
        links[int(kf["record"])] = f"{folder.name}/{name}"
    return links

"""A casino surveillance camera's picture of a rendered frame (issue 40 item 1: train for the
camera, not the picture).

The renderer's own camera effects (:func:`vision.synth.scenery.camera_effects`) model a decent
camera: a little blur, noise, a colour cast and JPEG. A pit's surveillance camera is worse, and
:func:`surveillance` adds what it does, in the order a camera does it:

1. resolution: the frame (a table frame 1280 px wide: a 720p camera's picture, tiles 40-133 px
   long) is kept or brought down to a camera of 576 or 480 lines (tiles down to 27 px);
2. optics: a slight defocus (Gaussian sigma 0.5-1.3 px) or a short motion smear (3-5 px);
3. dim, warm light: gain 0.5-0.9 and a yellow-orange cast (blue 0.72-0.92 of red);
4. sensor noise raised with the gain (sigma 2-8 grey levels, sometimes per channel);
5. the codec: an H.264 intra frame (libx264 through PyAV, CRF 26-38) or JPEG 30-70 where PyAV
   or its encoder is missing or half of the time.

The frame comes back at the camera's resolution (labels are normalised, so they stay exact).
"""

from __future__ import annotations

import io

import cv2
import numpy as np

from vision.synth.scenery import motion_blur

#: The camera heights (lines) a 720p frame is kept at or brought down to, drawn uniformly.
CAMERA_LINES = (480, 576, 720, 720)


def _h264(img: np.ndarray, crf: int) -> np.ndarray | None:
    """Encode ``img`` (uint8 BGR, H x W x 3) as one H.264 frame (libx264, yuv420p, CRF ``crf``)
    and decode it again; None where PyAV or libx264 is not installed."""
    try:
        import av
    except ImportError:
        return None
    h, w = img.shape[:2]
    h2, w2 = h - h % 2, w - w % 2  # yuv420p needs even sides
    buf = io.BytesIO()
    try:
        with av.open(buf, "w", format="mp4") as box:
            stream = box.add_stream("libx264", rate=25)
            stream.width, stream.height, stream.pix_fmt = w2, h2, "yuv420p"
            stream.options = {"crf": str(int(crf)), "preset": "veryfast", "tune": "zerolatency"}
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(img[:h2, :w2]), format="bgr24")
            for packet in stream.encode(frame):
                box.mux(packet)
            for packet in stream.encode():
                box.mux(packet)
        buf.seek(0)
        with av.open(buf) as box:
            out = next(box.decode(video=0)).to_ndarray(format="bgr24")
    except (av.error.FFmpegError, StopIteration, ValueError):
        return None
    if (h2, w2) != (h, w):
        out = cv2.copyMakeBorder(out, 0, h - h2, 0, w - w2, cv2.BORDER_REPLICATE)
    return out


def surveillance(img: np.ndarray, rng: np.random.Generator, frame_lines: int = 720
                 ) -> tuple[np.ndarray, dict]:
    """The frame as a dim, compressed surveillance camera delivers it.

    Args:
        img: uint8 BGR frame, H x W x 3, the picture of a camera of ``frame_lines`` lines.
        rng: the frame's generator (every draw comes from it: deterministic by seed).
        frame_lines: the lines the frame stands for (720: a 1280 px wide training frame).

    Returns:
        ``(image, info)``: uint8 BGR at the camera's resolution (H' x W' x 3, H' <= H, the same
        aspect), and what was done: ``lines``, ``blur`` ("defocus" / "motion" / None),
        ``gain``, ``noise`` (sigma, grey levels), ``codec`` ("h264" / "jpeg"), ``quality``
        (CRF or JPEG quality).
    """
    h, w = img.shape[:2]
    lines = int(rng.choice(CAMERA_LINES))
    f = min(1.0, lines / float(frame_lines))
    out = img if f >= 1.0 else cv2.resize(img, (max(2, round(w * f)), max(2, round(h * f))),
                                          interpolation=cv2.INTER_AREA)
    info: dict = {"lines": lines, "blur": None}
    r = rng.random()
    if r < 0.45:
        out = cv2.GaussianBlur(out, (0, 0), float(rng.uniform(0.5, 1.3)))
        info["blur"] = "defocus"
    elif r < 0.8:
        out = motion_blur(out, int(rng.integers(3, 6)), float(rng.uniform(0, 180)))
        info["blur"] = "motion"
    gain = float(rng.uniform(0.5, 0.9))
    warm = np.array([rng.uniform(0.72, 0.92), rng.uniform(0.88, 0.98), 1.0], np.float32)
    x = out.astype(np.float32) * (gain * warm)[None, None, :]
    sigma = float(rng.uniform(2.0, 8.0))
    x += rng.standard_normal((*x.shape[:2], 1), dtype=np.float32) * np.float32(sigma)
    if rng.random() < 0.4:
        x += rng.standard_normal(x.shape, dtype=np.float32) * np.float32(sigma * 0.5)
    out = np.clip(x, 0, 255).astype(np.uint8)
    info.update(gain=round(gain, 3), noise=round(sigma, 2))
    coded = None
    if rng.random() < 0.5:
        crf = int(rng.integers(26, 39))
        coded = _h264(out, crf)
        if coded is not None:
            info.update(codec="h264", quality=crf)
    if coded is None:
        q = int(rng.integers(30, 71))
        ok, buf = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, q])
        coded = cv2.imdecode(buf, cv2.IMREAD_COLOR)
        info.update(codec="jpeg", quality=q)
    return coded, info

"""Still images: reading one file as uint8 (H, W, 3) BGR, normalising any decoded array
(:func:`to_bgr`), and refusing images above :data:`MAX_IMAGE_PIXELS` from their header before
any pixel is decoded (a decompression bomb: a small PNG that declares 30000 x 30000). Encoding
a picture as JPEG bytes (:func:`encode_jpeg`: the dealer display's and the pit's pictures).
"""

from __future__ import annotations

import os
import re
import sys

import cv2
import numpy as np

from scoring.errors import InputError

__all__ = ["IMAGE_EXTENSIONS", "MAX_IMAGE_PIXELS", "to_bgr", "image_size", "check_image_size",
           "read_image", "encode_jpeg"]

#: File name endings read as still images.
IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"})
#: Largest image (or video frame) accepted, pixels (width x height): the pixel budget that
#: bounds memory. 36 megapixels holds an 8K UHD frame (7680 x 4320 = 33.2 MP) and a 6000 x
#: 6000 still; larger images are refused from their header, before any pixel is decoded,
#: never decoded to a reduced size (a reduced picture would not match a layout drawn in the
#: full picture's pixels). Memory grows with the pixels read (the still image is read at
#: several scales): a 118 KB PNG of 10000 x 10000 took 5.5 GB under the former 100 MP cap;
#: docs/configuration.md gives the measured peak at this budget.
MAX_IMAGE_PIXELS = 36_000_000
# OpenCV's own decoder limit (read once, at its first decode): the same cap as a second guard
# for formats whose header Pillow cannot read.
os.environ.setdefault("OPENCV_IO_MAX_IMAGE_PIXELS", str(MAX_IMAGE_PIXELS))


def to_bgr(img: np.ndarray) -> np.ndarray:
    """Normalise a decoded image to uint8 (H, W, 3) BGR.

    Grey (H, W) or (H, W, 1) -> BGR; (H, W, 2) grey+alpha and (H, W, 4) BGRA are composited
    onto neutral grey 128 by alpha; uint16 is scaled by 1/257; float in [0, 1] by 255.
    """
    a = np.asarray(img)
    if a.dtype == np.uint16:
        a = (a.astype(np.float32) / 257.0).round().astype(np.uint8)
    elif a.dtype.kind == "f":
        a = np.clip(a * 255.0, 0, 255).round().astype(np.uint8)
    elif a.dtype != np.uint8:
        a = np.clip(a, 0, 255).astype(np.uint8)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim == 2:
        return cv2.cvtColor(a, cv2.COLOR_GRAY2BGR)
    if a.shape[2] == 2:
        a = np.dstack([a[:, :, 0]] * 3 + [a[:, :, 1]])
    if a.shape[2] == 4:
        alpha = a[:, :, 3:4].astype(np.float32) / 255.0
        out = a[:, :, :3].astype(np.float32) * alpha + 128.0 * (1.0 - alpha)
        return np.clip(out.round(), 0, 255).astype(np.uint8)
    return np.ascontiguousarray(a[:, :, :3])


def image_size(path: str | os.PathLike) -> tuple[int, int] | None:
    """``(width, height)`` of an image file from its header (Pillow; no pixel is decoded).

    Returns None when Pillow does not recognise the file (OpenCV may still decode it).

    Raises:
        InputError: the header declares so many pixels that Pillow refuses to open it (over
            twice Pillow's own limit, about 179 megapixels; always above
            :data:`MAX_IMAGE_PIXELS`), naming the file.
    """
    import warnings

    from PIL import Image

    # ultralytics replaces Image.open by a wrapper that, for a file Pillow cannot identify,
    # tries to install and import a HEIF plugin (ModuleNotFoundError offline): use the
    # original when it is there.
    patches = sys.modules.get("ultralytics.utils.patches")
    opener = getattr(patches, "_image_open", None) or Image.open
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Pillow's own bomb warning: judged here instead
            with opener(path) as im:
                return int(im.size[0]), int(im.size[1])
    except Image.DecompressionBombError as exc:
        # raised before the size is handed out; the message carries the pixel count
        m = re.search(r"\((\d+) pixels\)", str(exc))
        count = f"{int(m.group(1))} pixels" if m else "more pixels than Pillow opens"
        raise InputError(f"image too large ({count}; the limit is {MAX_IMAGE_PIXELS:,} "
                         f"pixels, refused before decoding): {path}") from None
    except Exception:  # noqa: BLE001 - unidentified or broken header: OpenCV decides
        return None


def check_image_size(width: int, height: int, what: str) -> None:
    """Refuse an image (or video frame) of more than :data:`MAX_IMAGE_PIXELS` pixels.

    Raises:
        InputError: naming ``what`` and its size.
    """
    if width * height > MAX_IMAGE_PIXELS:
        raise InputError(f"image too large ({width} x {height}; the limit is "
                         f"{MAX_IMAGE_PIXELS:,} pixels, refused before decoding): {what}")


def _read_image_file(path: str) -> np.ndarray | None:
    """cv2.imread (unchanged, any depth) normalised by :func:`to_bgr`; None when it fails.

    Raises:
        InputError: the header declares more than :data:`MAX_IMAGE_PIXELS` pixels.
    """
    size = image_size(path)
    if size is not None:
        check_image_size(size[0], size[1], path)
    img = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if img is None or img.size == 0:
        return None
    return to_bgr(img)


def read_image(path: str | os.PathLike) -> np.ndarray:
    """Read one image file as uint8 (H, W, 3) BGR (alpha composited onto grey 128).

    Raises:
        InputError: the file is missing, declares more than :data:`MAX_IMAGE_PIXELS` pixels,
            or does not decode as an image (the message names it).
    """
    p = str(path)
    if not os.path.exists(p):
        raise InputError(f"image file not found: {p}")
    img = _read_image_file(p)
    if img is None:
        raise InputError(f"not a readable image: {p}")
    return img


def encode_jpeg(image: np.ndarray, quality: int = 80, max_width: int | None = 1280) -> bytes:
    """JPEG bytes of a BGR picture (the dealer display's frames, :mod:`vision.web.hub`, and
    the pit's, :mod:`vision.pit.worker`).

    Args:
        image: uint8 (H, W, 3) BGR or (H, W) grey.
        quality: JPEG quality 1..100.
        max_width: pictures wider than this many pixels are scaled down first (aspect kept);
            None keeps the size.

    Raises:
        InputError: not an image array, or OpenCV cannot encode it.
    """
    img = np.asarray(image)
    if img.dtype != np.uint8 or img.ndim not in (2, 3) or img.size == 0:
        raise InputError(f"frame must be a non-empty uint8 (H, W[, 3]) array, got dtype "
                         f"{img.dtype} shape {img.shape}")
    if max_width and img.shape[1] > max_width:
        h = max(1, round(img.shape[0] * max_width / img.shape[1]))
        img = cv2.resize(img, (int(max_width), int(h)), interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", img, [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
    if not ok:
        raise InputError(f"cannot encode frame of shape {img.shape} as JPEG")
    return buf.tobytes()

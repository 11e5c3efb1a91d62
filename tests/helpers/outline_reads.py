"""A tile read of an outline cut short, for the tests of vision.recognition.zoom.cut_short_faces
(tests/test_zoom.py, tests/test_reason_codes.py)."""

import numpy as np

from vision.recognition.decode import TileRead


def outline_read(face, length, spots=None):
    """A read of an outline 32 px wide and ``length`` px long (face None: unknown), whose
    read A counted ``spots`` spots where given."""
    poly = np.array([[960, 880], [992, 880], [992, 880 + length], [960, 880 + length]],
                    np.float32)
    r = TileRead(face, "face_up" if face else "unknown", 0.9, poly,
                 np.r_[poly.min(0), poly.max(0)])
    if spots is not None:
        r.reads = {"A": {"red": 5, "white": spots - 5, "candidates": []}}
    return r

"""The recognition engine (vision.recognition.engine): what it does is the configuration's,
never chosen by the detectors it was given -- handed-in detectors run every strategy as the
trained models do."""

import numpy as np

from vision.config import RecognitionConfig
from vision.detections import TILE, Detections
from vision.recognition.engine import Detectors, ReadMode, Reads, RecognitionEngine
from vision.recognition.scales import STILL_SCALES


class Recording:
    """A tile detector that finds one tile and records the input size of each call; a pip
    detector that finds no spot (so the tile stays unknown and the zoom looks again)."""

    version = "recording"

    def __init__(self):
        self.sizes: list = []
        self.shapes: list = []

    def detect(self, image, imgsz=None):
        self.sizes.append(imgsz)
        self.shapes.append(image.shape[:2])
        h, w = image.shape[:2]
        poly = np.array([[[w * 0.4, h * 0.4], [w * 0.45, h * 0.4], [w * 0.45, h * 0.5],
                          [w * 0.4, h * 0.5]]], np.float32)
        return Detections.from_polygons(poly, np.array([0.9], np.float32),
                                        np.array([TILE], np.int64))

    def detect_batch(self, crops):
        return [Detections.empty() for _ in crops]


def test_injected_detectors_run_every_input_size_of_a_still_picture():
    det = Recording()
    engine = RecognitionEngine(RecognitionConfig(zoom=False, turn=False),
                               detectors=Detectors(det, det))
    image = np.full((1080, 1920, 3), 90, np.uint8)
    got = engine.read(image, ReadMode.STILL)
    assert isinstance(got, Reads) and len(got) == 1
    assert det.sizes == [s for s in STILL_SCALES if s <= 1920]
    assert got.states.tolist() == ["unknown"] and got.faces.tolist() == [None]
    assert got.polygons.shape == (1, 4, 2) and got.polygons.dtype == np.float32
    assert engine.model_version == "recording"


def test_a_still_picture_with_an_unknown_tile_is_read_again_turned():
    det = Recording()
    engine = RecognitionEngine(RecognitionConfig(zoom=False), detectors=Detectors(det, det))
    image = np.full((1080, 1920, 3), 90, np.uint8)
    got = engine.read(image, ReadMode.STILL)
    # the tile stays unknown, so the picture turned by 45 degrees (a 2122 px square canvas:
    # ceil((1920 + 1080) x cos 45)) is read at every size too; it names nothing, adds nothing
    sizes = [s for s in STILL_SCALES if s <= 1920]
    assert det.sizes == sizes + [s for s in STILL_SCALES if s <= 2122]
    assert det.shapes == [(1080, 1920)] * len(sizes) + [(2122, 2122)] * (len(det.sizes)
                                                                          - len(sizes))
    assert got.states.tolist() == ["unknown"]


def test_the_zoom_and_the_second_model_are_the_configuration_s():
    det, second = Recording(), Recording()
    image = np.full((1080, 1920, 3), 90, np.uint8)
    on = RecognitionEngine(RecognitionConfig(turn=False), detectors=Detectors(det, det, second))
    on.read(image, "still")
    # the unknown tile is looked at again in windows (smaller pictures), and the second
    # model reads the picture once more at its own size
    assert any(shape != (1080, 1920) for shape in det.shapes)
    assert len(second.sizes) == 1
    det2, second2 = Recording(), Recording()
    off = RecognitionEngine(RecognitionConfig(scales=(), zoom=False, second_model=False),
                            detectors=Detectors(det2, det2, second2))
    off.read(image, "still")
    # one pass: no turned reading either (the turn is a still strategy, as the sizes are)
    assert det2.sizes == [None] and second2.sizes == [] and not off.turn


def test_video_reads_one_pass_then_the_still_reading_stands():
    det = Recording()
    engine = RecognitionEngine(RecognitionConfig(zoom=False, turn=False),
                               detectors=Detectors(det, det))
    image = np.full((720, 1280, 3), 90, np.uint8)
    first = engine.read(image, ReadMode.VIDEO)
    assert det.sizes == [None] and first.detector_ran and not first.stale
    for _ in range(6):
        engine.read(image, ReadMode.VIDEO)
    # the vet read the still picture once at every size; the reading then stood
    assert det.sizes.count(None) == 1
    assert sorted(s for s in det.sizes if s) == sorted(s for s in STILL_SCALES if s <= 1280)
    assert engine.still_reuses >= 1

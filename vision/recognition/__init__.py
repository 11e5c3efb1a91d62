"""Recognition: a picture in, its tile reads out. The one entry point is
:class:`vision.recognition.engine.RecognitionEngine` (``read(image, mode) -> Reads``); the
detector backends are :mod:`vision.recognition.backends` (docs/architecture.md)."""

#!/usr/bin/env python
"""The live turned look on scenes the project did not draw: ``scripts/eval_scenes.py`` (tiles
only) with every still reading turning only the region around its unknown tiles, as live video
reads (:attr:`vision.recognition.engine.RecognitionEngine.turn_crop`,
:func:`vision.recognition.turned.turn_region`), to compare with the whole-picture turn that
files and stills use.

Usage::

    .venv/bin/python scripts/eval_turn_crop.py ../shared/scenes [eval_scenes options]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    """Run eval_scenes with the live turned look; returns its exit code."""
    from vision.recognition import engine

    init = engine.RecognitionEngine.__init__

    def live_turn(self, *a, **kw):
        init(self, *a, **kw)
        self.turn_crop = True

    engine.RecognitionEngine.__init__ = live_turn
    import eval_scenes

    args = list(sys.argv[1:] if argv is None else argv)
    return eval_scenes.main(args + ([] if "--no-seats" in args else ["--no-seats"]))


if __name__ == "__main__":
    sys.exit(main())

"""Camera to verdict: capture -> detect -> decode -> table -> overlay, one stage per module.

See docs/architecture.md. Heavy libraries (torch, ultralytics) are imported lazily.
"""

import os as _os
from pathlib import Path as _Path

REPO_ROOT = _Path(__file__).resolve().parents[1]
MODELS_DIR = REPO_ROOT / "models"

# Ultralytics must never reach the network or auto-install (set before it is imported).
_os.environ.setdefault("YOLO_OFFLINE", "1")
_os.environ.setdefault("YOLO_AUTOINSTALL", "false")
_os.environ.setdefault("YOLO_CONFIG_DIR", str(REPO_ROOT / ".yolo_config"))

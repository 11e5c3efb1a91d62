"""Shared pytest settings: hypothesis without per-example deadlines (the machine is shared and
loaded; speed is measured in scripts/, never asserted in tests); tests/ on sys.path so that test
files import the shared test doubles as ``import fakes`` in any pytest import mode."""

import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

settings.register_profile(
    "project", deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("project")

"""Shared pytest settings: hypothesis without per-example deadlines (the machine is shared and
loaded; speed is measured in scripts/, never asserted in tests)."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "project", deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("project")

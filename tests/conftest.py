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


# --------------------------------------------------------------------------- round events
# Every round event the code under test produces (vision.schema.RoundEvent.to_dict: run,
# serve, demo, unsettled rounds, scripted events) is checked against the JSON Schema in docs/;
# a test during which an invalid event was produced fails, naming the first error. Events
# produced by child processes are checked where the tests read them (fakes.assert_valid_event).

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _every_round_event_matches_the_schema(monkeypatch):
    from fakes import event_errors

    from vision.schema import RoundEvent

    bad: list[str] = []
    plain = RoundEvent.to_dict

    def checked(self):
        d = plain(self)
        errors = event_errors(d)
        if errors:
            bad.append(f"round {d.get('round_id')}: {errors[0]}")
        _seen[0] += 1
        return d

    monkeypatch.setattr(RoundEvent, "to_dict", checked)
    yield
    assert not bad, f"{len(bad)} round event(s) break docs/round-event.schema.json: {bad[0]}"


_seen = [0]


def pytest_terminal_summary(terminalreporter):
    if _seen[0]:
        terminalreporter.write_line(f"round events checked against docs/round-event.schema.json: "
                                    f"{_seen[0]}")


# --------------------------------------------------------------------------- PostgreSQL
# One throwaway cluster per test run (tests/pgserver.py), started on first use; each test
# gets its own database from `pg_cluster.new_database()`.


@pytest.fixture(scope="session")
def pg_cluster():
    from pgserver import PgCluster

    cluster = PgCluster()
    try:
        yield cluster
    finally:
        cluster.stop()


# --------------------------------------------------------------------------- shared video


@pytest.fixture(scope="module")
def small_video(tmp_path_factory):
    """The four-deal table video of tests/helpers/videos.py with pickled lossy ground-truth
    detectors (0.1 s per call): ``{"path", "fake", "scenes", "lossless"}``."""
    from helpers.videos import render_small_video

    return render_small_video(tmp_path_factory.mktemp("video"))

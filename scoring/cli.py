"""Scoring sub-commands of ``paigow`` (hand, set, settle, analyze, poker). Placeholder."""


def register(sub) -> None:
    """Add the scoring sub-commands to an argparse sub-parser collection."""

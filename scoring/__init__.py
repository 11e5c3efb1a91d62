"""The referee: exact pai gow tiles rules, house way, settlement and game analysis.

Pure Python + numpy; never imports :mod:`vision`. Sources: docs/rules.md and the
regulations it cites (NJ 13:69F-10.2, PA 621a.3).
"""

from .errors import InputError
from .hands import HandValue, evaluate, hand_key
from .rules import NJ, PA, RuleProfile, get_profile
from .tiles import FACES, STANDARD_SET, Tile, TileParseError, parse_tile, parse_tiles

__all__ = [
    "InputError", "HandValue", "evaluate", "hand_key", "NJ", "PA", "RuleProfile",
    "get_profile", "FACES", "STANDARD_SET", "Tile", "TileParseError", "parse_tile", "parse_tiles",
]

"""The set, the single-tile ranks and the tile parser [rules.md 1; NJ (g), PA (h)]."""

from __future__ import annotations

import math
from collections import Counter
from itertools import combinations

import pytest

from scoring.errors import InputError
from scoring.hands import PHYSICAL_HANDS
from scoring.tiles import (FACES, STANDARD_SET, TILES_BY_FACE, TileParseError, faces_over_set,
                           parse_tile, parse_tiles)

# NJ 13:69F-10.2 (g) / PA 621a.3 (h): face -> (rank, copies), typed from rules.md section 1.
SINGLE_RANKS = {
    "6-6": (1, 2), "1-1": (2, 2), "4-4": (3, 2), "1-3": (4, 2), "5-5": (5, 2), "3-3": (6, 2),
    "2-2": (7, 2), "5-6": (8, 2), "4-6": (9, 2), "1-6": (10, 2), "1-5": (11, 2),
    "3-6": (12, 1), "4-5": (12, 1), "2-6": (13, 1), "3-5": (13, 1), "2-5": (14, 1),
    "3-4": (14, 1), "2-4": (15, 1), "1-4": (16, 1), "2-3": (16, 1), "1-2": (17, 1),
}


def test_set_has_21_faces_and_32_tiles():
    assert len(FACES) == 21
    assert len(STANDARD_SET) == 32
    counts = Counter(t.face for t in STANDARD_SET)
    assert sum(1 for n in counts.values() if n == 2) == 11  # civil
    assert sum(1 for n in counts.values() if n == 1) == 10  # military


def test_single_tile_ranks_and_copies_match_the_regulation():
    got = {t.face: (t.rank, t.copies) for t in FACES}
    assert got == SINGLE_RANKS


def test_spots_and_red_spots():
    assert TILES_BY_FACE["6-6"].spots == 12 and TILES_BY_FACE["6-6"].red == 6
    assert TILES_BY_FACE["1-4"].red == 5 and TILES_BY_FACE["1-4"].white == 0
    assert TILES_BY_FACE["2-6"].red == 0 and TILES_BY_FACE["3-5"].white == 8
    assert TILES_BY_FACE["4-4"].red == 8


def test_count_four_tile_deals_35960():
    n = sum(1 for _ in combinations(range(32), 4))
    assert n == 35960 == math.comb(32, 4)


def test_count_distinct_four_tile_sets_3620_by_pair_class():
    classes = [t.pair_class for t in STANDARD_SET]
    distinct = {tuple(sorted(classes[i] for i in c)) for c in combinations(range(32), 4)}
    assert len(distinct) == 3620


def test_count_two_tile_picks_496_and_136_hands_by_pair_class():
    picks = list(combinations(range(32), 2))
    assert len(picks) == 496
    classes = [t.pair_class for t in STANDARD_SET]
    assert len({tuple(sorted((classes[i], classes[j]))) for i, j in picks}) == 136


def test_221_physical_hands():
    by_face = {tuple(sorted((STANDARD_SET[i].face, STANDARD_SET[j].face)))
               for i, j in combinations(range(32), 2)}
    assert len(by_face) == 221
    assert len(PHYSICAL_HANDS) == 221
    assert {tuple(sorted((a.face, b.face))) for a, b in PHYSICAL_HANDS} == by_face


def test_pair_classes_group_equal_ranks_and_the_gee_joon():
    by_class: dict[int, list[str]] = {}
    for t in STANDARD_SET:
        by_class.setdefault(t.pair_class, []).append(t.face)
    assert len(by_class) == 16
    assert all(len(v) == 2 for v in by_class.values())
    assert sorted(by_class[0]) == ["1-2", "2-4"]
    assert sorted(by_class[12]) == ["3-6", "4-5"]
    assert sorted(by_class[15]) == ["1-4", "2-3"]


@pytest.mark.parametrize("text,face", [
    ("6-6", "6-6"), ("66", "6-6"), ("6/6", "6-6"), ("6-1", "1-6"), (" 5 - 6 ", "5-6"),
    ("teen", "6-6"), ("TEEN", "6-6"), ("Day", "1-1"), ("gee3", "1-2"), ("gee6", "2-4"),
    ("3:4", "3-4"),
])
def test_parser_accepts(text, face):
    assert parse_tile(text).face == face


@pytest.mark.parametrize("text", ["7-7", "0-3", "3-3-3", "gow", "", "abc", "1-7", "6"])
def test_parser_rejects_and_names_the_text(text):
    with pytest.raises(TileParseError) as exc:
        parse_tile(text)
    assert repr(text) in str(exc.value)
    assert isinstance(exc.value, InputError) and isinstance(exc.value, ValueError)


def test_parse_tiles_splits_text():
    assert [t.face for t in parse_tiles("6-6, 1-2 teen")] == ["6-6", "1-2", "6-6"]
    with pytest.raises(TileParseError, match="7-7"):
        parse_tiles(["1-1", "7-7"])


def test_faces_over_set_counts_against_the_copies_a_set_holds():
    seen = [("6-6", "dealer"), ("3-6", "dealer"), ("6-6", "1"), ("1-1", "1"), ("1-1", "2"),
            ("3-6", "2"), ("6-6", "3"), ("3-6", None), ("6-6", "3")]
    over = faces_over_set(seen)
    # civil 6-6 (two in a set) four times, military 3-6 (one) three times; 1-1 twice is a set
    assert [(f.tile.face, f.count) for f in over] == [("6-6", 4), ("3-6", 3)]
    teen, gow = over
    assert teen.where == ("dealer", "1", "3", "3") and teen.holders == ("dealer", "1", "3")
    assert teen.excess_at == "3"  # the third 6-6
    assert gow.where == ("dealer", "2", None) and gow.excess_at == "2"  # the second 3-6
    assert faces_over_set([(TILES_BY_FACE["1-2"], "1"), ("2-4", "2")]) == []  # Gee Joon: two faces
    assert faces_over_set([]) == []
    with pytest.raises(TileParseError, match="7-7"):
        faces_over_set([("7-7", "1")])


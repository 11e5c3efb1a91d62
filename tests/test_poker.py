"""Texas hold 'em bonus poker ranking, N.J.A.C. 13:69F-28.5 (seed 004; rules.md 6)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.errors import InputError
from scoring.poker import Card, best_hand, compare, evaluate5, parse_card, parse_cards

ALL_CARDS = [f"{r}{s}" for r in "23456789TJQKA" for s in "shdc"]


def rank(cards: str) -> str:
    return best_hand(cards).name


@pytest.mark.parametrize("text,card", [
    ("As", Card(14, "s")), ("Td", Card(10, "d")), ("10h", Card(10, "h")), ("Kc", Card(13, "c")),
    ("2s", Card(2, "s")), ("qH", Card(12, "h")),
])
def test_parse_card(text, card):
    assert parse_card(text) == card


@pytest.mark.parametrize("text", ["1s", "Ax", "11h", "A", "", "Ts3"])
def test_parse_card_rejects(text):
    with pytest.raises(InputError) as exc:
        parse_card(text)
    assert repr(text) in str(exc.value)


def test_duplicate_cards_rejected():
    with pytest.raises(InputError, match="As"):
        parse_cards("As Kd As")
    with pytest.raises(InputError, match="5 to 7"):
        best_hand("As Kd Qh Jc")
    with pytest.raises(InputError, match="5 to 7"):
        best_hand("As Kd Qh Jc Tc 9c 8c 7c")


@pytest.mark.parametrize("cards,name", [
    ("As Ks Qs Js Ts", "royal flush"),
    ("9h Kh Qh Jh Th", "straight flush"),
    ("Ad 2d 3d 4d 5d", "straight flush"),
    ("7c 7d 7h 7s 2c", "four of a kind"),
    ("Ac Ad Ah Kc Kd", "full house"),
    ("Ac Jc 9c 5c 2c", "flush"),
    ("Ac Kd Qh Js Tc", "straight"),
    ("Ac 2d 3h 4s 5c", "straight"),
    ("Qc Kd Ah 2s 3c", "high card"),  # no wraparound [(b) 6]
    ("9c 9d 9h Ks 2c", "three of a kind"),
    ("9c 9d Kh Ks 2c", "two pairs"),
    ("9c 9d Kh Qs 2c", "one pair"),
    ("9c 7d Kh Qs 2c", "high card"),
])
def test_ranks(cards, name):
    assert rank(cards) == name


def test_the_nine_ranks_are_in_order():
    ladder = ["As Ks Qs Js Ts", "9h Kh Qh Jh Th", "7c 7d 7h 7s 2c", "Ac Ad Ah Kc Kd",
              "Ac Jc 9c 5c 2c", "Ac Kd Qh Js Tc", "9c 9d 9h Ks 2c", "9c 9d Kh Ks 2c",
              "9c 9d Kh Qs 2c", "9c 7d Kh Qs 2c"]
    for hi, lo in zip(ladder, ladder[1:]):
        assert compare(hi, lo) == 1 and compare(lo, hi) == -1


def test_orders_named_in_the_regulation():
    # (b) 2: A-K-Q-J-10 highest straight flush, A-2-3-4-5 the lowest
    assert compare("Kh Qh Jh Th 9h", "6c 5c 4c 3c 2c") == 1
    assert compare("6c 5c 4c 3c 2c", "Ad 2d 3d 4d 5d") == 1
    # (b) 4: three aces and two kings the highest full house; 2-2-2-3-3 the lowest
    assert compare("Ac Ad Ah Kc Kd", "Kc Kd Kh Ac Ad") == 1
    assert compare("Ac Ad Ah Kc Kd", "Ac Ad Ah Qc Qd") == 1
    assert compare("2c 2d 2h 3c 3d", "2c 2d 2h 4c 4d") == -1
    # (b) 5: A-K-Q-J-9 the highest flush
    assert compare("Ac Kc Qc Jc 9c", "Ac Kc Qc Jc 8c") == 1
    # (b) 6: A-2-3-4-5 the lowest straight
    assert compare("2c 3d 4h 5s 6c", "Ac 2d 3h 4s 5c") == 1
    # (b) 8: aces and kings the highest two pairs
    assert compare("Ac Ad Kh Ks 2c", "Ac Ad Qh Qs Kc") == 1
    # (c): equal rank, the highest card not held by the other wins
    assert compare("9c 9d Kh Qs 3c", "9h 9s Kc Qd 2c") == 1
    assert compare("Ac Kd 9h 7s 3c", "Ah Ks 9c 7d 2h") == 1


def test_push_when_identical_ranks():
    assert compare("Ac Kd 9h 7s 3c", "Ah Ks 9c 7d 3h") == 0
    assert compare("Ac Kd Qh Js Tc", "Ah Ks Qc Jd Th") == 0


def test_best_five_of_seven():
    h = best_hand("As Ks 2d 3c Qs Js Ts")
    assert h.name == "royal flush"
    assert sorted(str(c) for c in h.cards) == sorted(["As", "Ks", "Qs", "Js", "Ts"])
    assert best_hand("2c 2d 2h 7s 7c 7d 9h").key == (6, 7, 2)  # sevens full of twos
    assert best_hand("Ac 2d 3h 4s 5c 6d 9h").key == (4, 6)  # 2-6 beats the wheel
    # shared board: both play the board -> push
    board = "Ac Kd Qh Js Tc"
    assert compare(board + " 2c 3d", board + " 4c 5d") == 0


def test_wheel_straight_flush_key_is_lowest_straight_flush():
    assert evaluate5(parse_cards("Ad 2d 3d 4d 5d")).key == (8, 5)


@given(st.lists(st.sampled_from(ALL_CARDS), min_size=5, max_size=7, unique=True),
       st.lists(st.sampled_from(ALL_CARDS), min_size=5, max_size=7, unique=True))
def test_compare_is_antisymmetric_and_best_is_max(a, b):
    assert compare(a, b) == -compare(b, a)
    ha = best_hand(a)
    assert ha.key >= evaluate5(parse_cards(a[:5])).key
    assert len(ha.cards) == 5 and set(ha.cards) <= set(parse_cards(a))

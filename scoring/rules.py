"""Rule profiles: the places where the regulations differ, and the room's money settings.

Two profiles ship, chosen by name (``--rules pa|nj``):

``pa`` (default) -- 58 Pa. Code 621a.3.
    (g): "If, however, the numeric value of the tiles results in a zero-zero tie, both hands,
    regardless of the highest ranking tile, are equally bad and the dealer or, if applicable,
    the bank shall be considered the higher ranking hand."
``nj`` -- N.J.A.C. 13:69F-10.2.
    Has no zero-zero clause: two 0-point hands are compared by their highest single tile as
    any other equal points [NJ (f)], and only equal highest tiles are a copy [NJ (h)].

Differences examined and found to have no effect (kept here so nobody re-reads the texts):

- Gee Joon used singly: PA (f) lets either tile count 3 or 6; NJ (e) words it as "the three
  (1-2) may be counted as a 6 and the six (2-4) may be counted as a 3". Both give each tile the
  values {3, 6} with rank 17 when counted 3 and rank 15 when counted 6; identical.
- Pair order, wong, gong and single ranks: identical tables in NJ (b)/(g) and PA (c)/(h).

Money settings (not in the two ranking sections; 621a.8 and room practice): commission rate
(5% default; some rooms use 4.76%), commission rounding, and the mis-set policy for a hand
whose low hand ranks above its high hand.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction

from .errors import InputError

__all__ = ["RuleProfile", "PA", "NJ", "PROFILES", "get_profile", "UnknownProfileError",
           "commission_fraction"]

COMMISSION_ROUNDING = ("exact", "cent", "unit_down", "unit_up")
MIS_SET_POLICIES = ("house_way", "forfeit")


class UnknownProfileError(InputError):
    """Raised for a rule-profile name that is not ``pa`` or ``nj``; the message names it."""


@dataclass(frozen=True)
class RuleProfile:
    """A named set of rules.

    Attributes:
        name: ``"pa"`` or ``"nj"`` (or a room's own).
        zero_zero_copy: True when two 0-point hands are a copy won by the banker whatever the
            tiles [PA 621a.3(g)]; False when the highest single tile decides [NJ 13:69F-10.2(f)].
        commission: fraction of a win kept as commission, exact Decimal (default 0.05).
        commission_rounding: ``"exact"`` (no rounding), ``"cent"`` (to 0.01, half up),
            ``"unit_down"`` / ``"unit_up"`` (to whole betting units, down or up).
        mis_set: policy for a player's hand set with the low hand above the high hand:
            ``"house_way"`` re-sets it by the house way, ``"forfeit"`` settles it as a loss.
        citation: where the profile's ranking rules come from.
    """

    name: str
    zero_zero_copy: bool
    commission: Decimal = Decimal("0.05")
    commission_rounding: str = "exact"
    mis_set: str = "house_way"
    citation: str = ""

    def __post_init__(self) -> None:
        if not (Decimal(0) <= Decimal(self.commission) < Decimal(1)):
            raise ValueError(f"commission {self.commission} is not a fraction in [0, 1)")
        if self.commission_rounding not in COMMISSION_ROUNDING:
            raise ValueError(
                f"commission_rounding {self.commission_rounding!r} is not one of {COMMISSION_ROUNDING}")
        if self.mis_set not in MIS_SET_POLICIES:
            raise ValueError(f"mis_set {self.mis_set!r} is not one of {MIS_SET_POLICIES}")

    def with_(self, **changes) -> "RuleProfile":
        """A copy with some fields changed (e.g. ``PA.with_(commission=Decimal("0.0476"))``)."""
        return replace(self, **changes)


PA = RuleProfile("pa", zero_zero_copy=True, citation="58 Pa. Code 621a.3")
NJ = RuleProfile("nj", zero_zero_copy=False, citation="N.J.A.C. 13:69F-10.2")
PROFILES: dict[str, RuleProfile] = {"pa": PA, "nj": NJ}


def get_profile(name: str | RuleProfile) -> RuleProfile:
    """Return the profile named ``name`` (case-insensitive), or ``name`` if already a profile.

    Raises:
        UnknownProfileError: for any other name.
    """
    if isinstance(name, RuleProfile):
        return name
    try:
        return PROFILES[str(name).strip().lower()]
    except KeyError:
        raise UnknownProfileError(
            f"unknown rules profile {name!r}: choose one of {', '.join(PROFILES)}") from None


def commission_fraction(commission, prof: RuleProfile) -> Fraction:
    """The commission rate as an exact fraction: ``commission`` (a Decimal, text, int or
    float) or, when None, the profile's.

    Raises:
        InputError: not a number, or not in [0, 1).
    """
    c = prof.commission if commission is None else commission
    try:
        if isinstance(c, float):
            f = Fraction(str(c))
        else:
            f = Fraction(Decimal(c)) if isinstance(c, (Decimal, str)) else Fraction(c)
    except (ValueError, TypeError, ArithmeticError):
        raise InputError(f"commission {commission!r} is not a number") from None
    if not (0 <= f < 1):
        raise InputError(f"commission {commission!r} is not a fraction in [0, 1)")
    return f

"""Settling a round: each seat against the banker, money in exact :class:`~decimal.Decimal`.

Sources: docs/rules.md section 4; NJ 13:69F-10.2 (c), (h) and PA 621a.3 (d), (i)
(a copy goes to the banker); PA 621a.3 (g) (zero-zero, through the rule profile);
PA 621a.8 (the dealer sets by the house way; commission on a winning wager, on the bank's
net win when a player banks).

A seat against the banker [docs/rules.md 4]:

* **win** when the seat's high hand beats the banker's high hand *and* its low hand beats the
  banker's low hand, each strictly (higher key; an equal key is a copy won by the banker);
* **lose** when both hands lose or are copies;
* **push** otherwise.

A win pays 1 to 1 less a commission (``rules.commission`` or an override) rounded per
``rules.commission_rounding``; a loss costs the bet; a push pays nothing. No floats are used
anywhere: bets, commissions and results are ``Decimal`` and the JSON form writes them as strings.

Who banks
---------
``banker="dealer"`` (the usual game): the house banks with the dealer's hand. Every seat plays
against it. The bank's net is minus the seats' gross results; the house keeps the bank's net plus
every commission.

``banker="3"`` (a player banks): seat 3's setting is the bank. The dealer, if its tiles are
given, plays against the bank with the house's money; its wager is ``bets["dealer"]`` if given,
else **the banking seat's own bet amount** (``bets["3"]``, default 1): the house matches the
action the banking player would otherwise have put up. The dealer pays no commission on a win
(the commission would go from the house to the house). Every other seat plays against the bank
and pays commission on its wins. The banking player receives the bank's gross result and pays
commission on it when it is positive (PA 621a.8; docs/rules.md 4).

``co_bank=True`` (only with a banking player): the house covers half of the bank's exposure.
The bank's gross result is split half and half between the banking player and the house; the
player pays commission on his half when positive. The dealer does not wager against a bank the
house co-owns (its tiles, if given, are reported as ``not_settled``).

Mis-set hands
-------------
A seat whose low hand ranks above its high hand follows ``rules.mis_set``: ``"house_way"``
re-sets the four tiles by the house way (``reset_by_house_way`` flag), ``"forfeit"`` settles the
seat as a loss. A mis-set *banker* is always re-set by the house way: forfeiting the bank would
settle every wager of the table at once on an error no seat made, and the house way is the
regulated procedure for setting a bank hand (PA 621a.8 (d)). The dealer's hand is likewise
always re-set when mis-set, banking or not (the dealer has no choice but the house way). Every
mis-set is recorded as an alert; a dealer setting that is legal but not the house way's is
settled as placed and recorded as a ``house_way_deviation`` alert.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import ROUND_DOWN, ROUND_HALF_UP, ROUND_UP, Decimal
from typing import Mapping, Sequence

from .errors import InputError
from .reasons import SeatReason
from .rules import PA, RuleProfile, get_profile
from .setting import Setting, make_setting
from .tiles import Tile, parse_tile, parse_tiles

__all__ = [
    "SeatResult",
    "RoundResult",
    "Alert",
    "settle_seat",
    "settle_round",
    "compare_settings",
    "round_commission",
    "parse_money",
    "parse_commission",
    "parse_position",
    "check_faces",
    "POSITIONS",
    "SEAT_IDS",
]

SEAT_IDS: tuple[str, ...] = tuple(str(i) for i in range(1, 8))
POSITIONS: tuple[str, ...] = ("dealer", *SEAT_IDS)
"""Every position of a table: the dealer and seats "1".."7"."""

RESULTS = ("win", "lose", "push")
ONE = Decimal(1)
CENT = Decimal("0.01")


# --------------------------------------------------------------------------- value types


@dataclass(frozen=True)
class Alert:
    """Something the referee noticed in a round (see docs/round-event.md).

    Attributes:
        kind: ``"mis_set"``, ``"house_way_deviation"``, ...
        position: ``"dealer"`` or a seat id.
        detail: one readable line.
    """

    kind: str
    position: str
    detail: str

    def to_dict(self) -> dict:
        """JSON-ready ``{"kind", "position", "detail"}``."""
        return {"kind": self.kind, "position": self.position, "detail": self.detail}


@dataclass(frozen=True)
class SeatResult:
    """The settlement of one position against the bank.

    Attributes:
        position: ``"dealer"`` or ``"1".."7"``.
        setting: the setting that was settled (after a house-way re-set, if any).
        result: ``"win"``, ``"lose"``, ``"push"`` or ``"not_settled"`` (dealer under co-bank).
        bet: the wager, Decimal > 0.
        gross: +bet, -bet or 0 (Decimal), before commission.
        commission: commission paid on a win (Decimal >= 0; 0 otherwise).
        net: ``gross - commission`` from the position's viewpoint (Decimal).
        mis_set: the hand as given had its low hand above its high hand.
        reset_by_house_way: the hand was re-set by the house way (mis-set, or given unset).
        reason: why the seat was settled as it was, when not a plain comparison (or None).
        given: the setting as placed at the table (None when the tiles were given unset).
        reason_code: the :class:`scoring.reasons.SeatReason` ``reason`` was made from (or
            None); after a reason of its own, "house wager: no commission" keeps that code.
    """

    position: str
    setting: Setting
    result: str
    bet: Decimal
    gross: Decimal
    commission: Decimal
    net: Decimal
    mis_set: bool = False
    reset_by_house_way: bool = False
    reason: str | None = None
    given: Setting | None = None
    reason_code: SeatReason | None = None

    def to_dict(self, rules: RuleProfile | str = PA) -> dict:
        """JSON-ready dict; money values are exact decimal strings."""
        c = self.setting.canonical()
        return {
            "position": self.position,
            "high": [t.face for t in c.high],
            "low": [t.face for t in c.low],
            "high_hand": self.setting.high_value(rules).name,
            "low_hand": self.setting.low_value(rules).name,
            "result": self.result,
            "bet": str(self.bet),
            "gross": str(self.gross),
            "commission": str(self.commission),
            "net": str(self.net),
            "mis_set": self.mis_set,
            "reset_by_house_way": self.reset_by_house_way,
            "reason": self.reason,
            "reason_code": None if self.reason_code is None else str(self.reason_code),
        }


@dataclass(frozen=True)
class RoundResult:
    """A settled round.

    Attributes:
        banker_position: ``"dealer"`` or the banking seat's id.
        banker_setting: the bank's setting as settled (after a re-set, if any).
        seats: position -> :class:`SeatResult`, for every position that played against the bank
            (the dealer included when a player banks), dealer first then seats in order.
        bank_gross: the bank's result before commission: minus the sum of the seats' gross.
        bank_commission: commission the banking player paid (0 when the dealer banks).
        bank_net: the banking player's net (his half under co-bank), or the house's bank result
            when the dealer banks (``bank_gross``).
        house_net: the house's result: bank result (dealer banks), or dealer wager result plus
            co-bank half (player banks), plus every commission.
        commission_total: all commission collected in the round.
        alerts: :class:`Alert` list (mis-sets, house-way deviations of the dealer).
        banker_mis_set, banker_reset_by_house_way: flags for the bank hand.
        co_bank: whether the house co-banked.
        rules: the rule profile used; commission: the rate used; way: the house way's name.
    """

    banker_position: str
    banker_setting: Setting
    seats: dict[str, SeatResult]
    bank_gross: Decimal
    bank_commission: Decimal
    bank_net: Decimal
    house_net: Decimal
    commission_total: Decimal
    alerts: list[Alert] = field(default_factory=list)
    banker_mis_set: bool = False
    banker_reset_by_house_way: bool = False
    co_bank: bool = False
    rules: RuleProfile = PA
    commission: Decimal = Decimal("0.05")
    way: str = "reference"
    banker_bet: Decimal | None = None

    def to_dict(self) -> dict:
        """JSON-ready dict: ``{"rules", "commission", "way", "co_bank", "banker": {...},
        "seats": {position: {...}}, "bank_gross", "bank_commission", "bank_net", "house_net",
        "commission_total", "alerts": [...]}``; money values are exact decimal strings."""
        c = self.banker_setting.canonical()
        banker = {
            "position": self.banker_position,
            "high": [t.face for t in c.high],
            "low": [t.face for t in c.low],
            "high_hand": self.banker_setting.high_value(self.rules).name,
            "low_hand": self.banker_setting.low_value(self.rules).name,
            "mis_set": self.banker_mis_set,
            "reset_by_house_way": self.banker_reset_by_house_way,
            "gross": str(self.bank_gross),
            "commission": str(self.bank_commission),
            "net": str(self.bank_net),
        }
        if self.banker_bet is not None:
            banker["bet"] = str(self.banker_bet)
        return {
            "rules": self.rules.name,
            "commission": str(self.commission),
            "way": self.way,
            "co_bank": self.co_bank,
            "banker_position": self.banker_position,
            "banker": banker,
            "seats": {p: s.to_dict(self.rules) for p, s in self.seats.items()},
            "bank_gross": str(self.bank_gross),
            "bank_commission": str(self.bank_commission),
            "bank_net": str(self.bank_net),
            "house_net": str(self.house_net),
            "commission_total": str(self.commission_total),
            "alerts": [a.to_dict() for a in self.alerts],
        }


# --------------------------------------------------------------------------- money helpers


#: Largest amount accepted as a bet or other money value (inclusive): a bound far above any
#: table limit, so a typo or a hostile number is refused instead of overflowing arithmetic.
MAX_MONEY = Decimal(10_000_000)
#: The money grammar: ASCII digits, an optional '.', at most two decimals (cents).
_MONEY_RE = re.compile(r"[0-9]{1,12}(?:\.[0-9]{0,2})?", re.ASCII)
_MONEY_MAX_CHARS = 32


def parse_money(value, what: str = "bet") -> Decimal:
    """A positive exact amount from ``Decimal``, ``int`` or text (``"25"``, ``"2.50"``).

    The one money grammar of the project (bets from the command line, layout files and the
    API): ASCII digits with an optional ``.`` and at most two decimals, greater than 0 and at
    most :data:`MAX_MONEY`. Exponents (``1E+3``), signs, underscores (``5_000``), grouping
    commas, non-ASCII digits (``٣٥``), ``NaN``/``Infinity`` and more than two decimals are
    refused, so no amount is silently rounded and none can overflow ``Decimal`` arithmetic.
    A ``Decimal`` or ``int`` argument must satisfy the same bounds and at most two decimals.

    Raises:
        InputError: naming the value when it does not follow the grammar, is not > 0 or is
            above :data:`MAX_MONEY`, or is a float (binary floats are refused: money is exact).
    """
    if isinstance(value, bool) or isinstance(value, float):
        raise InputError(f"{what} {value!r} is not an exact decimal (write it as text, e.g. '25')")
    if isinstance(value, (Decimal, int)):
        d = Decimal(value)
        if not d.is_finite() or d <= 0 or d > MAX_MONEY:
            raise InputError(f"{what} {_short(value)} is not an amount in (0, {MAX_MONEY}]")
        if d.as_tuple().exponent < -2 and d != d.quantize(CENT):
            raise InputError(f"{what} {_short(value)} has more than two decimals")
        return d
    text = str(value).strip(" \t\r\n")  # ASCII blanks only
    if len(text) > _MONEY_MAX_CHARS or not _MONEY_RE.fullmatch(text):
        raise InputError(f"{what} {_short(value)} is not an amount (ASCII digits, optional '.' "
                         f"and at most two decimals, e.g. 25 or 2.50)")
    d = Decimal(text)
    if d <= 0:
        raise InputError(f"{what} {_short(value)} is not a positive amount")
    if d > MAX_MONEY:
        raise InputError(f"{what} {_short(value)} is above the limit {MAX_MONEY}")
    return d


#: The signed amount grammar (a payment, a net result): an optional '-', at most 12 digits,
#: an optional '.' with at most 8 decimals -- no exponent, so never more than 20 significant
#: digits: exact in Decimal's default 28-digit context, never rounded, never an overflow.
_AMOUNT_RE = re.compile(r"-?[0-9]{1,12}(?:\.[0-9]{0,8})?", re.ASCII)


def parse_amount(value, what: str = "amount") -> Decimal:
    """A signed exact amount (a payout, a net result) from ``Decimal``, ``int`` or text.

    The grammar of :func:`parse_money` with an optional ``-`` and up to 8 decimals
    (:data:`_AMOUNT_RE`), at most :data:`MAX_MONEY` either way; no exponent (``1E+999999999``),
    ``NaN``/``Infinity``, grouping or non-ASCII digits, so nothing is rounded silently.

    Raises:
        InputError: naming the value when it does not follow the grammar or is out of bounds
            (or is a float).
    """
    if isinstance(value, bool) or isinstance(value, float):
        raise InputError(f"{what} {value!r} is not an exact decimal (write it as text, e.g. '25')")
    if isinstance(value, (Decimal, int)):
        value = str(value) if not isinstance(value, Decimal) or value.is_finite() else value
    text = str(value).strip(" \t\r\n")
    if len(text) > _MONEY_MAX_CHARS or not _AMOUNT_RE.fullmatch(text):
        raise InputError(f"{what} {_short(value)} is not an amount (ASCII digits, optional '-', "
                         f"optional '.' and at most 8 decimals, e.g. -25 or 0.95)")
    d = Decimal(text)
    if abs(d) > MAX_MONEY:
        raise InputError(f"{what} {_short(value)} is beyond the limit {MAX_MONEY}")
    return d


def _short(value, limit: int = 40) -> str:
    """``repr`` of a value, cut to ``limit`` characters (a bad value may be huge)."""
    r = repr(value) if not isinstance(value, Decimal) else repr(str(value))
    return r if len(r) <= limit else r[: limit - 5] + "...'" + f" ({len(str(value))} chars)"


#: The commission grammar: ASCII digits, an optional '.', at most 8 decimals, optional '%'.
_RATE_RE = re.compile(r"(?:[0-9]{1,3}(?:\.[0-9]{0,8})?|\.[0-9]{1,8})%?", re.ASCII)


def parse_commission(value) -> Decimal:
    """A commission rate: exact decimal in [0, 1) (``"0.05"``, ``"0.0476"``; ``"5%"`` is read
    as 0.05).

    Text follows a strict grammar like :func:`parse_money`: ASCII digits, an optional ``.``
    with at most 8 decimals, an optional trailing ``%`` (no exponent, sign, underscore or
    non-ASCII digit).

    Raises:
        InputError: naming the value otherwise.
    """
    if isinstance(value, bool) or isinstance(value, float):
        raise InputError(f"commission {value!r} is not an exact decimal (write it as text)")
    if isinstance(value, Decimal):
        d = value
    else:
        text = str(value).strip(" \t\r\n")  # ASCII blanks only
        if not _RATE_RE.fullmatch(text):
            raise InputError(f"commission {_short(value)} is not a decimal rate (ASCII digits, "
                             f"optional '.', e.g. 0.05 or 5%)")
        d = Decimal(text[:-1]) / 100 if text.endswith("%") else Decimal(text)
    if not d.is_finite() or not (Decimal(0) <= d < ONE):
        raise InputError(f"commission {_short(value)} is not a rate in [0, 1)")
    return d


def round_commission(amount: Decimal, mode: str = "exact", unit: Decimal = ONE) -> Decimal:
    """Round a commission per a profile's ``commission_rounding``.

    ``"exact"``: unchanged; ``"cent"``: to 0.01, half up; ``"unit_down"`` / ``"unit_up"``: to
    whole betting units (``unit``, default 1), down or up. Example: 5% of 25 is 1.25; cent 1.25,
    unit_down 1, unit_up 2.

    Raises:
        InputError: for an unknown mode.
    """
    if mode == "exact":
        return amount
    if mode == "cent":
        return amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    if mode in ("unit_down", "unit_up"):
        rounding = ROUND_DOWN if mode == "unit_down" else ROUND_UP
        return (amount / unit).quantize(ONE, rounding=rounding) * unit
    raise InputError(f"unknown commission rounding {mode!r}")


def _commission_on(win: Decimal, rate: Decimal, mode: str) -> Decimal:
    if win <= 0:
        return Decimal(0)
    c = round_commission(win * rate, mode)
    return min(c, win)  # rounding up never takes more than the win


# --------------------------------------------------------------------------- comparison


def compare_settings(player: Setting, banker: Setting, rules: RuleProfile | str = PA) -> str:
    """``"win"``, ``"lose"`` or ``"push"`` for ``player`` against ``banker`` [docs/rules.md 4].

    High hand is compared with high hand, low with low; a hand wins only with a strictly higher
    key, an equal key is a copy won by the banker [NJ (c), (h); PA (d), (i); zero-zero per
    PA (g) through the profile].
    """
    prof = get_profile(rules)
    ph, pl = player.keys(prof)
    bh, bl = banker.keys(prof)
    hi_win, lo_win = ph > bh, pl > bl
    if hi_win and lo_win:
        return "win"
    if not hi_win and not lo_win:
        return "lose"
    return "push"


def _money(result: str, bet: Decimal, rate: Decimal, mode: str, pays_commission: bool = True):
    if result == "win":
        gross = bet
        comm = _commission_on(bet, rate, mode) if pays_commission else Decimal(0)
    elif result == "lose":
        gross, comm = -bet, Decimal(0)
    else:
        gross, comm = Decimal(0), Decimal(0)
    return gross, comm, gross - comm


def settle_seat(
    player: Setting,
    banker: Setting,
    bet: Decimal | int | str = ONE,
    rules: RuleProfile | str = PA,
    commission: Decimal | str | None = None,
    position: str = "1",
    way: str = "reference",
) -> SeatResult:
    """Settle one seat's ``player`` setting against the ``banker`` setting.

    Example: a win of a 1 bet at 5% nets 0.95; a win of 25 nets 23.75.

    Args:
        player, banker: the two settings (the banker's as the bank plays it).
        bet: the wager, exact (Decimal, int or text), > 0.
        rules: profile (zero-zero, commission rate and rounding, mis-set policy).
        commission: a rate overriding ``rules.commission``.
        position: label stored in the result.

    A mis-set player hand follows ``rules.mis_set`` (see module docstring): ``"house_way"``
    re-sets it with :func:`scoring.setting.house_way_setting` and the house way ``way``,
    ``"forfeit"`` settles it as a loss. The banker setting is used as given.

    Raises:
        InputError: for a bad bet or commission.
    """
    prof = get_profile(rules)
    bet_d = parse_money(bet)
    rate = prof.commission if commission is None else parse_commission(commission)
    return _settle_one(position, player, banker, bet_d, prof, rate, way, True, None)


def _settle_one(position, player, banker, bet, prof, rate, way, pays_commission, given_unset,
                always_reset=False):
    mis_set = player.is_mis_set(prof)
    reset = given_unset is not None
    code = SeatReason.SET_BY_HOUSE_WAY if reset else None
    reason = code.say() if code else None
    given = None if reset else player
    setting = player
    if mis_set:
        if prof.mis_set == "forfeit" and not always_reset:
            gross, comm, net = _money("lose", bet, rate, prof.commission_rounding)
            return SeatResult(position, player, "lose", bet, gross, comm, net, True, False,
                              SeatReason.MIS_SET_FORFEITED.say(), given,
                              SeatReason.MIS_SET_FORFEITED)
        from .setting import house_way_setting

        setting = house_way_setting(list(player.tiles), way, prof)
        reset = True
        code = SeatReason.MIS_SET_RESET
        reason = code.say(way)
    result = compare_settings(setting, banker, prof)
    gross, comm, net = _money(result, bet, rate, prof.commission_rounding, pays_commission)
    if not pays_commission and result == "win":
        # (after a reason of its own, that one stays the code)
        reason = (reason + "; " if reason else "") + SeatReason.HOUSE_WAGER.say()
        code = code or SeatReason.HOUSE_WAGER
    return SeatResult(position, setting, result, bet, gross, comm, net, mis_set, reset, reason,
                      given, code)


# --------------------------------------------------------------------------- parsing / checks


def parse_position(value, where: str = "position") -> Setting | list[Tile]:
    """A position's tiles: a :class:`Setting` as is, ``"a b / c d"`` as a setting (high / low),
    four tiles (text or a sequence) as unset tiles.

    Raises:
        InputError: naming ``where`` and the value when it is not two hands of two tiles or
            four tiles (e.g. five tiles), or a text is not a tile.
    """
    if isinstance(value, Setting):
        hi, lo = list(value.high), list(value.low)
        if len(hi) != 2 or len(lo) != 2 or not all(isinstance(t, Tile) for t in hi + lo):
            raise InputError(f"{where}: a setting is two hands of two tiles, got {value!r}")
        return value
    if isinstance(value, str):
        if "/" in value and not re.fullmatch(r"\s*[1-6]\s*/\s*[1-6]\s*", value):
            parts = value.split("/")
            if len(parts) != 2:
                raise InputError(f"{where}: {value!r} is not 'high tiles / low tiles'")
            hi, lo = parse_tiles(parts[0]), parse_tiles(parts[1])
            if len(hi) != 2 or len(lo) != 2:
                raise InputError(
                    f"{where}: a setting is two hands of two tiles, got {len(hi)} / {len(lo)} "
                    f"in {value!r}")
            return make_setting(hi, lo)
        tiles = parse_tiles(value)
    else:
        try:
            tiles = [t if isinstance(t, Tile) else parse_tile(t) for t in value]
        except TypeError:
            raise InputError(f"{where}: not tiles: {value!r}") from None
    if len(tiles) != 4:
        raise InputError(
            f"{where}: a position holds four tiles, got {len(tiles)}: "
            f"{' '.join(t.face for t in tiles)!r}")
    return tiles


def check_faces(tiles_by_position: Mapping[str, Sequence[Tile]]) -> None:
    """Check that no face is used more often than the 32-tile set holds (twice for the civil
    faces, once for the military ones) [docs/rules.md 1].

    Raises:
        InputError: naming the face, its count and the positions holding it (three 6-6 ->
            ``"6-6"``).
    """
    count: Counter = Counter()
    where: dict[str, list[str]] = {}
    for pos, tiles in tiles_by_position.items():
        for t in tiles:
            count[t] += 1
            if pos not in where.setdefault(t.face, []):
                where[t.face].append(pos)
    for t, n in sorted(count.items(), key=lambda kv: kv[0].index):
        if n > t.copies:
            raise InputError(
                f"tile {t.face} appears {n} times (at {', '.join(where[t.face])}) but a set holds "
                f"{t.copies}")


def _position_id(key) -> str:
    p = str(key).strip().lower()
    if p not in POSITIONS:
        raise InputError(f"position {key!r} is not 'dealer' or a seat id 1..7")
    return p


# --------------------------------------------------------------------------- a round


def settle_round(
    positions: Mapping[str, Setting | Sequence[Tile | str] | str],
    bets: Mapping[str, Decimal | int | str] | None = None,
    banker: str = "dealer",
    rules: RuleProfile | str = PA,
    way: str = "reference",
    co_bank: bool = False,
    commission: Decimal | str | None = None,
    stand_in: Mapping[str, str | Sequence[str]] | None = None,
) -> RoundResult:
    """Settle a whole round (see the module docstring for who banks, co-bank and mis-sets).

    Args:
        positions: ``"dealer"`` and/or ``"1".."7"`` -> a :class:`Setting`, four unset tiles
            (set by the house way ``way``), or text (``"6-6 4-5 / 1-3 2-2"`` or four tiles).
        bets: position -> wager (exact; default 1 each). ``bets["dealer"]`` is the dealer's
            wager when a player banks (default: the banking seat's own bet).
        banker: ``"dealer"`` or the id of the banking seat.
        rules: profile name or :class:`RuleProfile`.
        way: house way name for unset tiles and re-sets (:func:`scoring.setting.get_house_way`).
        co_bank: the house covers half of a banking player's exposure.
        commission: rate overriding ``rules.commission``.
        stand_in: position -> the face (or faces) standing in for that position's tiles that
            were not seen (a caller settling a seat whose result is the same for every face
            those tiles could be, e.g. ``vision.table.open_tile``). A stand-in is not a tile of the
            set: it is left out of the set check (:func:`check_faces`), so two stand-ins, or a
            stand-in and a tile seen, never make a face "appear too often" [docs/rules.md 1, 5].

    Everything is validated before anything is settled.

    Raises:
        InputError: naming the value, for a position that is not ``dealer``/1..7, a position of
            other than four tiles, a face used more often than a set holds, a bet that is not a
            positive decimal, a bet for an absent position, an absent banker position, an
            unknown house way, co-bank without a banking seat.
    """
    prof = get_profile(rules)
    rate = prof.commission if commission is None else parse_commission(commission)
    from .setting import get_house_way

    get_house_way(way)  # InputError for an unknown way, before anything else

    # 1. validate every position, its tiles and the faces across the round
    given: dict[str, Setting | list[Tile]] = {}
    for key, value in positions.items():
        pos = _position_id(key)
        if pos in given:
            raise InputError(f"position {key!r} given twice")
        given[pos] = parse_position(value, where=f"position {pos}")
    counted = {p: (list(v.tiles) if isinstance(v, Setting) else list(v)) for p, v in given.items()}
    for key, faces in (stand_in or {}).items():
        pos = _position_id(key)
        tiles = counted.get(pos, [])
        for face in ([faces] if isinstance(faces, str) else list(faces)):
            hit = next((i for i, t in enumerate(tiles) if t.face == str(face)), None)
            if hit is None:
                raise InputError(f"stand-in face {face!r} is not among position {pos}'s tiles")
            del tiles[hit]  # a stand-in is no tile of the set
    check_faces(counted)

    bank = _position_id(banker)
    if bank not in given:
        raise InputError(f"banker position {banker!r} has no tiles in this round")
    if co_bank and bank == "dealer":
        raise InputError("co-bank needs a banking seat (banker 'dealer' given)")

    bet_of: dict[str, Decimal] = {}
    for key, value in (bets or {}).items():
        pos = _position_id(key)
        if pos not in given:
            raise InputError(f"bet {value!r} for position {pos!r}, which has no tiles")
        bet_of[pos] = parse_money(value, what=f"bet for position {pos}")
    if bank == "dealer" and "dealer" in bet_of:
        raise InputError(f"bet {str(bet_of['dealer'])!r} for the dealer, which banks (the dealer "
                         "wagers only against a banking player)")
    if len(given) < 2:
        raise InputError("a round needs the banker and at least one other position")

    # 2. set unset hands by the house way; the bank first
    from .setting import house_way_setting

    alerts: list[Alert] = []
    settings: dict[str, Setting] = {}
    unset: dict[str, list[Tile]] = {}
    for pos, v in given.items():
        if isinstance(v, Setting):
            settings[pos] = v
        else:
            unset[pos] = v
            settings[pos] = house_way_setting(v, way, prof)

    bank_setting = settings[bank]
    bank_mis_set = bank_setting.is_mis_set(prof)
    bank_reset = bank in unset
    if bank_mis_set:
        bank_setting = house_way_setting(list(bank_setting.tiles), way, prof)
        bank_reset = True
        alerts.append(Alert("mis_set", bank,
                            f"bank hand {settings[bank]} is mis-set; re-set by the house way "
                            f"{way!r} to {bank_setting}"))
    if "dealer" in settings and "dealer" not in unset and not settings["dealer"].is_mis_set(prof):
        from .setting import is_house_way

        d = settings["dealer"]
        if not is_house_way(d, way, prof):
            alerts.append(Alert("house_way_deviation", "dealer",
                                f"dealer set {d}; the house way {way!r} sets "
                                f"{house_way_setting(list(d.tiles), way, prof)}"))

    # 3. settle every other position against the bank
    default_dealer_bet = bet_of.get(bank, ONE)
    seats: dict[str, SeatResult] = {}
    for pos in POSITIONS:
        if pos not in given or pos == bank:
            continue
        if pos == "dealer":
            bet = bet_of.get("dealer", default_dealer_bet)
            if co_bank:
                s = settings["dealer"]
                seats[pos] = SeatResult(pos, s, "not_settled", bet, Decimal(0), Decimal(0),
                                        Decimal(0), s.is_mis_set(prof), pos in unset,
                                        SeatReason.CO_BANK.say(), None, SeatReason.CO_BANK)
                continue
            res = _settle_one(pos, settings[pos], bank_setting, bet, prof, rate, way, False,
                              unset.get(pos), always_reset=True)
        else:
            res = _settle_one(pos, settings[pos], bank_setting, bet_of.get(pos, ONE), prof, rate,
                              way, True, unset.get(pos))
        if res.mis_set:
            alerts.append(Alert("mis_set", pos, f"{res.given} is mis-set: {res.reason}"))
        seats[pos] = res

    # 4. the bank's and the house's money
    bank_gross = -sum((s.gross for s in seats.values()), Decimal(0))
    seat_commissions = sum((s.commission for s in seats.values()), Decimal(0))
    if bank == "dealer":
        bank_comm = Decimal(0)
        bank_net = bank_gross
        house = bank_gross + seat_commissions
    else:
        dealer_gross = seats["dealer"].gross if "dealer" in seats else Decimal(0)
        if co_bank:
            player_share = bank_gross / 2
            house_share = bank_gross - player_share
        else:
            player_share, house_share = bank_gross, Decimal(0)
        bank_comm = _commission_on(player_share, rate, prof.commission_rounding)
        bank_net = player_share - bank_comm
        house = dealer_gross + house_share + seat_commissions + bank_comm
    return RoundResult(
        banker_position=bank,
        banker_setting=bank_setting,
        seats=seats,
        bank_gross=bank_gross,
        bank_commission=bank_comm,
        bank_net=bank_net,
        house_net=house,
        commission_total=seat_commissions + bank_comm,
        alerts=alerts,
        banker_mis_set=bank_mis_set,
        banker_reset_by_house_way=bank_reset,
        co_bank=co_bank,
        rules=prof,
        commission=rate,
        way=way,
        banker_bet=None if bank == "dealer" else bet_of.get(bank, ONE),
    )

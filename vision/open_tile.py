"""A position with one tile not read (covered by a hand, or read two ways) is settled only
where every face that tile could still be gives the seat the same result.

docs/rules.md section 5: a position is settled only when its four tiles are read -- with one
exception that guesses nothing. A set holds each face a fixed number of times (section 1), so
the faces an unread tile can be are the faces not already used up by the tiles identified on
the table. When the banker deals (``banker == "dealer"``, no co-bank), a seat's result depends
only on its own tiles and the banker's (section 3). If the seat's result, net and commission
are the same for every face the one unread tile (the seat's or the banker's) could be, the
seat is settled with that result and the unread tile stays unknown in the event (no face is
claimed for it, its hands are not reported). Otherwise the seat is not settled, with the
reason.

Only one unread tile per position, four tiles lying as two hands (the pairing is by where the
tiles lie, :func:`vision.table.pair_hands`), and nothing else wrong with the position; a
player-banked round, a co-banked round or a table where a face is read more often than a set
holds settles nothing this way.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from scoring.setting import Setting, make_setting
from scoring.settle import settle_round
from scoring.tiles import FACES

__all__ = ["candidate_faces", "candidate_settings", "settle_open"]


def candidate_faces(identified: Counter) -> list[str]:
    """Faces (``"low-high"``, scoring.tiles order) an unread tile can still be: those the
    identified tiles ``identified`` (face -> count on the table) have not used up (a set holds
    each face ``Tile.copies`` times, docs/rules.md section 1)."""
    return [t.face for t in FACES if identified.get(t.face, 0) < t.copies]


def candidate_settings(hands: tuple[Sequence[Any], Sequence[Any]], faces: Sequence[str],
                       rules: str = "pa") -> list[Setting]:
    """One :class:`scoring.setting.Setting` per candidate face of the position's one unread
    tile.

    Args:
        hands: the two hands as laid (two reads each, objects with ``.face``; exactly one of
            the four has ``face is None``).
        faces: the candidate faces (:func:`candidate_faces`).
        rules: rule profile (which hand is high).

    Raises:
        ValueError: not exactly one unread tile.
    """
    flat = [r.face for h in hands for r in h]
    if len(flat) != 4 or sum(f is None for f in flat) != 1:
        raise ValueError(f"a position with one unread tile of four expected, got {flat}")
    out = []
    for c in faces:
        f = [c if x is None else x for x in flat]
        s = make_setting(f[:2], f[2:])
        out.append(make_setting(f[2:], f[:2]) if s.is_mis_set(rules) else s)
    return out


def settle_open(positions: Mapping[str, Any], final: Sequence[str], opened: Sequence[str],
                identified: Counter, *, banker: str = "dealer", rules: Any = "pa",
                way: str = "reference", commission: Any = None,
                bets: Mapping[str, Any] | None = None
                ) -> tuple[dict[str, Setting], dict[str, str], dict[str, str]]:
    """Which seats settle whatever the open positions' unread tiles are.

    Args:
        positions: position -> state with ``setting`` (None for an open position) and
            ``open_hands`` (the two hands as laid, for an open position).
        final: positions settled the ordinary way (every tile read, stable).
        opened: stable positions with exactly one unread tile (``open_hands`` set).
        identified: face -> count of the identified tiles on the whole table.
        banker: must be ``"dealer"`` (anything else settles nothing this way).
        rules, way, commission: as :func:`scoring.settle.settle_round`.
        bets: position -> wager (default 1).

    Returns:
        ``(stand_in, notes, refused)``: for each open position that settles (the banker's
        when at least one seat settles), a stand-in setting (the first candidate: every
        candidate gives its seats the same result) to settle the round with; ``notes``: the
        same positions -> one line saying why each settled; ``refused``: final player
        position -> reason, for seats that were ready but whose result the banker's unread
        tile decides.
    """
    stand_in: dict[str, Setting] = {}
    notes: dict[str, str] = {}
    refused: dict[str, str] = {}
    if banker != "dealer" or not opened:
        return stand_in, notes, refused
    faces = candidate_faces(identified)
    if not faces:
        return stand_in, notes, refused
    options: dict[str, list[Setting]] = {}
    for p in set(final) | set(opened):
        st = positions[p]
        options[p] = ([st.setting] if p in final
                      else candidate_settings(st.open_hands, faces, rules))
    if banker not in options:
        return stand_in, notes, refused
    bets = dict(bets or {})
    players = sorted(p for p in options if p != banker)
    settled_any = False
    for p in players:
        if p not in opened and banker not in opened:
            continue  # an ordinary seat against an ordinary banker
        seen: set[tuple] = set()
        for bs in options[banker]:
            for ps in options[p]:
                r = settle_round({banker: bs, p: ps}, bets={p: bets.get(p, 1)}, banker=banker,
                                 rules=rules, way=way, commission=commission).seats[p]
                seen.add((r.result, r.net, r.commission, r.mis_set))
                if len(seen) > 1:
                    break
            if len(seen) > 1:
                break
        which = " and ".join(x for x, o in (("the banker's", banker in opened),
                                           (f"seat {p}'s", p in opened)) if o)
        if len(seen) == 1:
            if p in opened:
                stand_in[p] = options[p][0]
                notes[p] = (f"settled with {which} unread tile: every face it could be "
                            f"({len(faces)} left in the set) gives {next(iter(seen))[0]}")
            settled_any = True
        elif p in final:
            refused[p] = f"{which} unread tile decides this seat"
    if banker in opened and settled_any:
        stand_in[banker] = options[banker][0]
        notes[banker] = (f"banker settled with one unread tile: the seats settled are the "
                         f"same for every face it could be ({len(faces)} left in the set)")
    return stand_in, notes, refused

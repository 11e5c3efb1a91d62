"""A table's layout: where its positions lie in the picture and its money settings
(docs/layout.md). :class:`TableConfig` holds the settings (validated once, also for a table
run without a layout file); :class:`Layout` adds the positions' polygons."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from scoring.errors import InputError
from scoring.rules import get_profile
from scoring.setting import get_house_way
from scoring.settle import POSITIONS, parse_commission, parse_money

from vision.validated import StrictBool, StrictInt, at_least_one, check, config_model

__all__ = ["TableConfig", "Layout", "load_layout", "check_polygons", "MAX_COORD", "MIN_AREA",
           "MIN_INSIDE"]


@config_model
class TableConfig:
    """The table's settlement settings (the layout file's, overridden by options).

    Attributes:
        table_id: the table's name in events.
        rules: rule profile (``"pa"``, ``"nj"``; docs/rules.md).
        commission: rate as exact decimal text, or None for the profile's.
        house_way: house way name (docs/house-way.md).
        banker: the banking position (``"dealer"`` or ``"1".."7"``).
        bets: position -> wager, exact decimal text (default 1 each).
        co_bank: the house co-banks with a banking player.
        n_stable: frames a position must stay identical to be final (None: 10 for video and
            live sources, 1 for still images, each its own table).
    """

    table_id: Any = "table-1"
    rules: Any = "pa"
    commission: Any = None
    house_way: Any = "reference"
    banker: Any = "dealer"
    bets: Mapping[str, Any] = field(default_factory=dict)
    co_bank: StrictBool = False
    n_stable: StrictInt | None = None

    def __post_init__(self) -> None:
        banker = str(self.banker).strip().lower()
        check(banker in POSITIONS, f"banker {self.banker!r} is not 'dealer' or a seat id 1..7")
        object.__setattr__(self, "banker", banker)
        get_profile(self.rules)
        get_house_way(self.house_way)
        if self.commission is not None:
            parse_commission(self.commission)
        for pos, bet in self.bets.items():
            parse_money(str(bet), what=f"bet for position {pos}")
        object.__setattr__(self, "bets", {str(p): str(v) for p, v in self.bets.items()})
        if self.n_stable is not None:
            at_least_one("stable frame count", self.n_stable)



@dataclass
class Layout:
    """A table's geometry and money settings (from a layout YAML).

    Attributes:
        positions: position id (``"dealer"``, ``"1".."7"``) -> float64 (k, 2) polygon in image
            pixels (k >= 3).
        table: the money settings, one :class:`TableConfig` (the names below read it).
        table_id: the table's name in events.
        rules: rule profile name (``"pa"`` default, ``"nj"``).
        commission: commission rate as exact decimal text, or None for the profile's.
        house_way: house way name (``"reference"`` default).
        banker: the banking position (``"dealer"`` default, or a seat id).
        bets: position -> wager as exact decimal text (default 1 each).
        co_bank: the house co-banks with a banking player.
        path: where the layout came from (for messages).

    YAML form (``rules``, ``commission``, ``table_id``, ``house_way``, ``banker``, ``bets``,
    ``co_bank`` optional)::

        table_id: table-1
        rules: pa
        commission: "0.05"
        positions:
          dealer: [[860, 40], [1060, 40], [1060, 240], [860, 240]]
          "1": [[1500, 700], ...]
    """

    positions: dict[str, np.ndarray]
    table: TableConfig = field(default_factory=TableConfig)
    path: str = "<layout>"

    # the table's settings are one TableConfig (validated there, once), read through these
    table_id = property(lambda self: self.table.table_id, doc="the table's name in events")
    rules = property(lambda self: self.table.rules, doc="rule profile name")
    commission = property(lambda self: self.table.commission,
                          doc="commission rate as exact decimal text, or None")
    house_way = property(lambda self: self.table.house_way, doc="house way name")
    banker = property(lambda self: self.table.banker, doc="the banking position")
    bets = property(lambda self: dict(self.table.bets), doc="position -> wager, exact text")
    co_bank = property(lambda self: self.table.co_bank, doc="the house co-banks")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "layout") -> "Layout":
        """Validate and build a layout from its dict form (see class docstring).

        Raises:
            InputError: naming ``where`` and the offending key or value.
        """
        if not isinstance(d, Mapping):
            raise InputError(f"{where}: expected a mapping with 'positions', got {type(d).__name__}")
        known = {"positions", "table_id", "rules", "commission", "house_way", "banker", "bets",
                 "co_bank"}
        extra = sorted(set(map(str, d)) - known)
        if extra:
            raise InputError(f"{where}: unknown key(s) {', '.join(extra)} "
                             f"(allowed: {', '.join(sorted(known))})")
        raw = d.get("positions")
        if not isinstance(raw, Mapping) or not raw:
            raise InputError(f"{where}: 'positions' must map position ids to polygons")
        if len(raw) > MAX_POLYGONS:
            raise InputError(f"{where}: {len(raw)} polygons; a table has at most "
                             f"{MAX_POLYGONS} positions (dealer, 1..7)")
        positions: dict[str, np.ndarray] = {}
        for key, poly in raw.items():
            pos = str(key).strip().lower()
            if pos not in POSITIONS:
                raise InputError(f"{where}: position {key!r} is not 'dealer' or a seat id 1..7")
            n_pts = len(poly) if isinstance(poly, (list, tuple, np.ndarray)) else 0
            if n_pts > MAX_VERTICES:  # before anything is built from it
                raise InputError(f"{where}: polygon of position {key!r} has {n_pts} points; "
                                 f"at most {MAX_VERTICES} are accepted")
            try:
                arr = np.asarray(poly, dtype=np.float64)
            except (TypeError, ValueError):
                raise InputError(f"{where}: polygon of position {key!r} is not a list of [x, y] "
                                 f"points: {poly!r}") from None
            if arr.ndim != 2 or arr.shape[1] != 2 or len(arr) < 3 or not np.isfinite(arr).all():
                raise InputError(f"{where}: polygon of position {key!r} needs >= 3 finite [x, y] "
                                 f"points, got {poly!r}")
            if pos in positions:
                raise InputError(f"{where}: position {pos!r} is given twice")
            positions[pos] = arr
        check_polygons(positions, where)
        commission = d.get("commission")
        banker = str(d.get("banker", "dealer")).strip().lower()
        if banker not in positions:
            raise InputError(f"{where}: banker {banker!r} is not one of its positions "
                             f"({', '.join(positions)})")
        bets_raw = d.get("bets") or {}
        if not isinstance(bets_raw, Mapping):
            raise InputError(f"{where}: 'bets' must map positions to amounts, got {bets_raw!r}")
        bets: dict[str, str] = {}
        for key, value in bets_raw.items():
            pos = str(key).strip().lower()
            if pos not in positions:
                raise InputError(f"{where}: bet for {key!r}, which is not a position of the layout")
            bets[pos] = _exact_text(value)
        try:  # rules, commission, house way, amounts, co-bank: checked once, by TableConfig
            table = TableConfig(table_id=str(d.get("table_id", "table-1")),
                                rules=str(d.get("rules", "pa")),
                                commission=None if commission is None else _exact_text(commission),
                                house_way=str(d.get("house_way", "reference")), banker=banker,
                                bets=bets, co_bank=d.get("co_bank", False))
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        return cls(positions, table, where)

    def check_frame(self, width: int, height: int) -> None:
        """Check the polygons against the picture: at least :data:`MIN_INSIDE` of each
        polygon's area must lie inside the ``width`` x ``height`` px picture.

        Raises:
            InputError: naming the position (the layout was drawn for another camera or
                picture size).
        """
        from shapely.geometry import box

        frame = box(0, 0, float(width), float(height))
        for pos, arr in self.positions.items():
            shp = _shape(arr)
            inside = shp.intersection(frame).area / shp.area
            if inside < MIN_INSIDE:
                raise InputError(f"{self.path}: polygon of position {pos!r} lies "
                                 f"{'off' if inside == 0 else 'mostly off'} the {width} x "
                                 f"{height} px picture ({inside:.0%} inside; was the layout "
                                 "drawn for another camera?)")

    def to_dict(self) -> dict:
        """The YAML/dict form (polygons as lists)."""
        out: dict[str, Any] = {"table_id": self.table_id, "rules": self.rules,
                               "house_way": self.house_way, "banker": self.banker,
                               "positions": {p: v.tolist() for p, v in self.positions.items()}}
        if self.commission is not None:
            out["commission"] = self.commission
        if self.bets:
            out["bets"] = dict(self.bets)
        if self.co_bank:
            out["co_bank"] = True
        return out


#: Largest absolute polygon coordinate accepted (px): no camera picture is this large, and a
#: value like 1e308 would overflow the area and distance arithmetic.
MAX_COORD = 100_000.0
#: Most points of one position's polygon: a position is a rectangle or a few corners more; a
#: 100,000-point polygon cost 98 ms of scoring and 315 ms of drawing a frame (issue 42).
MAX_VERTICES = 256
#: Most polygons of a layout: one per position (dealer, "1".."7").
MAX_POLYGONS = len(POSITIONS)
#: A polygon with less area than this (px^2) holds no tile: zero-area (points on a line).
MIN_AREA = 1.0
#: Share of a polygon's area that must lie inside the picture (``Layout.check_frame``): a
#: position mostly off the picture cannot show its tiles.
MIN_INSIDE = 0.5


def _shape(poly: np.ndarray):
    from shapely.geometry import Polygon

    return Polygon([tuple(map(float, p)) for p in poly])


def check_polygons(positions: Mapping[str, np.ndarray], where: str = "layout") -> None:
    """Check a layout's polygons: coordinates within :data:`MAX_COORD` px, no polygon whose
    edges cross (self-intersecting) or with (near) zero area (< :data:`MIN_AREA` px^2), no two
    polygons overlapping (a tile's centre must belong to one position only). Polygons may
    touch along an edge. Geometry by shapely (``Polygon.is_valid``, ``intersection``).

    Args:
        positions: position id -> float64 (k, 2) polygon, image px.
        where: the layout's name for the message.

    Raises:
        InputError: naming the position(s) and what is wrong.
    """
    from shapely.validation import explain_validity

    shapes = {}
    for pos, arr in positions.items():
        big = np.abs(arr).max()
        if big > MAX_COORD:
            raise InputError(f"{where}: polygon of position {pos!r} has a coordinate {big:g} "
                             f"px, beyond any picture (at most {MAX_COORD:g})")
        shp = _shape(arr)
        if shp.convex_hull.area < MIN_AREA:
            raise InputError(f"{where}: polygon of position {pos!r} has zero area "
                             f"({shp.convex_hull.area:g} px^2): its points lie on a line or "
                             "coincide")
        if not shp.is_valid:
            raise InputError(f"{where}: polygon of position {pos!r} is self-intersecting "
                             f"(its edges cross: {explain_validity(shp)}); list the corners "
                             "in order around it")
        if shp.area < MIN_AREA:
            raise InputError(f"{where}: polygon of position {pos!r} has zero area "
                             f"({shp.area:g} px^2): its points lie on a line or coincide")
        shapes[pos] = shp
    names = list(shapes)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            over = shapes[a].intersection(shapes[b]).area
            if over >= MIN_AREA:
                raise InputError(f"{where}: polygons of positions {a!r} and {b!r} overlap "
                                 f"({over:.0f} px^2): a tile must belong to one position")


def _exact_text(value) -> str:
    """Money/rate from YAML as text: YAML floats keep the digits the user wrote (repr)."""
    if isinstance(value, bool):
        raise InputError(f"amount {value!r} is not a decimal")
    if isinstance(value, float):
        return repr(value)
    return str(value).strip(" \t\r\n")  # ASCII blanks only: the money grammar is ASCII


def load_layout(path: str | Path) -> Layout:
    """Read a layout YAML file.

    Raises:
        InputError: missing file, invalid YAML, or a bad value (the message names the file).
    """
    from vision.io.yamlsafe import load_yaml

    p = Path(path)
    if not p.is_file():
        raise InputError(f"layout file not found: {p}")
    data = load_yaml(p, "layout file")  # size, aliases, depth capped (docs/layout.md)
    return Layout.from_dict(data, where=f"layout {p}")

"""The typed evidence of one tile read (:class:`Evidence`): what the decoder and the reading
rules after it recorded beside the face -- a frozen record, set only on a new read, never
changed in place (docs/architecture.md, "Evidence"). :class:`vision.recognition.decode.TileRead`
carries it as ``evidence``."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

__all__ = ["Evidence", "EVIDENCE_FIELDS"]

#: The fields of :class:`Evidence` a read can record, in the order of its docstring.
EVIDENCE_FIELDS: tuple[str, ...] = (
    "colour_separation", "reason", "aspect", "aspect_face", "aspect_confidence", "disputed",
    "either_cut", "spared", "seed", "recoloured", "aspect_peers")


@dataclass(frozen=True)
class Evidence:
    """What the decoder and the rules after it recorded about one read, beside its face: a
    frozen record, set only on a new read
    (:meth:`vision.recognition.decode.TileRead.with_evidence`, ``dataclasses.replace``), never
    changed in place. Design: docs/architecture.md ("Evidence").

    Attributes:
        colour_separation: the colour check's separation, CIELAB a* units rounded to 0.1 (the
            least red of the red-called spots minus the reddest white-called one;
            :data:`vision.recognition.decode.COLOUR_SEPARATION_MIN`), or None when not
            measured.
        reason: the decoder's (or the last ``as_unknown``'s) reason text, None when the two
            reads agreed; :attr:`vision.recognition.decode.TileRead.reason` is the read's own.
        aspect: the outline's long side / short side
            (:func:`vision.recognition.decode.tile_aspect`), rounded to 0.01.
        aspect_face: the face the two reads agreed on where the outline's aspect alone left it
            unread (:data:`vision.recognition.decode.TILE_ASPECT_RANGE`), else None
            (:func:`vision.recognition.aspect.long_as_peers` may take it).
        aspect_confidence: how surely ``aspect_face`` was read: min(weakest spot, tile
            detection) rounded to 4 places, or None.
        aspect_peers: the median aspect of the picture's tiles an ``aspect_face`` was held to
            when :func:`vision.recognition.aspect.long_as_peers` took it, rounded to 0.01.
        disputed: the face an outline read before a guard made it unknown (a flush block's cut
            in doubt; never reported as its face): :mod:`vision.recognition.flush`,
            :mod:`vision.recognition.fill`, :mod:`vision.recognition.refine`; read by
            :func:`vision.table.open_tile.block_fills`. A face ``"1-5"`` or None.
        either_cut: the face an outline read where the only doubt is which way its flush
            block is cut (:mod:`vision.recognition.dealt` reads it), or None.
        spared: why a guard would have left the tile but made it unknown all the same so that
            it seeds the refit (``"a 6 along the outline flush beside it"``), or None
            (:func:`vision.recognition.refine.refine_guarded` gives such a tile back).
        seed: True on the unknown reads :func:`vision.recognition.flush.missed_beside` makes
            as seeds of a refit.
        recoloured: the picture's spot colour calibration
            (:meth:`vision.recognition.spot_colours.SpotCalibration.to_dict`) a tile was
            identified with when decoded again with recalled colours, or None.
        recorded: the names of the fields recorded, in the order they were first recorded
            (what :meth:`as_dict` gives, and in that order: the evidence keys of
            ``identify(with_reads=True)``).
    """

    colour_separation: float | None = None
    reason: str | None = None
    aspect: float | None = None
    aspect_face: str | None = None
    aspect_confidence: float | None = None
    disputed: str | None = None
    either_cut: str | None = None
    spared: str | None = None
    seed: bool = False
    recoloured: Mapping[str, Any] | None = None
    aspect_peers: float | None = None
    recorded: tuple[str, ...] = ()

    def record(self, **values: Any) -> "Evidence":
        """A new record with ``values`` (field name -> value) set and recorded; this one
        unchanged.

        Raises:
            TypeError: a name that is no evidence field (:data:`EVIDENCE_FIELDS`).
        """
        bad = sorted(set(values) - set(EVIDENCE_FIELDS))
        if bad:
            raise TypeError(f"no evidence field {', '.join(bad)}")
        names = self.recorded + tuple(k for k in values if k not in self.recorded)
        return replace(self, **values, recorded=names)

    def dropped(self, *names: str) -> "Evidence":
        """A new record without ``names`` (set back to their defaults, no longer recorded);
        this one unchanged. Names not recorded are no error."""
        defaults = {f.name: f.default for f in fields(self) if f.name in names}
        return replace(self, **defaults,
                       recorded=tuple(k for k in self.recorded if k not in names))

    def as_dict(self) -> dict[str, Any]:
        """The recorded fields as ``{name: value}``, in the order they were recorded."""
        return {k: getattr(self, k) for k in self.recorded}

"""An outline refused only for being too long read where the picture's own tiles are as long.

Why. The decoder reads no outline whose aspect (long side over short side,
:func:`vision.recognition.decode.tile_aspect`) is outside
:data:`vision.recognition.decode.TILE_ASPECT_RANGE`: an outline over a tile and a half, or
half a tile, can hold spots that look like another face. The upper bound (3.2) leaves room
for long drawings (about 2.8) and an outline a little off. A camera looking at the table at a
slant stretches or foreshortens every tile by its direction and place in the picture, so on a
table of long tiles seen so, many outlines read 3.0-3.2 and a few lie just above the bound:
faces both reads agree on, refused for a shape the picture's other tiles share.

The rule (:func:`long_as_peers`). An unknown read whose one objection is its aspect above the
range (the decoder keeps what its two reads agreed on in ``evidence.aspect_face`` and how
surely in ``evidence.aspect_confidence``) is read with that face where

* its aspect is at most :data:`PEER_FACTOR` x the median aspect of the
  :data:`vision.recognition.zoom.SIZE_NEIGHBOURS` identified tiles nearest to it -- of those
  lying its way where at least two do (:func:`vision.recognition.zoom.local_shape` along its
  long axis: the slant stretches a tile by its direction) -- (the picture holds at least
  :data:`MIN_PEERS` identified tiles), and at most :data:`ASPECT_CAP`;
* its long side is within :data:`vision.recognition.zoom.SIZE_TOLERANCE` of their median long
  side (the length of one tile there);
* its confidence is at least the reading's minimum.

:data:`PEER_FACTOR` is 1.2: the project models a detector's outline as every corner off by
N(0, :data:`vision.recognition.flush.OUTLINE_JITTER` = 0.06 of the width), which moves an
aspect by about 8 % at one standard deviation; and an outline over a tile and a third of a
tile (end to end) is 4/3 as long as its neighbours. Nothing here comes from ../shared.

Why it cannot give a wrong face on its own: the face is the decoder's, both of its reads
agreeing, with every other check it makes (spot shapes, colours, confidence); only the aspect
bound is taken from the picture's own identified tiles around the outline, so the outline has
the shape and length of one tile there. The read then meets every later guard of the still
reading (the flush checks, overlapping outlines) like any other.

Public API: :func:`long_as_peers`, :func:`as_peer`, :data:`PEER_FACTOR`, :data:`MIN_PEERS`,
:data:`ASPECT_CAP`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from vision.geometry import long_axis
from vision.recognition.decode import TILE_ASPECT_RANGE, TileRead, tile_aspect
from vision.recognition.zoom import SIZE_TOLERANCE, local_shape

__all__ = ["long_as_peers", "as_peer", "PEER_FACTOR", "MIN_PEERS", "ASPECT_CAP"]

#: An outline may be this much longer for its width than the median of the identified tiles
#: around it (module docstring).
PEER_FACTOR: float = 1.2
#: Identified tiles needed around it (fewer: the bound stays the decoder's).
MIN_PEERS: int = 3
#: Never above this aspect, whatever the picture: no pai gow tile is drawn longer than about
#: 3 to 1, and a slant steep enough to stretch it past this leaves spots too thin to trust.
ASPECT_CAP: float = 4.0


def long_as_peers(reads: Sequence[TileRead], min_confidence: float = 0.5) -> list[TileRead]:
    """Read the outlines refused only for an aspect above the decoder's bound where the
    picture's identified tiles around them are as long (module docstring).

    Args:
        reads: a still reading (image px polygons, float (4, 2)).
        min_confidence: the reading's minimum confidence for a face.

    Returns:
        ``reads`` in the same order; such an outline face up with the face its two reads
        agreed on (``evidence.aspect_peers``: the median aspect it was held to).
    """
    reads = list(reads)
    known = [r for r in reads if r.state == "face_up"]
    return [as_peer(r, known, min_confidence) for r in reads]


def as_peer(read: TileRead, known: Sequence[TileRead], min_confidence: float = 0.5) -> TileRead:
    """One read under :func:`long_as_peers`' rule (module docstring), its peers the identified
    reads ``known`` (image px): ``read`` face up with the face its two reads agreed on where
    the rule holds (``evidence.aspect_peers``: the median aspect it was held to), else
    ``read`` itself. Also used on the outlines :func:`vision.recognition.refine.refine_unknowns`
    cuts from a face region (a 3-D tile's side in the region lengthens them a little)."""
    ev = read.evidence
    face = ev.aspect_face
    if len(known) < MIN_PEERS or read.state != "unknown" or face is None:
        return read
    aspect = tile_aspect(read.polygon)
    if aspect <= TILE_ASPECT_RANGE[1] or aspect > ASPECT_CAP:
        return read
    if float(ev.aspect_confidence or 0.0) < min_confidence:
        return read
    length, peers = local_shape(read.centre, known, along=long_axis(read.polygon))
    if aspect > PEER_FACTOR * peers:
        return read
    if not length / SIZE_TOLERANCE <= read.long_side <= length * SIZE_TOLERANCE:
        return read
    return replace(read, face=face, state="face_up",
                   confidence=float(ev.aspect_confidence), reason=None, reason_code=None,
                   evidence=ev.dropped("reason").record(aspect_peers=round(peers, 2)))

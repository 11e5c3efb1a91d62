"""The still reading as one ordered list of rules (docs/architecture.md, "The still reading").

:data:`STILL_RULES` is the order in which an independent picture is read
(:meth:`vision.recognition.engine.RecognitionEngine._read_still` runs it): each :class:`Rule`
takes the reads so far and returns the next ones, ``apply(ctx, reads) -> reads``, with the
picture, the engine and the evidence the rules share in one :class:`StillContext`. In order:

========================  ==================================================  =============
name                      what it does                                        off by
========================  ==================================================  =============
``scales``                the tile model at every input size, reads fused     --
                          (:mod:`vision.recognition.scales`)
``second_look``           unknown tiles read again in magnified windows       ``zoom``
                          (:mod:`vision.recognition.zoom`)
``second_model``          the second tile model fills unread tiles and        ``second_model``
                          vetoes outlines across two (:mod:`.fill`)
``long_as_peers``         an outline refused for its aspect alone read where  --
                          its peers are as long (:mod:`.aspect`)
``refit``                 unknown outlines refitted to the face regions       ``refine``
                          (:mod:`vision.recognition.refine`)
``guards``                the flush guards (:mod:`vision.recognition.flush`,  --
                          :mod:`.notch`), with ``refine`` the tiles they
                          make unknown refitted and guarded again
``missed_beside``         a neighbour the tile model missed, refitted and     ``refine``
                          guarded (:func:`.flush.missed_beside`)
``turned``                the picture turned by 45 degrees read with this     ``turn``
                          list minus ``turned`` (:mod:`.turned`)
``dealt_blocks``          two flush tiles one set cannot deal cut across, or  --
                          that are the same faces either cut
                          (:mod:`vision.recognition.dealt`)
``own_spots``             two identified tiles that count one spot both made  --
                          unknown (:func:`.overlaps.shared_spots`)
``crop_check``            small identified tiles the crop classifier reads    no
                          otherwise made unknown (:mod:`.crosscheck`); with   classifier
                          ``refine``, those refitted, guarded and checked
                          again
========================  ==================================================  =============

A rule's switch is the :class:`vision.config.RecognitionConfig` field that turns it off (as
the engine holds it: ``zoom`` -> ``engine.zoom``, ``second_model`` -> ``engine.second_detector``,
``turn`` -> ``engine.turn``; ``refine`` also needs ``scales``). ``symmetry`` is no rule: it
switches the spots' symmetry off as seam evidence (:meth:`StillContext.seam`). A list without
a rule (:func:`without`) still reads a picture: every rule accepts any reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from vision.detections import TILE, Detections
from vision.recognition.aspect import as_peer, long_as_peers
from vision.recognition.chirality import lengthwise_by, table_hand
from vision.recognition.crosscheck import cross_check
from vision.recognition.dealt import dealt_blocks
from vision.recognition.decode import TileRead
from vision.recognition.fill import SECOND_MODEL_SIZE, disputed_outlines, fill_from_second_model
from vision.recognition.flush import (cut_either_way, flush_beside, missed_beside, notched_boxes,
                                      stubby_boxes)
from vision.recognition.notch import notch_cut, notched
from vision.recognition.overlaps import resolve_overlapping_reads, shared_spots
from vision.recognition.refine import ON_FACE, face_share, refine_guarded, refine_unknowns
from vision.recognition.scales import fuse_scale_reads
from vision.recognition.seam import block_of, seam_cut
from vision.recognition.symmetry import symmetry_cut
from vision.recognition.turned import turned_look
from vision.recognition.zoom import ZOOM_INPUT, cut_short_faces, second_look

__all__ = ["Rule", "StillContext", "STILL_RULES", "read_still", "without", "zoom_look"]


@dataclass
class StillContext:
    """What the rules of one still reading share.

    Attributes:
        engine: the :class:`vision.recognition.engine.RecognitionEngine` reading (its
            detectors through ``detect``, its decoder ``decode``, ``_unread``,
            ``_second_look``, the strategy attributes ``scales``, ``zoom``, ``turn``,
            ``symmetry``, ``second_detector``, ``config``, and ``detector_runs``, counted).
        image: uint8 (H, W, 3) BGR, the picture read.
        rules: the rules being run (the turned reading runs them minus ``turned``).
        per_scale: the reads at each input size (``scales``), overlaps resolved.
        looks: the second look's reads per window size (``second_look``).
        first: the tile detections of the first input size (None before ``scales``).
        second: the second tile model's reads (``second_model``; empty: none).
        symmetric: the cut a block's spots show, by the block's float32 bytes (a cache).
        start: the reading the flush guards' way vote starts from (set by ``refit`` or
            ``guards``, whichever runs first).
        voted: ``[way]`` once voted (:func:`vision.recognition.chirality.table_hand`).
        first_pass: the guards' first pass (every tile doubted), by the reads' ids.
        only_sizes: the input sizes to read instead of the engine's ``scales`` (None: those).
        taken: ids of the second model's reads (``second``) the reading took as its tiles
            (``second_model``): they confirm no cut (:attr:`confirming`).
    """

    engine: Any
    image: np.ndarray
    rules: tuple = ()
    per_scale: list = field(default_factory=list)
    looks: list = field(default_factory=list)
    first: Detections | None = None
    second: list = field(default_factory=list)
    symmetric: dict = field(default_factory=dict)
    start: list | None = None
    voted: list = field(default_factory=list)
    first_pass: dict = field(default_factory=dict)
    only_sizes: tuple | None = None
    taken: set = field(default_factory=set)

    def __post_init__(self) -> None:
        longer = max(self.image.shape[:2])
        #: px, the picture's longer side
        self.longer = longer
        #: the input sizes read (sizes above the longer side skipped; (None,): one pass at
        #: the model's own size)
        self.sizes = tuple(v for v in (self.engine.scales if self.only_sizes is None
                                       else self.only_sizes) if v <= longer) or (None,)
        #: ``read -> bool``: a mixed tile whose 3 runs the set's way (its outline is no box
        #: across two tiles; :func:`vision.recognition.chirality.lengthwise_by`)
        self.lengthwise = lengthwise_by(self.way)

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` px of the picture."""
        return int(self.image.shape[1]), int(self.image.shape[0])

    @property
    def refine(self) -> bool:
        """``refine`` is on (and the picture is read at input sizes)."""
        return bool(self.engine.config.refine and self.engine.scales)

    def read_outlines(self, polys: np.ndarray, conf: float | np.ndarray = 1.0
                      ) -> list[TileRead]:
        """Outlines (float32 (n, 4, 2) px) decoded as tiles with the detector confidence
        ``conf`` (one for all, or float32 (n,)), no identity cache."""
        conf = np.broadcast_to(np.asarray(conf, np.float32), (len(polys),))
        return self.engine.decode(self.image, Detections.from_polygons(
            polys, np.array(conf), np.full(len(polys), TILE, np.int64)), use_cache=False)[0]

    def seam(self, polygon: np.ndarray, beside: np.ndarray) -> bool:
        """The picture shows the seam between two flush outlines (float (4, 2) px) along
        ``polygon``'s long side: the seam line (:mod:`vision.recognition.seam`), the notches
        where the tiles' corners meet at its ends (:func:`vision.recognition.notch.notch_cut`)
        or the spots' symmetry (:func:`vision.recognition.symmetry.symmetry_cut`: both tiles
        read, each one's halves in line along it, the boxes across them not), none naming the
        other cut; unsure: False."""
        block = block_of(polygon, beside)
        line = seam_cut(self.image, block)
        if line == 1:
            return False
        spots = self.symmetric_cut(block)
        if spots == 1:
            return False
        return line == 0 or spots == 0 or notch_cut(self.image, block) == 0

    def symmetric_cut(self, block: np.ndarray) -> int | None:
        """The cut a block's spots show (:mod:`vision.recognition.symmetry`), once per block
        (two decodes; the guards ask about a block repeatedly); None with ``symmetry`` off."""
        key = np.asarray(block, np.float32).tobytes()
        if key not in self.symmetric:
            self.symmetric[key] = (symmetry_cut(block, self.read_outlines)
                                   if self.engine.symmetry else None)
        return self.symmetric[key]

    @property
    def confirming(self) -> list[TileRead]:
        """The second model's reads that may confirm a flush block's cut
        (:func:`vision.recognition.flush.cut_either_way`): all but the tiles the reading took
        from it (``second_model``), which would confirm themselves -- two models outlining a
        block alike is evidence, one model twice is not (a crosswise 1-5 | 3-5 the second
        model added over a flush 1-3 | 5-5 kept itself so under a camera's noise, session 35)."""
        return [r for r in self.second if id(r) not in self.taken]

    def doubting(self, rs: list[TileRead]) -> list[TileRead]:
        """The guards' first pass (every tile doubted, a spared one marked): the way vote and
        :func:`vision.recognition.refine.refine_guarded` read it on the same reads, so it runs
        once for them."""
        key = tuple(map(id, rs))
        if key not in self.first_pass:
            self.first_pass[key] = self.guards(list(rs))
        return self.first_pass[key]

    def way(self) -> int | None:
        """The way the table's set draws its 3s, voted by the tiles the flush guards leave
        identified without it -- never by the tiles it judges
        (:mod:`vision.recognition.chirality`); once, when a block or a guard first asks."""
        if not self.voted:
            start = self.start if self.start is not None else []
            first = self.doubting(start)
            spared = {np.asarray(r.polygon, np.float32).tobytes() for r in first
                      if r.state == "unknown" and r.evidence.spared is not None}
            self.voted.append(table_hand(
                [r for r in first if r.state == "face_up"]
                + [r for r in start if r.state == "face_up"
                   and np.asarray(r.polygon, np.float32).tobytes() in spared]))
        return self.voted[0]

    def refit(self, rs: list[TileRead], only=None) -> list[TileRead]:
        """Unknown outlines refitted to the picture's face regions; a two-tile block is split
        only where exactly one cut reads (:func:`vision.recognition.refine.refine_unknowns`)."""
        image = self.image
        # the cut outlines held to the picture's own tile aspect too, where that rule is on
        peer = None
        if any(r.name == "long_as_peers" for r in self.rules):
            floor = self.engine.config.min_confidence
            peer = lambda r, known: as_peer(r, known, floor)  # noqa: E731
        return resolve_overlapping_reads(refine_unknowns(
            rs, image, self.read_outlines, only=only,
            cut_shown=lambda rect: notch_cut(image, rect), way=self.way, as_peer=peer))

    def guards(self, rs: list[TileRead], spare=None, lift: bool = False) -> list[TileRead]:
        """The flush guards in turn: a face read from one cut of a flush square whose other
        half is unread (:func:`vision.recognition.flush.flush_beside`, unless the seam shows
        the tile's outline), two flush level tiles either cut reads
        (:func:`vision.recognition.flush.cut_either_way`), an outline stubbier than the
        picture's tiles (:func:`vision.recognition.flush.stubby_boxes`), an outline whose long
        side dips where two tiles' corners meet (:func:`vision.recognition.flush.notched_boxes`).
        ``spare``: ``read -> bool`` a doubt settled; ``lift``: the seam lifts the first ones."""
        image = self.image
        rs = flush_beside(rs, image.shape, self.read_outlines, self.seam, spare, lift)
        rs = cut_either_way(rs, self.confirming, self.seam, spare, lift)
        rs = stubby_boxes(rs, spare)
        return notched_boxes(rs, lambda polygon: notched(image, polygon), spare)

    def guarded(self, rs: list[TileRead]) -> list[TileRead]:
        """The guards taking the set's way's word and the seam's (what every rule after the
        guards runs on what it adds)."""
        return self.guards(rs, self.lengthwise, True)

    def begin_guards(self, reads: Sequence[TileRead]) -> None:
        """The way vote starts from ``reads`` unless an earlier rule set its start."""
        if self.start is None:
            self.start = list(reads)


@dataclass(frozen=True)
class Rule:
    """One step of the still reading.

    Attributes:
        name: the rule's name in :data:`STILL_RULES`.
        step: ``step(ctx, reads) -> reads`` (lists of
            :class:`vision.recognition.decode.TileRead`, image px).
        switch: ``switch(engine) -> bool``: the configuration has the rule on (None: always).
    """

    name: str
    step: Callable[[StillContext, list], list]
    switch: Callable[[Any], bool] | None = None

    def on(self, ctx: StillContext) -> bool:
        """The engine's configuration has this rule on."""
        return self.switch is None or bool(self.switch(ctx.engine))

    def apply(self, ctx: StillContext, reads: list[TileRead]) -> list[TileRead]:
        """The reads after this rule (``reads`` itself left as it was)."""
        return self.step(ctx, reads)


def _scales(ctx: StillContext, reads: list[TileRead]) -> list[TileRead]:
    # the tile model at every input size, the reads fused (one size: a single pass); the
    # reads before (none at first) are given up for the picture's
    eng = ctx.engine
    for size in ctx.sizes:
        dets = eng.detect(ctx.image, size)
        ctx.first = dets if ctx.first is None else ctx.first
        got, _ = eng.decode(ctx.image, dets, use_cache=False)
        ctx.per_scale.append(resolve_overlapping_reads(got))
    if len(ctx.per_scale) == 1:
        return resolve_overlapping_reads(ctx.per_scale[0])
    return resolve_overlapping_reads(
        cut_short_faces(fuse_scale_reads(ctx.per_scale), ctx.per_scale))


def _second_look(ctx: StillContext, reads: list[TileRead]) -> list[TileRead]:
    # the unknown tiles looked at again in magnified windows, fused with the other readings
    if not ctx.engine._unread(reads, ctx.size):
        return reads
    ctx.looks = ctx.engine._second_look(ctx.image, reads)
    if not any(ctx.looks):
        return reads
    fused = fuse_scale_reads(ctx.per_scale + ctx.looks)
    return resolve_overlapping_reads(cut_short_faces(fused, ctx.per_scale, ctx.looks))


def _second_model(ctx: StillContext, reads: list[TileRead]) -> list[TileRead]:
    # the second tile model adds tiles where none was identified; an outline it draws across
    # a tile makes that tile unknown (vision.recognition.fill)
    eng = ctx.engine
    if ctx.sizes == (None,) or SECOND_MODEL_SIZE > ctx.longer:
        return reads
    dets = eng.detect(ctx.image, SECOND_MODEL_SIZE, eng.second_detector)
    eng.detector_runs += 1
    second, _ = eng.decode(ctx.image, dets, use_cache=False)
    first_reads = [r for rs in ctx.per_scale + ctx.looks for r in rs]
    ctx.second = resolve_overlapping_reads(second)
    filled = fill_from_second_model(reads, ctx.second, first_reads)
    own = {id(r) for r in reads}
    added = [np.asarray(r.polygon) for r in filled if id(r) not in own and r.face is not None]
    ctx.taken = {id(s) for s in ctx.second
                 if any(np.array_equal(np.asarray(s.polygon), q) for q in added)}
    return disputed_outlines(filled, ctx.second, ctx.seam)


def _long_as_peers(ctx: StillContext, reads: list[TileRead]) -> list[TileRead]:
    # an outline refused only for an aspect above the decoder's bound, where the picture's
    # tiles around it are as long (a slanted view of long tiles)
    return long_as_peers(reads, ctx.engine.config.min_confidence)


def _refit(ctx: StillContext, reads: list[TileRead]) -> list[TileRead]:
    # the unknown outlines refitted; the refined tiles meet the flush guards like any other
    ctx.begin_guards(reads)
    if any(r.state == "unknown" for r in reads):
        return ctx.refit(reads)
    return reads


def _guards(ctx: StillContext, reads: list[TileRead]) -> list[TileRead]:
    # the guards; with refine, they first doubt every tile (a tile they would spare seeds
    # the refit too), a tile they make unknown is refitted (its block split where exactly one
    # cut reads), and what that gives meets the guards again
    # (vision.recognition.refine.refine_guarded)
    ctx.begin_guards(reads)
    if ctx.refine:
        return refine_guarded(reads, ctx.doubting, ctx.refit, ctx.guarded, ctx.lengthwise)
    return ctx.guarded(reads)


def _missed_beside(ctx: StillContext, reads: list[TileRead]) -> list[TileRead]:
    # a tile that lies as laid, with unread spots flush beside it where no outline is: the
    # tile model missed its neighbour; the face region there is refitted like an unknown
    # outline, and what it gives meets the guards again (vision.recognition.flush)
    ctx.begin_guards(reads)
    image = ctx.image
    seeds = missed_beside(reads, image.shape, ctx.read_outlines, ctx.lengthwise,
                          on_face=lambda poly, q: face_share(image, poly, q) >= ON_FACE)
    if not seeds:
        return reads
    own = {id(r) for r in seeds}
    got = [r for r in ctx.refit(reads + seeds, only=lambda r: id(r) in own)
           if id(r) not in own]
    if any(r.state == "face_up" and all(r is not x for x in reads) for r in got):
        return ctx.guarded(got)
    return reads


def _turned(ctx: StillContext, reads: list[TileRead]) -> list[TileRead]:
    # the picture turned by 45 degrees, read with these rules minus this one, adds the tiles
    # its reading and the decoder on this picture agree on where this reading identified
    # none; what that gives meets the guards again (vision.recognition.turned)
    eng = ctx.engine
    if not eng._unread(reads, ctx.size):
        return reads
    ctx.begin_guards(reads)
    first_reads = [r for rs in ctx.per_scale + ctx.looks for r in rs]
    rules = without(ctx.rules, "turned")

    def read_turned(pic: np.ndarray) -> list[TileRead]:
        # its input sizes, as read() counts this picture's
        eng.detector_runs += max(sum(v <= max(pic.shape[:2]) for v in eng.scales), 1)
        return read_still(eng, pic, rules)[0]

    added = turned_look(reads, ctx.image, read_turned, ctx.read_outlines,
                        lambda rs, add: fill_from_second_model(rs, add, first_reads))
    own = {id(r) for r in reads}
    if not any(r.state == "face_up" and id(r) not in own for r in added):
        return reads
    if ctx.second:
        # the second model's veto judges the added tiles; the reading's own tiles stay as
        # the reading decided them (some were read after its veto)
        added = [r if id(r) in own else v for r, v in
                 zip(added, disputed_outlines(added, ctx.second, ctx.seam))]
    return ctx.guarded(added)


def _dealt_blocks(ctx: StillContext, reads: list[TileRead]) -> list[TileRead]:
    # two flush tiles in doubt over the cut alone, where one set cannot deal the block cut
    # across or every cut gives the same faces (vision.recognition.dealt)
    if not any(r.state == "unknown" for r in reads):
        return reads
    return dealt_blocks(reads, ctx.second, ctx.read_outlines, ctx.image.shape, ctx.image)


def _own_spots(ctx: StillContext, reads: list[TileRead]) -> list[TileRead]:
    # a spot is one tile's: two identified tiles counting one spot name neither face
    # (vision.recognition.overlaps.shared_spots)
    return shared_spots(reads)


def _crop_check(ctx: StillContext, reads: list[TileRead]) -> list[TileRead]:
    # a second opinion on the faces of small tiles, from a classifier that counts no spots
    # (vision.recognition.crosscheck): only ever removes faces
    def check(rs: list[TileRead]) -> list[TileRead]:
        return cross_check(rs, ctx.image, ctx.engine.crop_classifier)

    if not ctx.refine:
        return check(reads)
    # with refine, a tile it makes unknown is refitted to the face region it lies in (an
    # outline reaching onto a flush neighbour gives a crop the classifier takes for
    # `other`), and what that gives meets the guards, own_spots and the check again
    ctx.begin_guards(reads)
    return refine_guarded(reads, check, ctx.refit,
                          lambda rs: check(shared_spots(ctx.guarded(rs))))


#: The still reading, in order (module docstring): every rule's ``apply(ctx, reads)``.
STILL_RULES: tuple[Rule, ...] = (
    Rule("scales", _scales),
    Rule("second_look", _second_look, lambda e: bool(e.zoom)),
    Rule("second_model", _second_model, lambda e: e.second_detector is not None),
    Rule("long_as_peers", _long_as_peers),
    Rule("refit", _refit, lambda e: bool(e.config.refine and e.scales)),
    Rule("guards", _guards),
    Rule("missed_beside", _missed_beside, lambda e: bool(e.config.refine and e.scales)),
    Rule("turned", _turned, lambda e: bool(e.turn)),
    Rule("dealt_blocks", _dealt_blocks),
    Rule("own_spots", _own_spots),
    Rule("crop_check", _crop_check, lambda e: getattr(e, "crop_classifier", None) is not None),
)


def zoom_look(engine: Any, image: np.ndarray, reads: Sequence[TileRead]
              ) -> list[list[TileRead]]:
    """:func:`vision.recognition.zoom.second_look` with ``engine``'s tile model (at
    :data:`vision.recognition.zoom.ZOOM_INPUT`, each window counted in ``detector_runs``),
    decoder and windows (``engine.zoom``); the empty table's unread outlines
    (``engine._unread``) get none. The engine's ``_second_look``.

    Returns:
        the reads of each window size (image px).
    """
    def detect(window: np.ndarray) -> Detections:
        engine.detector_runs += 1
        return engine.detect(window, ZOOM_INPUT)

    size = (image.shape[1], image.shape[0])
    return second_look(image, reads, engine._unread(reads, size), engine.zoom, detect,
                       lambda dets: engine.decode(image, dets, use_cache=False)[0])


def without(rules: Sequence[Rule], *names: str) -> tuple[Rule, ...]:
    """``rules`` less those named (an unknown name is no error: nothing to remove)."""
    return tuple(r for r in rules if r.name not in names)


def read_still(engine: Any, image: np.ndarray, rules: Sequence[Rule] = STILL_RULES,
               sizes: Sequence[int] | None = None) -> tuple[list[TileRead], Detections]:
    """Read an independent still picture with ``rules`` in order (the rules on in the
    engine's configuration, :meth:`Rule.on`).

    Args:
        engine: a :class:`vision.recognition.engine.RecognitionEngine` (or an object with its
            attributes, :class:`StillContext`).
        image: uint8 (H, W, 3) BGR.
        rules: the rules (default :data:`STILL_RULES`).
        sizes: the tile model's input sizes px (None: the engine's ``scales``), e.g. a live
            table's lighter reading on a busy machine (``RecognitionConfig.busy_scales``).

    Returns:
        ``(reads, detections of the first input size)``: the reads free of overlapping
        outlines where the rules resolve them; the detections empty without ``scales``.
    """
    ctx = StillContext(engine, image, tuple(rules),
                       only_sizes=None if sizes is None else tuple(sizes))
    reads: list[TileRead] = []
    for rule in ctx.rules:
        if rule.on(ctx):
            reads = rule.apply(ctx, reads)
    return reads, (ctx.first if ctx.first is not None else Detections.empty())

"""The result types hzio returns: read reports, write reports and index reports.

Each is a frozen dataclass that also reads as a mapping of its field names to their values
(``rep.blocks_read == rep["blocks_read"]``, ``dict(rep)``, ``rep.keys()``), so code written for the
dicts of earlier versions keeps working. Nested results (``WriteReport.max``, ``WriteReport.levels``)
are mappings too. ``dataclasses.asdict(rep)`` gives plain dicts, ready for ``json.dumps``.

Examples
--------
>>> import hzio
>>> rep = hzio.ReadReport(files_opened=1, blocks_read=2, blocks_missing=0, bytes_read=4136, min_bytes=4096,
...                       requests=0, bytes_received=0, method="independent", assembly="blocks")
>>> rep.blocks_read, rep["blocks_read"], sorted(rep)[:2]
(2, 2, ['assembly', 'blocks_missing'])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, Iterator


class _Result(Mapping):
    """A frozen dataclass that reads as a mapping of its field names to their values (Local).

    Subclasses are declared ``@dataclass(frozen=True, eq=False)``: equality is the mapping's, so a result
    equals a dict of the same items.
    """

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Any]]  # set on each subclass by @dataclass

    def __getitem__(self, key: str) -> Any:
        if isinstance(key, str) and key in self.__dataclass_fields__:
            return getattr(self, key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.__dataclass_fields__)

    def __len__(self) -> int:
        return len(self.__dataclass_fields__)

    def __hash__(self) -> int:
        return hash(tuple(self.values()))

    @classmethod
    def _from_core(cls, core: Any, **extra: Any):
        """The result of an ``hzio._core`` result with the same attributes, plus ``extra`` fields."""
        names = [n for n in cls.__dataclass_fields__ if n not in extra]
        return cls(**{n: getattr(core, n) for n in names}, **extra)


@dataclasses.dataclass(frozen=True, eq=False)
class ReadReport(_Result):
    """What a read touched and the least it could have (``ds.last_read_report`` after ``read`` or slicing)."""

    files_opened: int
    blocks_read: int  #: blocks whose payload was read from disk
    blocks_missing: int  #: needed blocks absent from the dataset (read as the field's default value)
    bytes_read: int  #: payload and header bytes read from disk
    min_bytes: int  #: stored payload bytes of the blocks the read needed
    #: a dataset on a web server: requests sent while the read ran (header tables, sidecars, blocks,
    #: retries) and the body bytes they brought (read-ahead included); 0 for local files
    requests: int
    bytes_received: int
    method: str  #: ``"independent"`` or ``"two-phase"``
    assembly: str  #: ``"blocks"`` (each block placed in turn) or ``"windows"``


@dataclasses.dataclass(frozen=True, eq=False)
class QueryReport(ReadReport):
    """The read report of a query (``ds.last_read_report`` after ``query``), plus the blocks it skipped."""

    blocks_skipped: int  #: candidate blocks ruled out by their statistics, unread


@dataclasses.dataclass(frozen=True, eq=False)
class ProgressiveReport(ReadReport):
    """The read report of one step of ``progressive`` (``ds.last_read_report``), plus the step's level."""

    level: int


@dataclasses.dataclass(frozen=True, eq=False)
class PhaseTimes(_Result):
    """Seconds spent in each phase of a write; for collective writes the max or the mean over ranks."""

    restructure: float
    hz: float
    aggregate: float
    compress: float
    stats: float
    write: float
    commit: float
    #: collective writes: seconds in ``write`` calls copying samples into the writer's memory since the
    #: previous flush (0 with ``copy=False``)
    stage: float
    #: collective writes: the rest of the flush's wall time, outside every phase above (waiting for other
    #: ranks in agreements, parsing received records); 0 when phases ran on several threads at once and
    #: add up to more
    other: float
    total: float  #: collective writes: ``stage`` plus the flush's wall time; one process: the phases' sum


@dataclasses.dataclass(frozen=True, eq=False)
class LevelTimes(_Result):
    """One level of a write: blocks, stored bytes, and seconds of HZ ordering and writing (max, mean)."""

    level: int
    blocks: int
    bytes: int
    hz_max: float
    hz_mean: float
    write_max: float
    write_mean: float


@dataclasses.dataclass(frozen=True, eq=False)
class PartitionGroupReport(_Result):
    """One group of ranks of a partitioned write (``partitions=``): the partitions whose files it wrote
    in its own communicator, its ranks and aggregators, and the record messages among them."""

    partition: int  #: the partition naming the group: the one its ranks' samples lie in most
    partitions: tuple[int, ...]  #: every partition whose blocks it writes
    ranks: int
    aggregators: int
    files: int  #: data files it wrote itself (the shared ones are merged)
    messages: int
    bytes: int

    @classmethod
    def _from_core(cls, core: Any, **extra: Any) -> PartitionGroupReport:
        return super()._from_core(core, partitions=tuple(core.partitions))


@dataclasses.dataclass(frozen=True, eq=False)
class MergeReport(_Result):
    """The shared files of a partitioned write: merged by one rank each from every group's records."""

    mergers: int
    files: int
    messages: int
    bytes: int
    seconds: float  #: the slowest rank's time in the merge (sending, receiving, building and writing the files)


@dataclasses.dataclass(frozen=True, eq=False)
class WriteReport(_Result):
    """What a commit did (``flush()``, ``last_write_report``); see docs/guide/parallel-io.md "The write report"."""

    ranks: int
    aggregators: int
    rounds: int
    placement: str  #: ``"localized"``, ``"uniform"`` or ``"serial"``
    bytes: int  #: sample bytes handed to ``write`` by all ranks
    file_bytes: int  #: payload bytes stored in data files
    files: int  #: data files written
    #: whether the bitmask is rank-conforming for this write's boxes (:func:`hzio.is_rank_conforming`)
    rank_conforming: bool
    messages: int  #: record messages between ranks (MPI point-to-point), all ranks
    message_bytes: int
    partitions: int  #: partitions of a partitioned write, else 1
    index_space: str  #: ``"global"``, or ``"local"`` (one dataset per partition; ``levels`` stays empty)
    groups: tuple[PartitionGroupReport, ...]  #: per group of a partitioned write
    merge: MergeReport  #: the merge of a partitioned write's shared files
    moved_messages: int  #: parts of boxes straddling a partition plane, sent to another group
    moved_bytes: int
    max: PhaseTimes
    mean: PhaseTimes
    levels: tuple[LevelTimes, ...]

    @classmethod
    def _from_core(cls, core: Any, **extra: Any) -> WriteReport:
        return super()._from_core(core, max=PhaseTimes._from_core(core.max), mean=PhaseTimes._from_core(core.mean),
                                  levels=tuple(LevelTimes._from_core(lv) for lv in core.levels),
                                  groups=tuple(PartitionGroupReport._from_core(g) for g in core.groups),
                                  merge=MergeReport._from_core(core.merge))


@dataclasses.dataclass(frozen=True, eq=False)
class IndexReport(_Result):
    """What :func:`hzio.index` did: data files and blocks indexed (summed over ranks), and seconds."""

    files: int
    blocks: int
    seconds: float

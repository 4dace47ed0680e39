"""Offset arithmetic for planning reads: pure functions, no I/O.

Offsets are ``{TopicAndPartition: offset}`` maps here; :func:`to_json` and
:func:`from_json` convert them to and from the JSON shape Spark's Kafka source
uses (``{"topic": {"0": 23}}``), which is also the streaming offset that Spark
checkpoints.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from afkak._errors import ClientError
from afkak.common import OFFSET_EARLIEST, OFFSET_LATEST, TopicAndPartition

from ._options import Bound, ByTimestamp, ClientConfig, OffsetSpec, OptionError, ReadOptions

Offsets = Mapping[TopicAndPartition, int]
#: ``lookup(partitions, when)``: their offsets at *when* (-2 earliest, -1 latest, or a time).
Lookup = Callable[[Sequence[TopicAndPartition], int], Offsets]


class DataLossError(ClientError):
    """Records a query should read are gone (deleted, or the partition vanished).

    Raised only with ``failOnDataLoss`` (the default); otherwise the loss is
    skipped over.
    """


class Lookups(Protocol):
    """What the stream reader asks of Kafka: :mod:`._plain_lookups` (falling back to
    :mod:`._worker`'s client), or a fake log in tests."""

    def discover(self, opts: ReadOptions) -> list[TopicAndPartition]: ...

    def offsets_at(
        self,
        config: ClientConfig,
        partitions: Sequence[TopicAndPartition],
        when: int,
        isolation_level: int = 0,
    ) -> dict[TopicAndPartition, int]: ...

    def resolve_offsets(
        self, opts: ReadOptions, spec: Bound, partitions: Sequence[TopicAndPartition], name: str
    ) -> dict[TopicAndPartition, int]: ...


@attrs.frozen
class OffsetRange:
    """Offsets ``[start, end)`` of one partition: the work of one Spark task."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def to_json(offsets: Offsets) -> dict[str, dict[str, int]]:
    """``{"topic": {"partition": offset}}``, partitions in order."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def from_json(data: Mapping[str, Mapping[str, Any]]) -> dict[TopicAndPartition, int]:
    """The inverse of :func:`to_json` (Spark hands offsets back with string keys)."""
    return {
        TopicAndPartition(topic, int(p)): int(offset)
        for topic, partitions in data.items()
        for p, offset in partitions.items()
    }


def resolve(
    spec: OffsetSpec,
    partitions: Iterable[TopicAndPartition],
    earliest: Offsets,
    latest: Offsets,
    name: str,
) -> dict[TopicAndPartition, int]:
    """The offset of each partition that *spec* names, -2/-1 looked up in *earliest*/*latest*.

    A JSON spec must name every partition read, as in Spark.
    """
    wanted = sorted(partitions)
    if isinstance(spec, int):
        per_partition = dict.fromkeys(wanted, spec)
    else:
        missing = [tp for tp in wanted if tp not in spec]
        if missing:
            raise OptionError(
                f"{name} must give an offset for every partition read; missing: "
                + ", ".join(f"{tp.topic}/{tp.partition}" for tp in missing)
            )
        per_partition = {tp: spec[tp] for tp in wanted}
    lookups = {OFFSET_EARLIEST: earliest, OFFSET_LATEST: latest}
    return {
        tp: lookups[offset][tp] if offset in lookups else offset
        for tp, offset in per_partition.items()
    }


def _uses(spec: OffsetSpec, when: int) -> bool:
    return spec == when if isinstance(spec, int) else when in spec.values()


def resolve_bound(
    spec: Bound, partitions: Sequence[TopicAndPartition], name: str, lookup: Lookup
) -> dict[TopicAndPartition, int]:
    """*spec* as concrete offsets of *partitions*, looking up only what it needs."""
    if isinstance(spec, ByTimestamp):
        return _by_timestamp(spec, partitions, name, lookup)
    earliest = lookup(partitions, OFFSET_EARLIEST) if _uses(spec, OFFSET_EARLIEST) else {}
    latest = lookup(partitions, OFFSET_LATEST) if _uses(spec, OFFSET_LATEST) else {}
    return resolve(spec, partitions, earliest, latest, name)


def _by_timestamp(
    spec: ByTimestamp, partitions: Sequence[TopicAndPartition], name: str, lookup: Lookup
) -> dict[TopicAndPartition, int]:
    """Each partition's first offset at or after its time (ListOffsets by timestamp)."""
    stamps = resolve(spec.timestamps, partitions, {}, {}, name)
    found: dict[TopicAndPartition, int] = {}
    for when in set(stamps.values()):
        found.update(lookup([tp for tp, t in stamps.items() if t == when], when))
    late = sorted(tp for tp, offset in found.items() if offset < 0)
    if late and spec.strategy == "error":
        raise OptionError(
            f"{name}: no record at or after the time in "
            + ", ".join(f"{tp.topic}/{tp.partition}" for tp in late)
            + " (startingOffsetsByTimestampStrategy=latest reads from the latest offset)"
        )
    if late:
        found.update(lookup(late, OFFSET_LATEST))
    return found


def matching(topics: Mapping[str, Iterable[int]], pattern: str) -> list[TopicAndPartition]:
    """Every partition of *topics* (``{topic: partitions}``) whose whole name matches
    *pattern* (Java's ``Pattern.matches``, as Spark's ``subscribePattern``), internal
    ``__`` topics excepted."""
    regex = re.compile(pattern)
    names = sorted(t for t in topics if not t.startswith("__") and regex.fullmatch(t))
    return [TopicAndPartition(t, p) for t in names for p in topics[t]]


def plan(
    opts: ReadOptions,
    start: Offsets,
    end: Offsets,
    earliest: Callable[[list[TopicAndPartition]], Offsets],
) -> list[OffsetRange]:
    """The tasks reading from *start* to *end*; new partitions start at their earliest
    (looked up through *earliest*)."""
    ranges = ranges_between(start, end, earliest, opts.fail_on_data_loss)
    # Spark's order: cap each range first, then split further for minPartitions.
    return split_ranges(cap_ranges(ranges, opts.max_records_per_partition), opts.min_partitions)


def ranges_between(
    start: Offsets,
    end: Offsets,
    earliest: Callable[[list[TopicAndPartition]], Offsets],
    fail_on_data_loss: bool,
) -> list[OffsetRange]:
    """The non-empty ranges from *start* to *end*, partition by partition.

    A partition in *end* but not in *start* is new and is read from its
    earliest offset (looked up through *earliest*, only when needed).  A
    partition in *start* that *end* lacks, or an end before its start, is
    data loss: :exc:`DataLossError` or, without ``fail_on_data_loss``, skipped.
    """
    lost = [tp for tp in start if tp not in end]
    lost += [tp for tp in end if tp in start and end[tp] < start[tp]]
    if lost and fail_on_data_loss:
        raise DataLossError(
            "partitions vanished or their offsets went back (set failOnDataLoss=false to "
            "skip): " + ", ".join(f"{tp.topic}/{tp.partition}" for tp in sorted(lost))
        )
    new = sorted(tp for tp in end if tp not in start)
    first = dict(earliest(new)) if new else {}
    ranges = []
    for tp in sorted(end):
        begin = start[tp] if tp in start else first[tp]
        if end[tp] > begin:
            ranges.append(OffsetRange(tp.topic, tp.partition, begin, end[tp]))
    return ranges


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Split *ranges* into at least *min_partitions* pieces, in proportion to their sizes.

    Each range gets its share of *min_partitions* (at least one piece, at most
    one per record), the pieces left over going to the largest remainders;
    pieces of a range differ in size by one record at most.  Nothing changes
    when there are already enough ranges.
    """
    if min_partitions is None or len(ranges) >= min_partitions:
        return list(ranges)
    total = sum(r.size for r in ranges)
    shares = [r.size / total * min_partitions for r in ranges]
    parts = [min(r.size, max(1, int(share))) for r, share in zip(ranges, shares, strict=True)]
    for _ in range(min_partitions - sum(parts)):
        room = [i for i, r in enumerate(ranges) if parts[i] < r.size]
        if not room:
            break
        parts[max(room, key=lambda i: shares[i] - parts[i])] += 1
    return [piece for r, n in zip(ranges, parts, strict=True) for piece in _pieces(r, n)]


def cap_ranges(ranges: list[OffsetRange], max_records: int | None) -> list[OffsetRange]:
    """Split each range into as few pieces as hold at most *max_records* each
    (``maxRecordsPerPartition``); pieces of a range differ in size by one record at most."""
    if max_records is None:
        return list(ranges)
    return [piece for r in ranges for piece in _pieces(r, -(-r.size // max_records))]


def pack_ranges(ranges: list[OffsetRange], most: int) -> list[tuple[OffsetRange, ...]]:
    """*ranges* in groups of at most *most* records, each group one task's work.

    A task of a Python data source costs Spark a round trip through its Python
    workers (tens of milliseconds), where a few records of a micro-batch take
    microseconds to read: reading them in one task saves micro-batch latency.
    Ranges are packed in order, a range larger than *most* alone.
    """
    groups: list[list[OffsetRange]] = []
    size = most
    for r in ranges:
        if size + r.size > most:
            groups.append([])
            size = 0
        groups[-1].append(r)
        size += r.size
    return [tuple(g) for g in groups]


def _pieces(r: OffsetRange, n: int) -> list[OffsetRange]:
    """*r* split into *n* consecutive pieces whose sizes differ by one record at most."""
    step, extra = divmod(r.size, n)
    pieces, begin = [], r.start
    for i in range(n):
        stop = begin + step + (1 if i < extra else 0)
        pieces.append(OffsetRange(r.topic, r.partition, begin, stop))
        begin = stop
    return pieces


def rate_limit(start: Offsets, latest: Offsets, limit: int) -> dict[TopicAndPartition, int]:
    """End offsets that read at most about *limit* records from *start*, spread over partitions.

    Each partition gets a share of *limit* proportional to its backlog (Spark's
    ``maxOffsetsPerTrigger``); a share below one record is rounded up so that a
    small backlog still advances.  Partitions missing from *start* are not
    limited: give new partitions their earliest offsets in *start*.
    """
    backlog = {tp: max(0, latest[tp] - start[tp]) for tp in latest if tp in start}
    total = sum(backlog.values())
    if total <= limit:
        return dict(latest)
    ends = dict(latest)
    for tp, size in backlog.items():
        share = limit * size / total
        step = int(share) if share >= 1 else (1 if size else 0)
        ends[tp] = start[tp] + min(size, step)
    return ends


def too_few(start: Offsets, latest: Offsets, minimum: int) -> bool:
    """Whether fewer than *minimum* records lie between *start* and *latest*
    (Spark's ``minOffsetsPerTrigger``; partitions missing from *start* count from 0)."""
    return sum(max(0, end - start.get(tp, 0)) for tp, end in latest.items()) < minimum

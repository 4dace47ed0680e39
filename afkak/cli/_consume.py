"""``afkak consume TOPIC``: records to stdout, as kcat -C does.

Without a group the command fetches the topic's partitions itself (Fetch
tells each partition's high watermark, which ``-e`` stops at); with
``-G GROUP`` it is a member of that consumer group (a ConsumerGroup), and
``-e`` stops at the log end offsets ListOffsets gave when it started.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import deferLater

from afkak.admin import OffsetSpec
from afkak.client._interlayer import LEADER_MOVED, TOPIC_GONE
from afkak.common import (
    OFFSET_EARLIEST,
    OFFSET_LATEST,
    BrokerResponseError,
    FetchRequest,
    SourcedMessage,
    TopicAndPartition,
)
from afkak.group import ConsumerGroup

from ._format import compile_format, console_consumer_format, record_json
from ._output import OK, CommandError, item_error, progress
from ._session import Session

FETCH_MAX_BYTES = 1 << 20
FETCH_WAIT_MS = 500
TP = TopicAndPartition


class Sink:
    """Writes records in the chosen format and counts them up to ``-c``.

    With ``--key-format``/``--value-format`` (*decoded*), keys and values are
    written as JSON (see ``_schema_formats``), decoded here if *decode* (the group's
    consumers decode them otherwise).
    """

    def __init__(self, s: Session, bar: Any, decoded: bool = False, decode: bool = False) -> None:
        a = s.args
        self.limit = a.count
        self.written = 0
        self.bar = bar
        #: The reader went away (``afkak consume ... | head``): stop quietly.
        self.closed = False
        if s.out.as_json:
            self.render: Callable[[Any], Any] = lambda m: s.out.json(record_json(m))
        else:
            fmt = (
                a.format
                or console_consumer_format(a.property)
                or ("%k" + a.key_separator + "%s\\n" if a.key_separator else "%s\\n")
            )
            render = compile_format(fmt)
            out = sys.stdout.buffer
            self.render = lambda m: out.write(render(m))
        if decoded:
            from ._schema_formats import printable

            plain = self.render
            key, value = s.deserializers if decode and s.deserializers else (None, None)

            def render_decoded(m: Any) -> Any:
                m, values = printable(m, key, value)
                if not s.out.as_json:
                    return plain(m)
                return s.out.json({**record_json(m), **values})

            self.render = render_decoded

    @property
    def full(self) -> bool:
        return self.closed or (self.limit is not None and self.written >= self.limit)

    def write(self, message: Any) -> None:
        if not self.full:
            try:
                self.render(message)
            except BrokenPipeError:
                self._close()
                return
            self.written += 1
            self.bar.advance()

    def flush(self) -> None:
        if not self.closed:
            try:
                sys.stdout.flush()
            except BrokenPipeError:
                self._close()

    def _close(self) -> None:
        """Send what is left in stdout's buffers to /dev/null (nothing reads it any more)."""
        self.closed = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def parse_offset(text: str) -> tuple[str, int]:
    """``beginning`` (or ``earliest``), ``end`` (or ``latest``), ``stored``, ``N``, ``-N``
    (N before the end) or ``s@MS``."""
    text = {"earliest": "beginning", "latest": "end"}.get(text, text)
    if text in ("beginning", "end", "stored"):
        return text, 0
    if text.startswith("s@") and text[2:].isdigit():
        return "timestamp", int(text[2:])
    try:
        n = int(text)
    except ValueError:
        raise ValueError(
            f"--offset takes beginning, end, stored, N, -N or s@TIMESTAMP_MS, not {text!r}"
        ) from None
    return ("offset", n) if n >= 0 else ("from_end", -n)


async def consume(s: Session) -> int:
    a = s.args
    how, n = parse_offset(a.offset)
    described = (await s.admin.describe_topics([a.topic]))[a.topic]
    if described.error is not None:
        raise item_error(f"topic {a.topic}", described.error)
    partitions = [p.partition for p in described.partitions]
    if a.partition is not None:
        if a.partition not in partitions:
            raise CommandError(f"topic {a.topic} has no partition {a.partition}", 4)
        partitions = [a.partition]
    tps = [TP(a.topic, p) for p in partitions]
    if a.group and a.partition is not None:
        raise ValueError("-p/--partition cannot be combined with a group (-G)")
    if not a.group and how == "stored":
        raise ValueError("--offset stored needs a group (-G)")
    starts = None if a.group else await _start_offsets(s, tps, how, n)
    ends: dict[TP, int] = {}
    total = a.count
    if a.exit_at_end:
        # The end offsets are known: the progress display shows a total.
        ends = await _listed(s, {tp: OffsetSpec.LATEST for tp in tps})
        begins = starts if starts is not None else await _group_starts(s, tps, how, ends)
        backlog = sum(max(0, ends[tp] - begins[tp]) for tp in tps)
        total = backlog if total is None else min(total, backlog)
    formats = a.key_format is not None or a.value_format is not None
    if formats:
        from ._schema_formats import deserializers

        s.deserializers = deserializers(s)
    with progress(f"consume {a.topic}", total, s.interactive, "msg") as bar:
        sink = Sink(s, bar, formats, decode=starts is not None)
        if starts is None:
            await _as_member(s, sink, how, ends)
        else:
            await _fetch_loop(s, sink, starts)
        sink.flush()
    if s.interactive:
        sys.stderr.write(f"afkak: consumed {sink.written} records from {a.topic}\n")
    return OK


async def _group_starts(s: Session, tps: list[TP], how: str, ends: dict[TP, int]) -> dict[TP, int]:
    """Where a group member will start: the committed offsets, else the reset's."""
    committed = await s.admin.list_consumer_group_offsets(s.args.group, [s.args.topic])
    earliest = await _listed(s, {tp: OffsetSpec.EARLIEST for tp in tps})
    reset = ends if how == "end" else earliest
    return {tp: committed[tp] if committed.get(tp, -1) >= 0 else reset[tp] for tp in tps}


async def _start_offsets(s: Session, tps: list[TP], how: str, n: int) -> dict[TP, int]:
    earliest = await _listed(s, {tp: OffsetSpec.EARLIEST for tp in tps})
    if how == "beginning":
        return earliest
    latest = await _listed(s, {tp: OffsetSpec.LATEST for tp in tps})
    if how == "end":
        return latest
    if how == "offset":
        return {tp: n for tp in tps}
    if how == "from_end":
        return {tp: max(latest[tp] - n, earliest[tp]) for tp in tps}
    at = await _listed(s, {tp: n for tp in tps})
    return {tp: at[tp] if at[tp] >= 0 else latest[tp] for tp in tps}


async def _listed(s: Session, specs: dict[TP, int]) -> dict[TP, int]:
    listed = await s.admin.list_offsets(specs)
    for tp, result in listed.items():
        if result.error is not None:
            raise item_error(f"partition {tp.topic}:{tp.partition}", result.error)
    return {tp: r.offset for tp, r in listed.items()}


async def _fetch_loop(s: Session, sink: Sink, offsets: dict[TP, int]) -> None:
    at_end: set[TP] = set()
    while not sink.full and not (s.args.exit_at_end and len(at_end) == len(offsets)):
        payloads = [
            FetchRequest(tp.topic, tp.partition, o, FETCH_MAX_BYTES) for tp, o in offsets.items()
        ]
        responses = await s.client.send_fetch_request(
            payloads, fail_on_error=False, max_wait_time=FETCH_WAIT_MS, min_bytes=1
        )
        got = 0
        for r in responses:
            tp = TP(r.topic, r.partition)
            if r.error:
                if r.error in LEADER_MOVED or r.error in TOPIC_GONE:
                    continue  # the client forgot the stale metadata: fetch again
                raise BrokerResponseError.from_errno(r.error, f"fetching {tp.topic}:{tp.partition}")
            messages = [
                SourcedMessage(tp.topic, tp.partition, m.offset, m.message) for m in r.messages
            ]
            if s.deserializers is not None:
                from ._schema_formats import prepared

                await prepared(*s.deserializers, messages)
            for m in messages:
                sink.write(m)
                got += 1
                offsets[tp] = m.offset + 1
                if sink.full:
                    return
            if offsets[tp] >= r.highwaterMark:
                at_end.add(tp)
        sink.flush()
        if not got and not s.args.exit_at_end:
            await deferLater(s.reactor, 0.05)  # brokers that answer an empty Fetch at once


async def _as_member(s: Session, sink: Sink, how: str, ends: dict[TP, int]) -> None:
    """Consume as a member of ``-G GROUP``; with ``-e`` until each partition's *ends*."""
    a = s.args
    done: Deferred[None] = Deferred()
    finished: set[TP] = {tp for tp, end in ends.items() if end == 0}
    #: Where each partition's last written record ends, when -c cut a batch short.
    cut: dict[TP, int] = {}

    def check_done() -> None:
        if not done.called and (sink.full or (a.exit_at_end and len(finished) == len(ends))):
            done.callback(None)

    def processor(consumer: Any, messages: list[Any]) -> None:
        for m in messages:
            tp = TP(m.topic, m.partition)
            if sink.full:
                cut.setdefault(tp, m.offset)
                continue
            sink.write(m)
            if tp in ends and m.offset + 1 >= ends[tp]:
                finished.add(tp)
        sink.flush()
        check_done()

    group = ConsumerGroup(
        s.client,
        a.group,
        [a.topic],
        processor,
        session_timeout_ms=a.session_timeout_ms,
        auto_offset_reset=OFFSET_LATEST if how == "end" else OFFSET_EARLIEST,
        key_deserializer=None if s.deserializers is None else s.deserializers[0],
        value_deserializer=None if s.deserializers is None else s.deserializers[1],
    )
    stopped = group.start()
    stopped.addErrback(lambda f: None if done.called else done.errback(f))
    # Interrupted (Ctrl-C stops the reactor): leave the group and commit first.
    trigger = s.reactor.addSystemEventTrigger("before", "shutdown", group.shutdown)
    check_done()
    try:
        await done
    finally:
        s.reactor.removeSystemEventTrigger(trigger)
    await group.shutdown()
    if cut:
        # The group committed whole batches; records past -c COUNT were not written.
        await s.admin.alter_consumer_group_offsets(a.group, cut)

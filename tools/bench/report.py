"""The benchmark's table (text and reStructuredText) and issue 4's targets, from the runs."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

import attrs

from bench.common import Result

REFERENCE = "confluent-kafka"


@attrs.frozen
class Run:
    workload: str  # a Workload's title
    client: str
    variant: str
    load: float  # 1-minute load average when the run started
    result: Result | None  # None: the run failed
    error: str = ""
    broker_cpu: float | None = None  # the broker's CPU seconds over the whole run

    @property
    def label(self) -> str:
        return f"{self.client} ({self.variant})"


@attrs.frozen
class Row:
    workload: str
    label: str
    runs: int
    failures: int
    rate: float  # messages per second
    mbps: float  # payload megabytes (10**6) per second
    cpu: float  # CPU seconds of the measured part
    p50: float | None  # milliseconds (latency workload)
    p99: float | None
    load: float  # mean 1-minute load average at the runs' starts
    broker_cpu: float | None = None
    ratio: float | None = None  # rate / the reference client's rate
    cpu_us: float | None = None  # CPU microseconds per message
    fetch_rate: float | None = None  # Fetch requests per second (consumers that count them)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The value at *fraction* of the sorted *values* (0.5: the p50 the tables show)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def aggregate(runs: Sequence[Run], stat: str) -> list[Row]:
    """One row per workload and client variant: the median (or best) of its runs."""
    pick_high: Callable[[list[float]], float] = max if stat == "best" else statistics.median
    pick_low: Callable[[list[float]], float] = min if stat == "best" else statistics.median
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.workload, run.label), []).append(run)
    rows = []
    for (workload, label), group in groups.items():
        done = [r.result for r in group if r.result is not None]
        loads = [r.load for r in group]
        broker = [r.broker_cpu for r in group if r.broker_cpu is not None and r.result]
        if not done:
            rows.append(
                Row(
                    workload,
                    label,
                    len(group),
                    len(group),
                    0,
                    0,
                    0,
                    None,
                    None,
                    statistics.mean(loads),
                )
            )
            continue
        lat = [r.latencies_ms for r in done if r.latencies_ms]
        rows.append(
            Row(
                workload,
                label,
                len(group),
                len(group) - len(done),
                rate=pick_high([r.count / r.wall for r in done]),
                mbps=pick_high([r.bytes / r.wall / 1e6 for r in done]),
                cpu=pick_low([r.cpu for r in done]),
                cpu_us=pick_low([r.cpu / r.count * 1e6 for r in done if r.count]),
                p50=pick_low([percentile(x, 0.50) for x in lat]) if lat else None,
                p99=pick_low([percentile(x, 0.99) for x in lat]) if lat else None,
                load=statistics.mean(loads),
                broker_cpu=pick_low(broker) if broker else None,
                fetch_rate=pick_low([r.fetches / r.wall for r in done])
                if all(r.fetches for r in done)
                else None,
            )
        )
    # A workload's first confluent-kafka variant; rows of clients at their
    # defaults against confluent-kafka's defaults, where measured (issue 28).
    reference: dict[tuple[str, bool], float] = {}
    for r in rows:
        if r.label.startswith(REFERENCE) and r.rate:
            reference.setdefault((r.workload, _defaults(r.label)), r.rate)
    out = []
    for r in rows:
        ref = reference.get((r.workload, _defaults(r.label))) or reference.get((r.workload, False))
        out.append(attrs.evolve(r, ratio=r.rate / ref) if ref else r)
    return out


def _defaults(label: str) -> bool:
    """Is this a row of a client at its defaults?"""
    return "(defaults" in label


HEADER = (
    "workload",
    "client",
    "msgs/s",
    "MB/s",
    "fetch req/s",
    "CPU s",
    "CPU us/msg",
    "p50 ms",
    "p99 ms",
    "x confluent",
    "broker CPU s",
    "load",
)


def _cells(row: Row) -> tuple[str, ...]:
    if row.failures == row.runs:
        return (row.workload, row.label, "failed", *[""] * 8, f"{row.load:.1f}")
    return (
        row.workload,
        row.label + (f" [{row.failures} failed]" if row.failures else ""),
        f"{row.rate:,.0f}",
        f"{row.mbps:.1f}",
        "" if row.fetch_rate is None else f"{row.fetch_rate:,.0f}",
        f"{row.cpu:.3f}",
        "" if row.cpu_us is None else f"{row.cpu_us:.2f}",
        "" if row.p50 is None else f"{row.p50:.3f}",
        "" if row.p99 is None else f"{row.p99:.3f}",
        "" if row.ratio is None else f"{row.ratio:.2f}",
        "" if row.broker_cpu is None else f"{row.broker_cpu:.2f}",
        f"{row.load:.1f}",
    )


def text_table(rows: Sequence[Row]) -> str:
    cells = [HEADER] + [_cells(r) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
    lines = []
    previous = None
    for line in cells:
        if line is not HEADER and line[0] == previous:
            line = ("",) + line[1:]
        else:
            previous = line[0]
            if line is not HEADER:
                lines.append("")
        padded = [
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ]
        lines.append("  ".join(padded).rstrip())
    return "\n".join(lines)


def rst_table(rows: Sequence[Row], caption: str, preamble: str) -> str:
    """A list-table (each workload named once), after a paragraph saying how it was measured."""
    out = [preamble, "", f".. list-table:: {caption}", "   :header-rows: 1", ""]
    previous = None
    for line in [HEADER] + [_cells(r) for r in rows]:
        workload = "" if line[0] == previous else line[0]
        previous = line[0]
        out.append(f"   * - {workload}".rstrip())
        out.extend(f"     - {c}".rstrip() for c in line[1:])
    return "\n".join(out) + "\n"


@attrs.frozen
class Target:
    text: str
    met: bool | None  # None: not measured
    detail: str


def _comparer(rows: Sequence[Row]) -> Callable[[str, str, str, str, float], Target]:
    """``compare(text, workload, mine, theirs, factor)``: is mine's rate >= factor x theirs?"""
    find = {(r.workload, r.label): r for r in rows if r.failures < r.runs}

    def compare(text: str, workload: str, mine: str, theirs: str, factor: float) -> Target:
        a, b = find.get((workload, mine)), find.get((workload, theirs))
        if a is None or b is None:
            return Target(text, None, "not measured")
        return Target(
            text,
            a.rate >= factor * b.rate,
            f"{a.rate:,.0f} vs {b.rate:,.0f} msgs/s = {a.rate / b.rate:.2f}x"
            f" (per CPU second: {b.cpu / a.cpu:.2f}x)",
        )

    return compare


def targets(
    rows: Sequence[Row], produce_100: str, produce_1k: str, consumes: Sequence[str], latency: str
) -> list[Target]:
    """Issue 4's targets, each with the numbers it was judged on."""
    find = {(r.workload, r.label): r for r in rows if r.failures < r.runs}
    compare = _comparer(rows)

    out = [
        compare(
            "produce 100 B, one send_messages per message >= 2x aiokafka",
            produce_100,
            "afkak (send_messages x1)",
            "aiokafka (send)",
            2.0,
        ),
        compare(
            "produce 100 B, list sends >= confluent-kafka",
            produce_100,
            "afkak (send_messages list)",
            "confluent-kafka (produce+poll)",
            1.0,
        ),
        compare(
            "produce 1 KiB MB/s (send_messages x1) >= confluent-kafka",
            produce_1k,
            "afkak (send_messages x1)",
            "confluent-kafka (produce+poll)",
            1.0,
        ),
        compare(
            "produce 1 KiB MB/s (list sends) >= confluent-kafka",
            produce_1k,
            "afkak (send_messages list)",
            "confluent-kafka (produce+poll)",
            1.0,
        ),
    ]
    for workload in consumes:
        out.append(
            compare(
                f"{workload} >= 1.5x aiokafka",
                workload,
                "afkak (1 MiB fetches)",
                "aiokafka (getmany)",
                1.5,
            )
        )
    # For reference, not targets: aiokafka without its Cython record code.
    out.append(
        compare(
            "(ref.) produce 100 B, one send_messages per message >= 2x pure-Python aiokafka",
            produce_100,
            "afkak (send_messages x1)",
            "aiokafka (send, pure Python)",
            2.0,
        )
    )
    for workload in consumes:
        out.append(
            compare(
                f"(ref.) {workload} >= 1.5x pure-Python aiokafka",
                workload,
                "afkak (1 MiB fetches)",
                "aiokafka (getmany, pure Python)",
                1.5,
            )
        )
    row = find.get((latency, "afkak (acks=1)"))
    if row is None or row.p50 is None:
        out.append(Target("p50 ack latency <= 0.25 ms", None, "not measured"))
    else:
        out.append(
            Target(
                "p50 ack latency <= 0.25 ms",
                row.p50 <= 0.25,
                f"p50 {row.p50:.3f} ms, p99 {row.p99:.3f} ms",
            )
        )
    return out


def targets_issue14(
    rows: Sequence[Row], produce_100: str, consumes: Sequence[str], partitions: str
) -> list[Target]:
    """Issue 14's targets: consuming against confluent-kafka and aiokafka; fetches per broker."""
    find = {(r.workload, r.label): r for r in rows if r.failures < r.runs}
    compare = _comparer(rows)

    out = []
    for workload in consumes:
        out.append(
            compare(
                f"{workload}, defaults (compiled) >= 1.0x confluent-kafka",
                workload,
                "afkak (defaults)",
                "confluent-kafka (consume(10000) + value())",
                1.0,
            )
        )
        out.append(
            compare(
                f"{workload}, afkak pure Python >= 1.0x aiokafka (compiled)",
                workload,
                "afkak (defaults, pure Python)",
                "aiokafka (getmany)",
                1.0,
            )
        )
    out.append(
        compare(
            f"{partitions} >= 1.0x confluent-kafka",
            partitions,
            "afkak (defaults)",
            "confluent-kafka (consume(10000) + value())",
            1.0,
        )
    )
    row = find.get((partitions, "afkak (defaults)"))
    if row is not None and row.fetch_rate:
        out.append(
            Target(
                f"{partitions}: fetch requests (one per broker per round)",
                None if row.fetch_rate is None else True,
                f"{row.fetch_rate:,.0f} requests/s for {row.rate:,.0f} records/s:"
                f" {row.rate / row.fetch_rate:,.0f} records per request",
            )
        )
    out.append(
        compare(
            "produce 100 B, one send_messages per message >= 0.6x confluent-kafka",
            produce_100,
            "afkak (send_messages x1)",
            "confluent-kafka (produce+poll)",
            0.6,
        )
    )
    return out


def targets_issue28(rows: Sequence[Row], produce_100: str, latency: str) -> list[Target]:
    """Issue 28's: one-record ``send()`` with defaults, Deferreds gathered or awaited in turn."""
    find = {(r.workload, r.label): r for r in rows if r.failures < r.runs}
    mine = "afkak (defaults send+gather)"
    out = [
        _comparer(rows)(
            "produce 100 B, send() per record with defaults, gathered >= 1.0x"
            " confluent-kafka with defaults",
            produce_100,
            mine,
            "confluent-kafka (defaults, produce+poll)",
            1.0,
        ),
        # Issue 39: the floor is a Twisted Deferred created, fired and gathered per record.
        _comparer(rows)(
            "produce 100 B, send() per record with defaults, gathered, within 1.3x of the"
            " floor (a bare Deferred per record)",
            produce_100,
            mine,
            "floor (Deferred per record, gathered)",
            1 / 1.3,
        ),
    ]
    a = find.get((latency, mine))
    for theirs in (
        "confluent-kafka (produce+poll)",
        "confluent-kafka (defaults, produce+poll)",
        "java (send+get)",
        "java (defaults, send+flush+get)",
    ):
        b = find.get((latency, theirs))
        text = f"ack latency p50 and p99 (send() awaited in turn) <= {theirs}"
        if a is None or b is None or a.p50 is None or b.p50 is None:
            out.append(Target(text, None, "not measured"))
            continue
        assert a.p99 is not None and b.p99 is not None
        out.append(
            Target(
                text,
                a.p50 <= b.p50 and a.p99 <= b.p99,
                f"p50 {a.p50:.3f} vs {b.p50:.3f} ms, p99 {a.p99:.3f} vs {b.p99:.3f} ms",
            )
        )
    return out

"""afkak's workload on every Kafka release users run, one broker at a time: the
version matrix of docs/broker-versions.rst.

Usage: .venv/bin/python tools/broker_matrix.py [VERSION ...]

Each release's jars come from Maven Central once (``resolve_classpath``, cached);
each node (ZooKeeper mode before 3.3) is started, given the workload of
``afkak.test.brokers.versions`` and stopped before the next.  Prints an RST table,
a row per step, a column per release: ``ok``, ``refused`` (afkak said the broker
does not support it, before sending anything) or ``FAILED`` (the error goes to
stderr), marked ``!`` where it is not what ``expected()`` says; exits 1 if any is.
"""

from __future__ import annotations

import sys
import time

from afkak.test.brokers.versions import OK, REFUSED, STEPS, expected, run_workload
from afkak.testing.apache_kafka import ApacheKafka

#: The first and last release of each line users run, and the 4.x releases.
VERSIONS = (
    "2.1.1",
    "2.3.1",
    "2.8.2",
    "3.0.2",
    "3.3.2",
    "3.6.2",
    "3.9.1",
    "4.0.0",
    "4.2.0",
    "4.4.0",
)


def run(version: str) -> tuple[float, dict[str, str]]:
    """Start Kafka ``version``, run the workload, stop it: start seconds and outcomes."""
    with ApacheKafka(version=version) as node:
        return node.start_seconds, run_workload(node.bootstrap)


def table(rows: list[tuple[str, float, dict[str, str]]]) -> str:
    """An RST simple table: a row per step, a column per release; a failure is
    ``FAILED`` (its error went to stderr)."""
    header = ["Kafka", *(version for version, _, _ in rows)]
    body = [["start (s)", *(f"{seconds:.1f}" for _, seconds, _ in rows)]]
    for step in STEPS:
        cells = []
        for version, _, outcomes in rows:
            got = outcomes[step] if outcomes[step] in (OK, REFUSED) else "FAILED"
            cells.append(got if outcomes[step] == expected(version)[step] else f"! {got}")
        body.append([step, *cells])
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    rule = "  ".join("=" * w for w in widths)
    lines = [rule, "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)), rule]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in body]
    return "\n".join([*lines, rule])


def main(argv: list[str]) -> int:
    rows = []
    for version in argv or VERSIONS:
        began = time.monotonic()
        seconds, outcomes = run(version)
        rows.append((version, seconds, outcomes))
        print(f"{version}: {time.monotonic() - began:.0f} s {outcomes}", file=sys.stderr)
    print(table(rows))
    return int(any(outcomes != expected(v) for v, _, outcomes in rows))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

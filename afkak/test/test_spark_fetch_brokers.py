"""A Spark task's fetches against Apache Kafka: what a range's first fetch asks for.

Runs ``afkak.spark._worker.read_range`` as a Spark Python worker does (the
global reactor in a thread), in a child process: this one's broker tests
iterate the global reactor themselves, and a reactor thread left running here
would share it with them.  Skipped without PySpark and pyarrow, or without
Java (failing instead when CI is "true").
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from twisted.trial.unittest import SkipTest, SynchronousTestCase

from afkak.test.brokers import shared_broker
from afkak.test.spark_processes import SKIP

RECORDS = 30_000
VALUE = b"x" * 100


def received(client: Any) -> float:
    """Bytes the client has received from brokers so far."""
    from afkak.metrics import CLIENT

    return sum(
        v
        for k, v in client.metrics().items()
        if k.name == "incoming-byte-total" and k.group == CLIENT
    )


def second_range_bytes(bootstrap: str, topic: str) -> float:
    """Write the topic's records, read its first two ranges of 5,000 as a worker does:
    the bytes the second one received."""
    from afkak.common import Message, ProduceRequest
    from afkak.message_set import MessageSet
    from afkak.spark import _bridge, _rows, _worker
    from afkak.spark._options import parse_read_options
    from afkak.spark._planning import OffsetRange

    opts = parse_read_options(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}, streaming=True
    )
    client = _worker.client_for(opts.client)
    chunk = MessageSet([Message(0, 0, None, VALUE)] * 5_000)
    for _ in range(RECORDS // 5_000):
        _bridge.call(30, client.send_produce_request, [ProduceRequest(topic, 0, chunk)], acks=1)
    schema = _rows.arrow_schema(_rows.read_schema(False))

    def read(start: int, end: int) -> float:
        before = received(client)
        rows = sum(
            b.num_rows for b in _worker.read_range(opts, OffsetRange(topic, 0, start, end), schema)
        )
        assert rows == end - start, (rows, start, end)
        return received(client) - before

    read(0, 5_000)  # the first range of the topic: 1 KiB a record, the whole log here
    return read(5_000, 10_000)


class RangeFetchTests(SynchronousTestCase):
    def test_a_range_fetches_about_what_it_holds(self) -> None:
        """A Python worker reads many ranges of a topic, one task after another: once it
        has seen the topic's records, a range's first fetch asks for about what the range
        holds.  It asked for 1 KiB a record (8 MiB for a micro-batch's 25,000 records of
        100 bytes: 2.5 times the bytes read, over 40 tasks)."""
        if SKIP:
            raise SkipTest(SKIP)
        broker = shared_broker("kafka")
        topic = f"spark-fetch-{os.getpid()}"
        broker.create_topic(topic, 1)
        child = subprocess.run(
            [sys.executable, "-m", __name__, broker.bootstrap, topic],
            capture_output=True,
            text=True,
            timeout=180,
        )
        self.assertEqual(child.returncode, 0, child.stderr[-4000:])
        second = float(child.stdout.split()[-1])
        # what the 5,000 records take (about 0.6 MB), not 5,000 KiB (the 2.2 MB left in the log)
        self.assertLess(second, 5_000 * len(VALUE) * 1.5)


if __name__ == "__main__":
    print(second_range_bytes(sys.argv[1], sys.argv[2]))

"""An afkak :class:`~afkak.group.ConsumerGroup` member in a child process, printing Java's
``VerifiableConsumer`` events (newline JSON), so that a test can kill -9 it like a Java
member: ``python -m afkak.test.brokers.afkak_member BOOTSTRAP TOPIC GROUP PROTOCOL``.

It auto-commits every 500 ms; nothing it prints waits for a commit.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from twisted.internet import reactor
from twisted.internet.endpoints import TCP4ClientEndpoint

from afkak.client import KafkaClient
from afkak.common import OFFSET_EARLIEST
from afkak.group import ConsumerGroup


def emit(name: str, **fields: Any) -> None:
    print(json.dumps({"name": name, **fields}), flush=True)


def partitions(tps: Any) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partition": tp.partition} for tp in tps]


def process(consumer: Any, messages: list[Any]) -> None:
    if messages:
        first, last = messages[0].offset, messages[-1].offset
        emit(
            "records_consumed",
            partitions=[
                {
                    "partition": consumer.partition,
                    "minOffset": first,
                    "maxOffset": last,
                    "count": len(messages),
                }
            ],
        )


def main(argv: list[str]) -> None:
    bootstrap, topic, group_id, protocol = argv[1:5]
    client = KafkaClient(
        bootstrap, clientId="afkak-member", reactor=reactor, endpoint_factory=TCP4ClientEndpoint
    )
    group = ConsumerGroup(
        client,
        group_id,
        [topic],
        process,
        group_protocol=protocol,
        auto_offset_reset=OFFSET_EARLIEST,
        auto_commit_every_ms=500,
        on_assigned=lambda tps: emit("partitions_assigned", partitions=partitions(tps)),
        on_revoked=lambda tps: emit("partitions_revoked", partitions=partitions(tps)),
    )
    group.start()
    reactor.run()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main(sys.argv)

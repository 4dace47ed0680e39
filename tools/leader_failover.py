"""How fast afkak's producer and consumer follow a partition leader that goes away
(KIP-951), on Apache Kafka's 3-node cluster.

A record is sent every 10 ms to a one-partition topic (3 replicas,
``min.insync.replicas=2``) that a Consumer reads.  The partition's leader is then
stopped: ``shutdown`` (SIGTERM, Kafka's controlled shutdown: leadership moves first,
the old leader answers NOT_LEADER_OR_FOLLOWER naming the new one) or ``kill`` (kill
-9: the connection drops, the controller moves leadership after the broker's
session times out).  Measured from the stop: the first acknowledged produce and the
first record fetched that was sent after it.  ``fast`` follows the leader the error
names (``KafkaClient.note_new_leader``); ``refresh`` ignores it and reloads metadata,
as afkak did before KIP-951.  Run::

    python tools/leader_failover.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.internet.task import LoopingCall

from afkak.client import KafkaClient
from afkak.common import OFFSET_LATEST, TopicAndPartition
from afkak.consumer import Consumer
from afkak.producer import Producer
from afkak.test.brokers import KafkaCluster
from afkak.test.helpers import pump


class RefreshOnlyClient(KafkaClient):
    """The client without KIP-951: every leader error reloads metadata."""

    def note_new_leader(
        self, partition: Any, current_leader: Any, node_endpoints: Any = ()
    ) -> bool:
        return False


def _drive(until: Callable[[], bool], timeout: float) -> None:
    pump(until, timeout, "leader failover", step=0.005)


def one_round(cluster: KafkaCluster, topic: str, mode: str, event: str) -> tuple[float, float]:
    """Seconds from the leader's stop to the first produce and the first fetch after it."""
    make = KafkaClient if mode == "fast" else RefreshOnlyClient
    client = make(cluster.bootstrap, timeout=10000, endpoint_factory=TCP4ClientEndpoint)
    producer = Producer(client, linger_ms=0)
    sent: dict[bytes, float] = {}
    acked: list[float] = []
    fetched: list[float] = []
    stopped_at = [float("inf")]

    def got(consumer: Any, messages: Any) -> None:
        now = time.monotonic()
        for m in messages:
            if sent.get(m.message.value, 0.0) > stopped_at[0]:
                fetched.append(now)

    def ack(result: Any, when: float) -> None:
        if not hasattr(result, "trap") and when > stopped_at[0]:
            acked.append(time.monotonic())

    def send() -> None:
        value = b"%d" % len(sent)
        sent[value] = now = time.monotonic()
        producer.send(topic, value, partition=0).addBoth(ack, now)

    consumer = Consumer(client, topic, 0, got, fetch_max_wait_time=100)
    consumer.start(OFFSET_LATEST).addErrback(lambda f: None)
    sender = LoopingCall(send)
    sender.start(0.01)
    _drive(lambda: len(sent) > 100, 30)
    leader = client.topics_to_brokers[TopicAndPartition(topic, 0)].node_id
    node = cluster.nodes[leader - 1]
    stopped_at[0] = time.monotonic()
    if event == "kill":
        node.kill()
    else:
        node.terminate()
    _drive(lambda: bool(acked and fetched), 120)
    result = (acked[0] - stopped_at[0], fetched[0] - stopped_at[0])
    sender.stop()
    consumer.stop()
    for d in (producer.stop(), client.close()):
        _drive(lambda: d.called, 30)  # noqa: B023
    node.shutdown()
    node.start(cluster.start_timeout)
    cluster.wait_for_brokers(3)
    time.sleep(5)  # the restarted node catches up and rejoins the ISR
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stops", nargs="+", default=["shutdown", "kill"])
    parser.add_argument("--paths", nargs="+", default=["fast", "refresh"])
    args = parser.parse_args()
    with KafkaCluster() as cluster:
        topic = f"failover-{int(time.time())}"
        cluster.create_topic(topic, 1)
        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for event in args.stops:
            for _ in range(args.rounds):
                for mode in args.paths:
                    r = one_round(cluster, topic, mode, event)
                    results.setdefault((event, mode), []).append(r)
                    print(
                        f"{event:8} {mode:7} produce {r[0]:6.3f} s  fetch {r[1]:6.3f} s", flush=True
                    )
    print(f"\nmedian seconds from the leader's stop (rounds: {args.rounds})")
    print(f"{'stop':8} {'path':7} {'produce':>8} {'fetch':>8}")
    for (event, mode), rs in results.items():
        produce = statistics.median(r[0] for r in rs)
        fetch = statistics.median(r[1] for r in rs)
        print(f"{event:8} {mode:7} {produce:8.3f} {fetch:8.3f}")


if __name__ == "__main__":
    main()

"""KIP-392 against the fake cluster on a Clock: a consumer with a ``client_rack``.

The brokers are in racks a, b, c (node 0, 1, 2) and run a rack-aware replica
selector; t/1 is led by node 1 with replicas on every node.  A consumer in
rack c reads t/1 from node 2 once the leader names it, goes back to the leader
when node 2 errs, and asks the leader again when the metadata age passes.
"""

from __future__ import annotations

from typing import Any

from afkak._retry import is_retriable
from afkak.common import BrokerMetadata, NotLeaderForPartitionError, ReplicaNotAvailableError
from afkak.consumer._broker_fetch import FetchManager
from afkak.consumer._replica_selection import ReadReplica
from afkak.protocol.messages import FetchRequest, FetchResponse
from afkak.test.test_consumer import ConsumerTestCase, Recorder

FETCH = 1


class RackAwareFetchTests(ConsumerTestCase):
    def setUp(self) -> None:
        super().setUp()
        for node, rack in ((0, "a"), (1, "b"), (2, "c")):
            self.cluster.state.brokers[node].rack = rack
        self.cluster.rack_aware_replica_selector = True
        self.assertEqual(self.cluster.partition("t", 1).leader, 1)
        self.assertEqual(sorted(self.cluster.partition("t", 1).replicas), [0, 1, 2])

    def fetch_brokers(self) -> list[int]:
        return [r.broker for r in self.requests(FETCH)]

    def started(self, **options: Any) -> Recorder:
        p = Recorder()
        c = self.consumer(p, **options)
        self.stop(c)
        self.start(c, 0)
        return p

    def test_reads_from_the_replica_in_its_rack(self) -> None:
        self.append(b"a")
        p = self.started(client_rack="c")
        self.run_for(0.5)
        self.append(b"b")
        self.run_for(0.5)
        self.assertEqual(p.values, [b"a", b"b"])
        brokers = self.fetch_brokers()
        self.assertEqual(brokers[0], 1)  # the leader names node 2...
        self.assertEqual(set(brokers[1:]), {2})  # ...which serves every later fetch
        self.assertEqual({r.request.rack_id for r in self.requests(FETCH)}, {"c"})

    def test_without_a_rack_reads_from_the_leader(self) -> None:
        self.append(b"a")
        p = self.started()
        self.append(b"b")
        self.run_for(0.5)
        self.assertEqual(p.values, [b"a", b"b"])
        self.assertEqual(set(self.fetch_brokers()), {1})

    def test_a_rack_without_replica_reads_from_the_leader(self) -> None:
        self.cluster.state.brokers[2].rack = "a"
        self.cluster.state.brokers[0].rack = "a"
        self.append(b"a")
        p = self.started(client_rack="z")
        self.run_for(0.5)
        self.assertEqual(p.values, [b"a"])
        self.assertEqual(set(self.fetch_brokers()), {1})

    def test_replica_error_falls_back_to_the_leader(self) -> None:
        self.append(b"a")
        p = self.started(client_rack="c")
        self.run_for(0.5)
        self.cluster.fail_next(FetchRequest, NotLeaderForPartitionError, broker=2)
        self.append(b"b")
        self.run_for(0.5)
        self.assertEqual(p.values, [b"a", b"b"])
        brokers = self.fetch_brokers()
        after_error = brokers[brokers.index(2) :]
        self.assertIn(1, after_error)  # asked the leader again...
        self.assertEqual(after_error[-1], 2)  # ...which sent it back to its rack

    def test_replica_followed_until_the_metadata_age_passes(self) -> None:
        self.client.metadata_max_age = 10.0
        self.append(b"a")
        p = self.started(client_rack="c")
        self.run_for(5)
        self.assertEqual(self.fetch_brokers().count(1), 1)
        self.run_for(6)  # past 10 s: the leader is asked again
        self.append(b"b")
        self.run_for(0.5)
        self.assertEqual(p.values, [b"a", b"b"])
        self.assertEqual(self.fetch_brokers().count(1), 2)

    def test_unknown_replica_is_a_retriable_error(self) -> None:
        # Not followed blindly, nor asked of the leader again at once (a busy loop).
        replica = ReadReplica(self.client)
        leader = BrokerMetadata(1, "broker-1", 9092)
        answer = FetchResponse.PartitionData(preferred_read_replica=7)
        error = self.assertRaises(ReplicaNotAvailableError, replica.answered, leader, answer)
        self.assertTrue(is_retriable(error))
        self.assertIs(replica.broker(leader), leader)

    def test_racks_share_fetchers_per_rack(self) -> None:
        node = BrokerMetadata(1, "broker-1", 9092)
        fetches = self.client.shared(FetchManager)
        self.assertIs(fetches.fetcher(node, 0, "c"), fetches.fetcher(node, 0, "c"))
        self.assertIsNot(fetches.fetcher(node, 0, "c"), fetches.fetcher(node))

    def test_client_rack_must_be_a_string(self) -> None:
        self.assertRaises(TypeError, self.consumer, client_rack=3)

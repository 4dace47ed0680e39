"""Consumers sharing one Fetch per broker, with and without KIP-227 fetch sessions.

Against afkak.testing's FakeKafkaCluster on a Clock: nothing of afkak is
mocked.  The consumer tests of test_consumer also run here against brokers
that grant fetch sessions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from afkak.client import KafkaClient
from afkak.consumer import Consumer
from afkak.consumer._broker_fetch import FetchManager
from afkak.test import test_consumer as tc

FETCH = 1


class _WithSessions:
    fetch_sessions = True


class SessionDeliveryTests(_WithSessions, tc.DeliveryTests):
    pass


class SessionBackpressureTests(_WithSessions, tc.BackpressureTests):
    pass


class SessionCommitTests(_WithSessions, tc.CommitTests):
    pass


class SessionAutoCommitTests(_WithSessions, tc.AutoCommitTests):
    pass


class SessionLifecycleTests(_WithSessions, tc.LifecycleTests):
    pass


class SessionFetchSizeTests(_WithSessions, tc.FetchSizeTests):
    pass


class SessionOffsetResetTests(_WithSessions, tc.OffsetResetTests):
    pass


class SessionRetryTests(_WithSessions, tc.RetryTests):
    pass


class SessionStartTests(_WithSessions, tc.StartTests):
    pass


class SessionBrokenDataTests(_WithSessions, tc.BrokenDataTests):
    pass


class EightConsumers(tc.ConsumerTestCase):
    """Eight consumers of topic "m" on one client: partition p led by broker p % 3."""

    def setUp(self) -> None:
        super().setUp()
        self.cluster.create_topic("m", partitions=8)
        self.processors = [tc.Recorder() for _ in range(8)]
        self.consumers = [
            Consumer(self.client, "m", p, self.processors[p], fetch_size_bytes=1 << 20)
            for p in range(8)
        ]
        for c in self.consumers:
            c.start(0)
            self.stop(c)
        self.clock.advance(0)

    def fetches(self, since: int = 0) -> list[Any]:
        return [r for r in self.cluster.requests_seen[since:] if r.api_key == FETCH]

    def named(self, seen: Any) -> set[int]:
        """The partitions a Fetch request names (an incremental one: those that moved)."""
        return {p.partition for t in seen.request.topics for p in t.partitions}

    def forgotten(self, seen: Any) -> set[int]:
        return {p for t in seen.request.forgotten_topics_data for p in t.partitions}

    def append_all(self, value: bytes) -> None:
        """One record in each partition; the fetches waiting for 1 MiB answer after 100 ms."""
        for p in range(8):
            self.cluster.append("m", p, [value + b"-%d" % p])
        self.settle()

    def settle(self, rounds: int = 1) -> None:
        """Let *rounds* long-polls (100 ms) expire, and deliver what they answer."""
        for _ in range(rounds):
            self.clock.advance(0.1001)
            self.clock.advance(0)
            self.clock.advance(0)

    def values(self) -> list[list[bytes | None]]:
        return [p.values for p in self.processors]


class SharedFetchTests(EightConsumers):
    """The eight share one Fetch per broker."""

    def test_one_request_per_broker_carries_all_its_partitions(self) -> None:
        first = self.fetches()
        self.assertEqual(sorted(r.broker for r in first), [0, 1, 2])
        for seen in first:
            self.assertEqual(self.named(seen), {p for p in range(8) if p % 3 == seen.broker})
        for round_ in range(3):
            before = len(self.cluster.requests_seen)
            self.append_all(b"r%d" % round_)
            # One answer per broker, then one request per broker.
            self.assertEqual(sorted(r.broker for r in self.fetches(before)), [0, 1, 2])
        self.assertEqual(self.values(), [[b"r%d-%d" % (r, p) for r in range(3)] for p in range(8)])
        self.assertEqual(self.client.shared(FetchManager).requests, len(self.fetches()))

    def test_busy_consumer_is_left_out_of_the_next_fetch(self) -> None:
        busy = tc.Recorder(block=True, clock=self.clock)
        self.consumers[2].processor = busy
        self.append_all(b"a")  # partition 2: processing "a", fetching ahead
        self.append_all(b"b")  # partition 2: "b" buffered, nothing more asked
        before = len(self.cluster.requests_seen)
        self.append_all(b"c")
        later = [r for r in self.fetches(before) if r.broker == 2]
        self.assertTrue(later)
        for seen in later:
            self.assertNotIn(2, self.named(seen))
        self.assertEqual(busy.values, [b"a-2"])
        busy.release(0)
        busy.release(1)
        self.settle(2)  # it asks again once the request in flight is answered; then a long-poll
        self.assertEqual(busy.values, [b"a-2", b"b-2", b"c-2"])
        self.assertEqual(self.processors[4].values, [b"a-4", b"b-4", b"c-4"])

    def test_errors_and_leader_moves_stay_per_partition(self) -> None:
        self.append_all(b"a")
        self.cluster.move_leader("m", 2, 1)
        self.append_all(b"b")
        self.settle(6)  # partition 2 finds its new leader after a backoff
        self.assertEqual(self.processors[2].values, [b"a-2", b"b-2"])
        for p in (0, 4, 6):
            self.assertEqual(self.processors[p].values, [b"a-%d" % p, b"b-%d" % p])
        later = self.fetches()[-3:]
        self.assertEqual({r.broker for r in later}, {0, 1, 2})

    def test_stopped_consumer_leaves_the_fetch(self) -> None:
        self.append_all(b"a")
        self.consumers[4].stop()
        before = len(self.cluster.requests_seen)
        self.append_all(b"b")
        for seen in self.fetches(before):
            self.assertNotIn(4, self.named(seen))
        self.assertEqual(self.processors[4].values, [b"a-4"])
        self.assertEqual(self.processors[0].values, [b"a-0", b"b-0"])

    def test_two_consumers_of_one_partition(self) -> None:
        self.cluster.append("m", 0, [b"x", b"y"])
        self.settle()
        late = tc.Recorder()
        c = Consumer(self.client, "m", 0, late, fetch_size_bytes=1)
        c.start(1)
        self.stop(c)
        self.settle(3)
        self.assertEqual(self.processors[0].values, [b"x", b"y"])
        self.assertEqual(late.values, [b"y"])


class SessionSharedFetchTests(SharedFetchTests):
    fetch_sessions = True

    def test_incremental_fetches_name_only_what_moved(self) -> None:
        first = self.fetches()
        self.assertEqual([r.request.session_epoch for r in first], [0, 0, 0])
        self.settle(2)  # the first full fetches are answered: sessions
        before = len(self.cluster.requests_seen)
        self.cluster.append("m", 2, [b"z"])
        self.settle(2)
        moved, idle = [r for r in self.fetches(before) if r.broker == 2]
        self.assertNotEqual(moved.request.session_id, 0)
        self.assertEqual(idle.request.session_id, moved.request.session_id)
        self.assertEqual(idle.request.session_epoch, moved.request.session_epoch + 1)
        self.assertEqual(self.named(moved), {2})  # the others stay in the session as they were
        self.assertEqual((self.named(idle), self.forgotten(idle)), (set(), set()))
        self.assertEqual(self.processors[2].values, [b"z"])

    def test_busy_partition_is_forgotten_then_fetched_again(self) -> None:
        busy = tc.Recorder(block=True, clock=self.clock)
        self.consumers[2].processor = busy
        self.append_all(b"a")
        self.append_all(b"b")
        self.assertTrue(any(2 in self.forgotten(r) for r in self.fetches() if r.broker == 2))
        before = len(self.cluster.requests_seen)
        busy.release(0)
        busy.release(1)
        self.settle(2)
        self.assertIn(2, set().union(*(self.named(r) for r in self.fetches(before))))

    def starts_over(self, break_session: Callable[[], object]) -> None:
        """After *break_session()* the next incremental fetch gets a session error; the
        one after it is a full fetch (epoch 0) starting a new session, and nothing is lost."""
        self.append_all(b"a")
        break_session()
        before = len(self.cluster.requests_seen)
        self.append_all(b"b")
        self.settle(2)
        epochs = [r.request.session_epoch for r in self.fetches(before) if r.broker == 2]
        self.assertIn(0, epochs[1:])
        self.append_all(b"c")
        self.assertEqual(self.values(), [[b"a-%d" % p, b"b-%d" % p, b"c-%d" % p] for p in range(8)])

    def test_lost_session_starts_over_with_a_full_fetch(self) -> None:
        self.starts_over(self.cluster.state.sessions.clear)  # as a broker restart would

    def test_wrong_epoch_starts_over_with_a_full_fetch(self) -> None:
        def skew() -> None:  # the broker expects another epoch than the client sends
            for session in self.cluster.state.sessions.values():
                session.epoch += 5

        self.starts_over(skew)


class SharedFetcherLifetimeTests(tc.ConsumerTestCase):
    def test_the_client_owns_the_fetchers_its_consumers_share(self) -> None:
        """One FetchManager per client, held by the client: no registry keyed by client."""
        c = Consumer(self.client, "t", 1, tc.Recorder(), fetch_size_bytes=1)
        self.stop(c)
        self.start(c, 0)
        manager = self.client.shared(FetchManager)
        self.assertIs(self.client.shared(FetchManager), manager)
        self.assertEqual(len(manager.fetchers), 1)
        other = KafkaClient(
            self.cluster.bootstrap_hosts,
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
        )
        self.assertIsNot(other.shared(FetchManager), manager)
        self.assertEqual(other.shared(FetchManager).fetchers, {})
        self.successResultOf(other.close())

    def test_a_request_cancelled_by_an_earlier_answer_is_not_answered(self) -> None:
        from twisted.internet.defer import CancelledError

        from afkak.common import TopicAndPartition

        key = TopicAndPartition("t", 1)
        leader = self.successResultOf(self.client.leaders_for([key]))[key]
        fetcher = self.client.shared(FetchManager).fetcher(leader)
        first = fetcher.fetch(leader, key, 0, 1024, 1, 100)
        second = fetcher.fetch(leader, key, 0, 1024, 1, 100)
        first.addCallback(lambda answer: (second.cancel(), answer)[1])
        self.clock.advance(0)
        self.cluster.append("t", 1, [b"a"])
        error, data = self.successResultOf(first)
        self.assertEqual((error, bool(data.records)), (0, True))
        self.failureResultOf(second, CancelledError)
        third = fetcher.fetch(leader, key, 1, 1024, 1, 100)  # the fetcher carries on
        self.clock.advance(0)
        self.cluster.append("t", 1, [b"b"])
        self.assertEqual(self.successResultOf(third)[0], 0)


class DeadLeaderTests(EightConsumers):
    """A partition's leader dies and the cluster names it leader for a while (KRaft
    fences a dead broker only after ``broker.session.timeout.ms``; longer when the
    controller died too)."""

    def resumes_after(self, outage: float) -> float:
        """Seconds from the new leader's election to the record it leads being processed."""
        self.append_all(b"a")
        self.cluster.drop_connections(2)
        self.cluster.refuse_connections(2)
        for _ in range(int(outage * 10)):
            self.clock.advance(0.1)
        self.cluster.move_leader("m", 2, 1)
        self.cluster.append("m", 2, [b"b-2"])
        elected = self.clock.seconds()
        while self.processors[2].values != [b"a-2", b"b-2"]:
            self.assertLess(self.clock.seconds() - elected, 120)
            self.clock.advance(0.1)
        return self.clock.seconds() - elected

    def test_a_long_dead_leader_is_left_within_seconds_of_the_election(self) -> None:
        """The fetch's retries waited ever longer while the dead leader refused (0.1 s
        growing 1.2-fold per failure): after a 2-minute outage, 38 s from the election
        to the record.  A fetch whose leader failed looks the leader up again within
        Java's ``retry.backoff.max.ms`` (1 s), whatever the consumer's retry delay: the
        record comes within that wait, the dead leader's connection back-off (0.5 s
        here) that a fetch in flight may wait out, and a long poll."""
        self.assertLess(self.resumes_after(120), 3)

    def test_a_short_outage(self) -> None:
        """Kafka's fencing of a dead broker in the harness's 3-node cluster (6 s)."""
        self.assertLess(self.resumes_after(6), 3)

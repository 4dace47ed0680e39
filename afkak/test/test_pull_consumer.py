"""KafkaConsumer (issue 22): the pull-style API on the processor API's machinery."""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred, ensureDeferred

from afkak import KafkaConsumer
from afkak.common import OFFSET_EARLIEST, RestartError, TopicAndPartition
from afkak.group import MemberState
from afkak.protocol.messages import (
    FetchRequest,
    LeaveGroupRequest,
    ListOffsetsRequest,
    OffsetFetchRequest,
)
from afkak.test.test_consumer import ConsumerTestCase
from afkak.test.test_group_consumer import PARTITIONS, TOPIC, GroupTestCase

ALL = [TopicAndPartition(TOPIC, p) for p in range(PARTITIONS)]
T0 = ALL[0]


def offsets(records: dict[TopicAndPartition, list[Any]]) -> set[tuple[int, int]]:
    return {(tp.partition, r.offset) for tp, rs in records.items() for r in rs}


class PullTestCase(GroupTestCase):
    def pull(self, name: str = "a", **options: Any) -> KafkaConsumer:
        settings: dict[str, Any] = {
            "group_id": "g",
            "assignors": ["cooperative-sticky"],
            "session_timeout_ms": 10000,
            "heartbeat_interval_ms": 1000,
            "auto_offset_reset": OFFSET_EARLIEST,
            "fetch_max_wait_time": 200,
            **options,
        }
        consumer = KafkaConsumer(self.client(name), **settings)
        self.addCleanup(self.close, consumer)
        return consumer

    def close(self, consumer: KafkaConsumer) -> None:
        consumer.close()
        self.advance(5)

    def poll_all(
        self, consumer: KafkaConsumer, rounds: int = 10, **kw: Any
    ) -> set[tuple[int, int]]:
        seen: set[tuple[int, int]] = set()
        for _ in range(rounds):
            seen |= offsets(self.successResultOf(consumer.getmany(**kw)))
            self.advance(0.2)
        return seen

    def lookups(self, since: int = 0) -> list[Any]:
        """The ListOffsets and OffsetFetch requests seen (from the *since*-th request on)."""
        return [
            r
            for r in self.cluster.requests_seen[since:]
            if r.api_key in (ListOffsetsRequest.API_KEY, OffsetFetchRequest.API_KEY)
        ]

    def fetched_from(self, partition: int) -> list[int]:
        """The offsets Fetch requests asked *partition*'s records from, in order."""
        return [
            p.fetch_offset
            for r in self.cluster.requests_seen
            if r.api_key == FetchRequest.API_KEY
            for t in r.request.topics
            for p in t.partitions
            if p.partition == partition
        ]


class GetManyTests(PullTestCase):
    def test_subscribe_getmany_and_commit_what_was_polled(self) -> None:
        self.produce(10)
        c = self.pull(auto_commit_every_ms=0)
        c.subscribe([TOPIC])
        self.advance(5)
        self.assertEqual(c.assignment(), set(ALL))
        first = self.successResultOf(c.getmany(max_records=25))
        self.assertEqual(sum(len(rs) for rs in first.values()), 25)
        seen = offsets(first) | self.poll_all(c)
        self.assertEqual(seen, self.expected())
        self.result(c.commit())
        self.assertEqual(
            {k[2]: v.offset for k, v in self.cluster.committed_offsets.items()},
            {p: 10 for p in range(PARTITIONS)},
        )

    def test_getmany_waits_for_records_or_times_out(self) -> None:
        c = self.pull()
        c.subscribe([TOPIC])
        self.advance(5)
        d = c.getmany(timeout_ms=1000)
        self.assertNoResult(d)
        self.advance(1.1)
        self.assertEqual(self.successResultOf(d), {})
        d = c.getmany(timeout_ms=5000)
        self.cluster.append(TOPIC, 3, [b"x"])
        self.advance(1)
        self.assertEqual(offsets(self.successResultOf(d)), {(3, 0)})
        d = c.getmany(timeout_ms=5000)
        d.cancel()
        self.failureResultOf(d)
        self.cluster.append(TOPIC, 3, [b"y"])
        self.advance(0.5)
        self.assertEqual(offsets(self.successResultOf(c.getmany())), {(3, 1)})

    def test_polls_reuse_one_timer(self) -> None:
        """Polls served before their timeout reset the consumer's one timer: a timer
        per poll, cancelled, stayed in a real reactor's queue until its time (fifty
        consumers kept hundreds alive for the GC to scan).  A poll made while another
        one waits gets its own, and every one still times out on time."""
        c = self.pull()
        c.subscribe([TOPIC])
        self.advance(5)
        timers: list[str] = []
        call_later = self.clock.callLater

        def counting(delay: float, f: Any, *args: Any, **kw: Any) -> Any:
            timers.append(getattr(f, "__name__", ""))
            return call_later(delay, f, *args, **kw)

        self.clock.callLater = counting  # type: ignore[method-assign]
        for i in range(5):
            d = c.getmany(timeout_ms=1000)
            self.cluster.append(TOPIC, 3, [b"x"])
            self.advance(0.5)
            self.assertEqual(offsets(self.successResultOf(d)), {(3, i)})
        self.assertEqual([t for t in timers if "timed_out" in t], ["_poll_timed_out"])
        first = c.getmany(timeout_ms=1000)
        self.clock.advance(0.5)
        second = c.getmany(timeout_ms=250)
        self.clock.advance(0.125)
        self.assertNoResult(second)
        self.clock.advance(0.25)
        self.assertEqual(self.successResultOf(second), {})
        self.assertNoResult(first)
        self.clock.advance(0.25)
        self.assertEqual(self.successResultOf(first), {})

    def test_getone_and_async_for(self) -> None:
        self.cluster.append(TOPIC, 1, [b"a", b"b", b"c"])
        c = self.pull()
        c.subscribe([TOPIC])
        self.advance(5)
        one = self.successResultOf(c.getone())
        self.assertEqual((one.partition, one.offset, one.message.value), (1, 0, b"a"))
        values: list[bytes] = []

        async def loop() -> None:
            async for record in c:
                values.append(record.message.value)
                if len(values) == 3:
                    break

        done = ensureDeferred(loop())
        self.cluster.append(TOPIC, 2, [b"d"])
        self.advance(1)
        self.successResultOf(done)
        self.assertEqual(sorted(values), [b"b", b"c", b"d"])

    def test_assign_without_a_group(self) -> None:
        self.cluster.append(TOPIC, 4, [b"a", b"b"])
        self.cluster.append(TOPIC, 5, [b"c"])
        c = KafkaConsumer(self.client("solo"), value_deserializer=bytes.upper)
        self.addCleanup(self.close, c)
        c.assign([ALL[4], ALL[5]])
        self.advance(1)
        got = self.successResultOf(c.getmany())
        self.assertEqual(
            {tp: [r.message.value for r in rs] for tp, rs in got.items()},
            {ALL[4]: [b"A", b"B"], ALL[5]: [b"C"]},
        )
        self.assertEqual(self.successResultOf(c.position(ALL[4])), 2)
        with self.assertRaises(RestartError):
            c.subscribe([TOPIC])
        with self.assertRaises(ValueError):
            c.commit()  # no group

    def test_assigned_commit_fires_as_the_group_commit(self) -> None:
        """Assigned with a group_id, commit() fires with {tp: offset} (it gave a DeferredList's
        [(True, offset)]), and commit(offsets) with the offsets committed."""
        self.cluster.append(TOPIC, 4, [b"a", b"b"])
        c = KafkaConsumer(self.client("solo"), group_id="g-assigned")
        self.addCleanup(self.close, c)
        c.assign([ALL[4], ALL[5]])
        self.advance(1)
        self.successResultOf(c.getmany())
        self.assertEqual(self.result(c.commit()), {ALL[4]: 1, ALL[5]: None})
        committed = self.result(c.commit({ALL[5]: 7}))
        self.assertEqual(list(committed), [ALL[5]])
        self.assertEqual(committed[ALL[5]].offset, 7)

    def test_bad_arguments(self) -> None:
        c = KafkaConsumer(self.client("x"))
        for call, args, error in [
            (c.subscribe, ([TOPIC],), ValueError),  # no group_id
            (c.getmany, (-1,), ValueError),
            (c.getmany, (0, 0), ValueError),
            (c.getmany, ("1",), TypeError),
            (c.assign, ([],), ValueError),
            (c.assign, (["t"],), TypeError),
        ]:
            with self.assertRaises(error, msg=(call.__name__, args)):
                call(*args)
        with self.assertRaises(ValueError):
            KafkaConsumer(self.client("y"), max_poll_records=0)


class PullControlTests(PullTestCase):
    def test_seek_drops_records_waiting_from_before_it(self) -> None:
        self.cluster.append(TOPIC, 0, [b"%d" % i for i in range(6)])
        c = self.pull()
        c.subscribe([TOPIC])
        self.advance(5)
        first = self.successResultOf(c.getmany(max_records=2))
        self.assertEqual(offsets(first), {(0, 0), (0, 1)})
        self.assertEqual(self.successResultOf(c.position(T0)), 2)
        c.seek(T0, 4)
        self.advance(0.5)
        self.assertEqual(offsets(self.successResultOf(c.getmany())), {(0, 4), (0, 5)})

    def test_pause_keeps_records_from_polls(self) -> None:
        self.produce(1)
        c = self.pull()
        c.subscribe([TOPIC])
        self.advance(5)
        c.pause(T0)
        got = self.poll_all(c, rounds=3)
        self.assertEqual(got, self.expected() - {(0, 0)})
        c.resume(T0)
        self.assertEqual(offsets(self.successResultOf(c.getmany())), {(0, 0)})

    def test_pause_of_assigned_partitions(self) -> None:
        self.cluster.append(TOPIC, 4, [b"a"])
        self.cluster.append(TOPIC, 5, [b"b"])
        c = KafkaConsumer(self.client("solo"))
        self.addCleanup(self.close, c)
        c.assign([ALL[4], ALL[5]])
        self.advance(1)  # both partitions' records wait for a poll
        c.pause(ALL[4])
        self.assertEqual(c.paused(), {ALL[4]})
        self.assertEqual(offsets(self.successResultOf(c.getmany())), {(5, 0)})
        c.resume(ALL[4])
        self.advance(1)
        self.assertEqual(offsets(self.successResultOf(c.getmany())), {(4, 0)})

    def test_records_not_polled_go_to_the_new_owner(self) -> None:
        """A rebalance takes partitions with records waiting: only those polled count."""
        self.produce(10)
        a = self.pull("a", auto_commit_every_ms=0)
        a.subscribe([TOPIC])
        self.advance(5)
        seen_a = offsets(self.successResultOf(a.getmany(max_records=9)))
        b = self.pull("b")
        b.subscribe([TOPIC])
        polled_a: set[tuple[int, int]] = set()
        for _ in range(60):  # a polls on through the rebalance
            polled_a |= offsets(self.successResultOf(a.getmany(max_records=3)))
            self.advance(0.2)
        seen_a |= polled_a
        self.assertEqual((len(a.assignment()), len(b.assignment())), (3, 3))
        seen_b = self.poll_all(b)
        self.assertEqual(seen_a | seen_b | self.poll_all(a), self.expected())

    def test_a_consumer_that_does_not_poll_leaves_and_rejoins_at_its_next_poll(self) -> None:
        self.produce(2)
        a = self.pull("a", max_poll_interval_ms=4000)
        a.subscribe([TOPIC])
        b = self.pull("b", max_poll_interval_ms=4000)
        b.subscribe([TOPIC])
        for _ in range(40):  # b polls, a does not
            self.successResultOf(b.getmany())
            self.advance(0.25)
        leaves = [r for r in self.cluster.requests_seen if r.api_key == LeaveGroupRequest.API_KEY]
        self.assertEqual(len(leaves), 1)
        self.assertEqual(len(b.assignment()), PARTITIONS)
        self.assertEqual(a.assignment(), frozenset())
        self.successResultOf(a.getmany())  # its next poll: it joins again
        for _ in range(40):
            self.successResultOf(a.getmany())
            self.successResultOf(b.getmany())
            self.advance(0.25)
        self.assertEqual((len(a.assignment()), len(b.assignment())), (3, 3))
        self.assertIs(a._group.state if a._group else None, MemberState.STABLE)


class PartialProcessingTests(ConsumerTestCase):
    def test_a_processor_that_finished_part_of_a_call(self) -> None:
        """A Deferred firing with an offset: the rest of the call is fetched again."""
        self.append(b"a", b"b", b"c")
        calls: list[list[int]] = []
        held: list[Deferred[Any]] = []

        def processor(consumer: Any, messages: list[Any]) -> Any:
            calls.append([m.offset for m in messages])
            d: Deferred[Any] = Deferred()
            held.append(d)
            return d

        c = self.consumer(processor, consumer_group="g", auto_commit_every_n=0)
        self.stop(c)
        self.start(c, 0)
        held[0].callback(0)  # only offset 0 done
        self.run_for(0.5)  # behind the fetch from offset 3, long-polling
        self.assertEqual(calls, [[0, 1, 2], [1, 2]])
        self.assertEqual(c.last_processed_offset, 0)


class AssignedStartTests(PullTestCase):
    """Assigned partitions start at the end of the reactor turn: a seek before sets where."""

    def test_a_seek_right_after_assign_starts_there_without_a_lookup(self) -> None:
        """As the Java client's seek before the first poll: no ListOffsets (nor OffsetFetch)
        is sent for a start that is seeked away from, and the first fetch asks the offset
        seeked to.  Before, assign() started at once and the seek cancelled the lookup."""
        self.cluster.append(TOPIC, 4, [b"%d" % i for i in range(6)])
        self.cluster.append(TOPIC, 5, [b"a", b"b"])
        for group_id in (None, "g-seek"):
            c = KafkaConsumer(self.client(f"solo-{group_id}"), group_id=group_id)
            self.addCleanup(self.close, c)
            before = len(self.cluster.requests_seen)
            c.assign([ALL[4], ALL[5]])
            c.seek(ALL[4], 3)
            c.seek(ALL[5], 1)
            self.advance(1)
            self.assertEqual(self.lookups(before), [])
            self.assertEqual(
                offsets(self.successResultOf(c.getmany())), {(4, 3), (4, 4), (4, 5), (5, 1)}
            )
            self.assertEqual(self.fetched_from(4)[:1], [3])

    def test_assigned_partitions_start_at_the_end_of_the_turn_or_at_a_poll(self) -> None:
        self.cluster.append(TOPIC, 4, [b"a"])
        c = KafkaConsumer(self.client("solo"))
        self.addCleanup(self.close, c)
        c.assign([ALL[4]])
        self.assertEqual(self.fetched_from(4), [])
        self.assertEqual(self.successResultOf(c.getmany()), {})  # a poll starts them
        self.advance(1)
        self.assertEqual(offsets(self.successResultOf(c.getmany())), {(4, 0)})
        late = KafkaConsumer(self.client("late"))
        self.addCleanup(self.close, late)
        late.assign([ALL[4]])
        late.seek_to_end(ALL[4])
        self.clock.advance(0)  # the end of the turn: started at the log end
        self.advance(1)
        self.assertEqual(self.successResultOf(late.position(ALL[4])), 1)

    def test_position_right_after_assign_and_seek(self) -> None:
        self.cluster.append(TOPIC, 4, [b"a", b"b", b"c"])
        c = KafkaConsumer(self.client("solo"))
        self.addCleanup(self.close, c)
        c.assign([ALL[4]])
        c.seek(ALL[4], 2)
        self.assertEqual(self.successResultOf(c.position(ALL[4])), 2)
        with self.assertRaises(ValueError):
            c.seek(ALL[4], -5)
        with self.assertRaises(ValueError):
            c.seek(ALL[3], 0)  # not assigned

    def test_close_before_the_start_fetches_nothing(self) -> None:
        c = KafkaConsumer(self.client("solo"))
        c.assign([ALL[4]])
        self.successResultOf(c.close())
        self.advance(1)
        self.assertEqual(self.fetched_from(4), [])


class PullFetchAheadTests(PullTestCase):
    def test_the_next_fetch_is_in_flight_while_the_application_holds_a_block(self) -> None:
        """The processor path's fetch-ahead holds for polls: while the application still
        has records of a response to take, the fetch from after them is already sent."""
        self.cluster.append(TOPIC, 4, [b"%d" % i for i in range(5)])
        c = KafkaConsumer(self.client("solo"))
        self.addCleanup(self.close, c)
        c.assign([ALL[4]])
        self.advance(1)
        self.assertEqual(offsets(self.successResultOf(c.getmany(max_records=2))), {(4, 0), (4, 1)})
        self.assertIn(5, self.fetched_from(4))  # 3 records still to take
        self.cluster.append(TOPIC, 4, [b"5"])
        self.advance(1)  # answered and held: not fetched further (backpressure)
        self.assertEqual(self.fetched_from(4).count(6), 0)
        self.assertEqual(offsets(self.successResultOf(c.getmany())), {(4, 2), (4, 3), (4, 4)})
        self.advance(1)
        self.assertEqual(offsets(self.successResultOf(c.getmany())), {(4, 5)})

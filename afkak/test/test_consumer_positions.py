"""Consumer position control (issue 22): seek, pause, position, committed, explicit commits."""

from __future__ import annotations

from typing import Any

from afkak.common import (
    OFFSET_COMMITTED,
    OFFSET_EARLIEST,
    InvalidConsumerGroupError,
    TopicAndPartition,
)
from afkak.consumer import Consumer, OffsetAndMetadata
from afkak.test.test_consumer import FETCH, ConsumerTestCase, Recorder

TP = TopicAndPartition("t", 1)


class PositionTestCase(ConsumerTestCase):
    def fill(self, count: int) -> None:
        """*count* one-record batches at offsets 0 .. count-1."""
        for i in range(count):
            self.append(b"%d" % i)

    def running(self, processor: Any = None, start: int = 0, **options: Any) -> Consumer:
        c = self.consumer(processor, **options)
        self.stop(c)
        self.start(c, start)
        return c

    def fetches_of_partition_1(self) -> int:
        return sum(
            1
            for r in self.requests(FETCH)
            for t in r.request.topics
            for p in t.partitions
            if p.partition == 1
        )


class SeekTests(PositionTestCase):
    def test_seek_during_a_processor_call_takes_effect_after_it(self) -> None:
        """Records fetched ahead from before the seek are never delivered after it."""
        self.fill(10)
        p = Recorder(block=True, clock=self.clock)
        c = self.running(p, buffer_size=80)  # one batch per fetch: one waits fetched ahead
        self.run_for(0.1)
        self.assertEqual(p.offsets, [0])
        c.seek(TP, 7)
        p.release(0)
        self.run_for(0.1)
        self.assertEqual(p.offsets, [0, 7])
        for i in range(1, 3):
            p.release(i)
            self.run_for(0.1)
        self.assertEqual(p.offsets, [0, 7, 8, 9])

    def test_a_rewind_during_a_call_is_not_committed_past(self) -> None:
        """The records of the call from the seek target on count only once delivered again."""
        self.fill(4)
        p = Recorder(block=True, clock=self.clock)
        c = self.running(p, consumer_group="g", auto_commit_every_n=0)
        self.run_for(0.1)
        self.assertEqual(p.offsets, [0, 1, 2, 3])
        c.seek(TP, 2)
        p.release(0)
        self.assertEqual(c.last_processed_offset, 1)
        self.run_for(0.1)
        self.assertEqual(p.offsets, [0, 1, 2, 3, 2, 3])
        c.seek_to_beginning(TP)
        p.release(1)
        self.assertEqual(c.last_processed_offset, 1, "nothing of that call counts")

    def test_seek_back_from_within_a_synchronous_processor(self) -> None:
        """A rewind asked by the processor itself: the rest of the block is dropped."""
        self.fill(4)
        seen: list[int] = []

        def processor(consumer: Consumer, messages: list[Any]) -> None:
            seen.extend(m.offset for m in messages)
            if len(seen) == 3:
                consumer.seek(TP, 1)

        c = self.running(processor, buffer_size=80)
        self.run_for(0.5)
        self.assertEqual(seen, [0, 1, 2, 1, 2, 3])
        self.assertEqual(c.last_processed_offset, 3)

    def test_seek_to_beginning_and_end(self) -> None:
        self.fill(3)
        p = Recorder()
        c = self.running(p, start=2)
        self.run_for(0.1)
        self.assertEqual(p.offsets, [2])
        c.seek_to_beginning(TP)
        self.run_for(0.1)
        self.assertEqual(p.offsets, [2, 0, 1, 2])
        c.seek_to_beginning()  # no partition named: all of them
        self.run_for(0.1)
        c.seek_to_end()
        self.run_for(0.1)
        self.assertEqual(len(p.offsets), 7)
        self.append(b"new")
        self.run_for(0.1)
        self.assertEqual(p.offsets[-1], 3)

    def test_offsets_for_times_then_seek(self) -> None:
        for i in range(4):
            self.append(b"%d" % i, timestamp=1000 * (i + 1))
        p = Recorder()
        c = self.running(p, start=3)
        d, none = c.offsets_for_times({TP: 2500}), c.offsets_for_times({TP: 9000})
        self.run_for(0.5)  # behind the partition's long-polling fetch on that connection
        found = self.successResultOf(d)
        self.assertEqual(found, {TP: 2})
        self.assertEqual(self.successResultOf(none), {TP: None})
        offset = found[TP]
        assert offset is not None
        c.seek(TP, offset)
        self.run_for(0.1)
        self.assertEqual(p.offsets, [3, 2, 3])

    def test_bad_arguments_raise_at_the_call(self) -> None:
        c = self.consumer()
        for call, args, error in [
            (c.seek, (TP, -1), ValueError),
            (c.seek, (TP, "1"), TypeError),
            (c.seek, (("t", 0), 1), ValueError),  # not this consumer's partition
            (c.seek, ("t", 1), TypeError),
            (c.seek, (TP, 1), ValueError),  # not running
            (c.pause, (("u", 1),), ValueError),
            (c.position, (TP,), ValueError),  # not running
            (c.offsets_for_times, ({TP: -5},), ValueError),
            (c.offsets_for_times, ([TP],), TypeError),
            (c.commit, ({TP: -1},), ValueError),
            (c.commit, ([(TP, 1)],), TypeError),
        ]:
            with self.assertRaises(error, msg=(call.__name__, args)):
                call(*args)
        with self.assertRaises(TypeError):
            OffsetAndMetadata(1, b"bytes")  # type: ignore[arg-type]


class PauseTests(PositionTestCase):
    def test_pause_stops_fetching_and_delivery_until_resume(self) -> None:
        self.fill(2)
        p = Recorder()
        c = self.running(p)
        self.run_for(0.1)
        self.assertEqual(p.offsets, [0, 1])
        c.pause(TP)
        self.assertEqual(c.paused(), {TP})
        self.run_for(0.1)
        fetches = self.fetches_of_partition_1()
        self.append(b"2")
        self.run_for(2)
        self.assertEqual(p.offsets, [0, 1])
        self.assertEqual(
            self.fetches_of_partition_1(), fetches, "a paused partition is not fetched"
        )
        c.resume(TP)
        self.assertEqual(c.paused(), frozenset())
        self.run_for(0.1)
        self.assertEqual(p.offsets, [0, 1, 2])

    def test_pause_keeps_what_was_fetched_ahead(self) -> None:
        self.fill(3)
        p = Recorder(block=True, clock=self.clock)
        c = self.running(p, buffer_size=80)
        self.run_for(0.1)
        c.pause(TP)
        p.release(0)
        self.run_for(1)
        self.assertEqual(p.offsets, [0])
        self.assertEqual(self.successResultOf(c.position(TP)), 1)
        c.resume(TP)
        self.run_for(0.1)
        p.release(1)
        self.run_for(0.1)
        self.assertEqual(p.offsets, [0, 1, 2])

    def test_a_paused_consumer_starts_paused(self) -> None:
        self.fill(1)
        p = Recorder()
        c = self.consumer(p)
        c.pause(TP)
        self.stop(c)
        self.start(c, 0)
        self.run_for(1)
        self.assertEqual((p.offsets, self.fetches_of_partition_1()), ([], 0))
        c.resume()  # no partition named: nothing
        self.assertEqual(c.paused(), {TP})


class PositionAndCommitTests(PositionTestCase):
    def test_position_is_the_next_record_for_the_processor(self) -> None:
        self.fill(3)
        p = Recorder(block=True, clock=self.clock)
        c = self.running(p, buffer_size=80)
        self.run_for(0.1)
        self.assertEqual(self.successResultOf(c.position(TP)), 1)  # 1 fetched ahead only
        p.release(0)
        self.run_for(0.1)
        self.assertEqual(self.successResultOf(c.position(TP)), 2)
        self.assertEqual(c.assignment(), {TP})

    def test_position_of_a_special_start_is_looked_up(self) -> None:
        self.fill(3)
        self.cluster.commit("g", "t", 1, 2)
        c = self.consumer(Recorder(block=True), consumer_group="g")
        self.stop(c)
        c.start(OFFSET_COMMITTED)
        d = c.position(TP)
        self.run_for(0.1)
        self.assertEqual(self.successResultOf(d), 2)

    def test_commit_explicit_offsets_with_metadata_and_committed(self) -> None:
        self.fill(5)
        c = self.running(Recorder(), consumer_group="g", auto_commit_every_n=0)
        self.run_for(0.1)
        d = c.commit({TP: OffsetAndMetadata(3, "rewound by hand")})
        self.run_for(0.5)
        self.assertEqual(self.successResultOf(d), {TP: OffsetAndMetadata(3, "rewound by hand")})
        stored = self.cluster.committed_offsets[("g", "t", 1)]
        self.assertEqual((stored.offset, stored.metadata), (3, "rewound by hand"))
        self.assertEqual(c.last_committed_offset, 2)
        d2 = c.committed(TP)
        self.run_for(0.5)
        self.assertEqual(self.successResultOf(d2), OffsetAndMetadata(3, "rewound by hand"))
        d3 = c.commit({TP: 4})
        self.run_for(0.5)
        self.successResultOf(d3)
        self.assertEqual(self.committed(), 4)

    def test_committed_without_commit_and_without_group(self) -> None:
        c = self.consumer(consumer_group="g")
        d = c.committed(TP)
        self.run_for(0.5)
        self.assertIsNone(self.successResultOf(d))
        loner = self.consumer()
        self.failureResultOf(loner.committed(TP), InvalidConsumerGroupError)
        self.failureResultOf(loner.commit({TP: 1}), InvalidConsumerGroupError)

    def test_seek_to_earliest_constant_is_not_an_offset(self) -> None:
        c = self.running()
        with self.assertRaises(ValueError):
            c.seek(TP, OFFSET_EARLIEST)

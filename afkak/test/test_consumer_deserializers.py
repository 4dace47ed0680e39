"""key_deserializer / value_deserializer on Consumer and ConsumerGroup (issue 22)."""

from __future__ import annotations

import json
from typing import Any

from afkak.common import OFFSET_EARLIEST
from afkak.group import ConsumerGroup
from afkak.test.test_consumer import ConsumerTestCase, Recorder
from afkak.test.test_group_consumer import TOPIC, GroupTestCase


class ConsumerDeserializerTests(ConsumerTestCase):
    def test_keys_and_values_are_deserialized_before_the_processor(self) -> None:
        self.cluster.append(
            "t",
            1,
            [b'{"n": 1}', None],
            keys=[b"k1", None],
            timestamp=1234,
            headers=[[("h", b"v")], []],
        )
        p = Recorder()
        c = self.consumer(p, key_deserializer=bytes.decode, value_deserializer=json.loads)
        self.stop(c)
        self.start(c, 0)
        self.run_for(0.1)
        first, tombstone = p.messages
        self.assertEqual((first.message.key, first.message.value), ("k1", {"n": 1}))
        self.assertEqual((first.message.timestamp, first.message.headers), (1234, (("h", b"v"),)))
        self.assertEqual((first.topic, first.partition, first.offset), ("t", 1, 0))
        self.assertEqual((tombstone.message.key, tombstone.message.value), (None, None))

    def test_a_failing_deserializer_stops_the_consumer(self) -> None:
        self.cluster.append("t", 1, [b"not json"])
        c = self.consumer(value_deserializer=json.loads)
        d = self.start(c, 0)
        self.run_for(0.1)
        self.failureResultOf(d, ValueError)

    def test_not_callable_is_a_type_error(self) -> None:
        for name in ("key_deserializer", "value_deserializer"):
            with self.assertRaises(TypeError, msg=name):
                self.consumer(**{name: "json"})


class GroupDeserializerTests(GroupTestCase):
    def test_group_consumers_deserialize(self) -> None:
        self.cluster.append(TOPIC, 0, [b"[1, 2]"])
        seen: list[Any] = []
        g = ConsumerGroup(
            self.client("a"),
            "g",
            [TOPIC],
            lambda consumer, messages: seen.extend(m.message.value for m in messages),
            value_deserializer=json.loads,
            auto_offset_reset=OFFSET_EARLIEST,
        )
        self.groups.append(g)
        g.start()
        self.advance(5)
        self.assertEqual(seen, [[1, 2]])
        with self.assertRaises(TypeError):
            ConsumerGroup(self.client("b"), "g", [TOPIC], print, key_deserializer=3)

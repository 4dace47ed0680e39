"""afkak.common: value types, constants, client-side errors and __all__."""

from __future__ import annotations

import builtins
import copy
import pickle

from hypothesis import given, strategies as st
from twisted.internet.defer import Deferred
from twisted.trial.unittest import SynchronousTestCase

from afkak import common
from afkak.common import Message, SourcedMessage
from afkak.test.helpers import UTF8_CHARACTERS

# afkak 21's documented field order of every struct.
FIELDS = {
    "BrokerMetadata": ("node_id", "host", "port"),
    "ConsumerMetadataResponse": ("error", "node_id", "host", "port"),
    "FetchRequest": ("topic", "partition", "offset", "max_bytes"),
    "FetchResponse": ("topic", "partition", "error", "highwaterMark", "messages"),
    "Message": ("magic", "attributes", "key", "value"),
    "OffsetAndMessage": ("offset", "message"),
    "OffsetCommitRequest": ("topic", "partition", "offset", "timestamp", "metadata"),
    "OffsetCommitResponse": ("topic", "partition", "error"),
    "OffsetFetchRequest": ("topic", "partition"),
    "OffsetFetchResponse": ("topic", "partition", "offset", "metadata", "error"),
    "OffsetRequest": ("topic", "partition", "time", "max_offsets"),
    "OffsetResponse": ("topic", "partition", "error", "offsets"),
    "PartitionMetadata": (
        "topic",
        "partition",
        "partition_error_code",
        "leader",
        "replicas",
        "isr",
    ),
    "ProduceRequest": ("topic", "partition", "messages"),
    "ProduceResponse": ("topic", "partition", "error", "offset"),
    "SendRequest": ("topic", "key", "messages", "deferred"),
    "SourcedMessage": ("topic", "partition", "offset", "message"),
    "TopicAndPartition": ("topic", "partition"),
    "TopicMetadata": ("topic", "topic_error_code", "partition_metadata"),
}

# Client-side errors afkak 21 documents, and afkak's additions.
CLIENT_ERRORS = [
    "BufferUnderflowError",
    "CancelledError",
    "ChecksumError",
    "ClientError",
    "ConsumerFetchSizeTooSmall",
    "DuplicateRequestError",
    "FailedPayloadsError",
    "InvalidConsumerGroupError",
    "KafkaError",
    "KafkaUnavailableError",
    "LeaderUnavailableError",
    "NoResponseError",
    "OperationInProgress",
    "PartitionUnavailableError",
    "ProtocolError",
    "RestartError",
    "RestopError",
    "UnsupportedCodecError",
    "NoCommonVersionError",
    "BrokerConnectionError",
    "DecodeError",
    "EncodeError",
]


class StructTests(SynchronousTestCase):
    def test_field_order(self) -> None:
        for name, fields in FIELDS.items():
            cls = getattr(common, name)
            self.assertEqual(cls._fields, fields, name)
            self.assertIn(name, common.__all__)

    def test_tuple_unpacking(self) -> None:
        for name, fields in FIELDS.items():
            values = tuple(f"v{i}" for i in range(len(fields)))
            struct = getattr(common, name)(*values)
            self.assertIsInstance(struct, tuple)
            self.assertEqual(tuple(struct), values)
            self.assertEqual(struct, values)
            self.assertEqual([getattr(struct, field) for field in fields], list(values))
            self.assertEqual(struct[-1], values[-1])

    def test_pickle(self) -> None:
        request = common.FetchRequest("t", 1, 2, 3)
        self.assertEqual(pickle.loads(pickle.dumps(request)), request)
        self.assertEqual(
            repr(request), "FetchRequest(topic='t', partition=1, offset=2, max_bytes=3)"
        )


class MessageTests(SynchronousTestCase):
    def test_four_tuple(self) -> None:
        message = Message(0, 0, b"k", b"v", timestamp=1700000000000, headers=(("h", b"x"),))
        magic, attributes, key, value = message
        self.assertEqual((magic, attributes, key, value), (0, 0, b"k", b"v"))
        self.assertEqual(len(message), 4)
        self.assertEqual(message.timestamp, 1700000000000)
        self.assertEqual(message.headers, (("h", b"x"),))

    def test_defaults(self) -> None:
        message = Message(0, 0, None, b"v")
        self.assertIsNone(message.timestamp)
        self.assertEqual(message.headers, ())

    def test_extras_are_keyword_only(self) -> None:
        with self.assertRaises(TypeError):
            Message(0, 0, None, b"v", 5)  # type: ignore[misc]

    def test_headers_become_a_tuple(self) -> None:
        message = Message(0, 0, None, b"v", headers=[("a", None), ("b", b"2")])
        self.assertEqual(message.headers, (("a", None), ("b", b"2")))

    def test_equality_between_messages_includes_extras(self) -> None:
        base = Message(0, 0, b"k", b"v", timestamp=1, headers=(("a", b"1"),))
        self.assertEqual(base, Message(0, 0, b"k", b"v", timestamp=1, headers=(("a", b"1"),)))
        self.assertNotEqual(base, Message(0, 0, b"k", b"v", timestamp=2, headers=(("a", b"1"),)))
        self.assertNotEqual(base, Message(0, 0, b"k", b"v", timestamp=1))
        self.assertNotEqual(base, Message(0, 0, b"k", b"w", timestamp=1, headers=(("a", b"1"),)))
        self.assertFalse(base != Message(0, 0, b"k", b"v", timestamp=1, headers=(("a", b"1"),)))

    def test_equality_with_plain_tuple_is_on_four_fields(self) -> None:
        message = Message(0, 0, b"k", b"v", timestamp=1, headers=(("a", b"1"),))
        self.assertEqual(message, (0, 0, b"k", b"v"))
        self.assertEqual((0, 0, b"k", b"v"), message)
        self.assertNotEqual(message, (0, 0, b"k", b"w"))
        self.assertEqual(hash(message), hash((0, 0, b"k", b"v")))

    @given(
        st.one_of(st.none(), st.binary()),
        st.one_of(st.none(), st.binary()),
        st.one_of(st.none(), st.integers(0, 2**63 - 1)),
        st.lists(
            st.tuples(st.text(UTF8_CHARACTERS), st.one_of(st.none(), st.binary())), max_size=3
        ),
    )
    def test_copy_pickle_replace_round_trip(
        self,
        key: bytes | None,
        value: bytes | None,
        timestamp: int | None,
        headers: list[tuple[str, bytes | None]],
    ) -> None:
        message = Message(2, 0, key, value, timestamp=timestamp, headers=headers)
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            clone = pickle.loads(pickle.dumps(message, protocol))
            self.assertEqual(clone, message)
            self.assertEqual((clone.timestamp, clone.headers), (timestamp, tuple(headers)))
        self.assertEqual(copy.deepcopy(message), message)
        self.assertEqual(message._replace(), message)
        self.assertEqual(message._replace(value=b"x").value, b"x")
        self.assertEqual(message._replace(value=b"x").timestamp, timestamp)

    def test_replace_extras(self) -> None:
        message = Message(0, 0, None, b"v", timestamp=5)
        self.assertIsNone(message._replace(timestamp=None).timestamp)
        self.assertEqual(message._replace(headers=(("a", b""),)).headers, (("a", b""),))
        with self.assertRaises(ValueError):
            message._replace(nope=1)

    def test_repr(self) -> None:
        self.assertEqual(
            repr(Message(0, 0, None, b"v")), "Message(magic=0, attributes=0, key=None, value=b'v')"
        )
        self.assertEqual(
            repr(Message(2, 0, b"k", None, timestamp=3, headers=(("h", None),))),
            "Message(magic=2, attributes=0, key=b'k', value=None, timestamp=3, "
            "headers=(('h', None),))",
        )

    def test_sourced_message_exposes_extras(self) -> None:
        sourced = SourcedMessage(
            "t", 0, 41, Message(2, 0, None, b"v", timestamp=9, headers=(("h", b"1"),))
        )
        _topic, _partition, offset, message = sourced
        self.assertEqual(offset, 41)
        self.assertEqual(sourced.message.timestamp, 9)
        self.assertEqual(message.headers, (("h", b"1"),))


class ConstantTests(SynchronousTestCase):
    def test_values(self) -> None:
        self.assertEqual(
            (common.OFFSET_EARLIEST, common.OFFSET_LATEST, common.OFFSET_COMMITTED),
            (-2, -1, -101),
        )
        self.assertEqual(common.KAFKA_SUCCESS, 0)
        self.assertEqual(
            (
                common.PRODUCER_ACK_NOT_REQUIRED,
                common.PRODUCER_ACK_LOCAL_WRITE,
                common.PRODUCER_ACK_ALL_REPLICAS,
            ),
            (0, 1, -1),
        )
        self.assertEqual((common.TIMESTAMP_CREATE_TIME, common.TIMESTAMP_LOG_APPEND_TIME), (0, 1))


class ClientErrorTests(SynchronousTestCase):
    def test_all_exported(self) -> None:
        for name in CLIENT_ERRORS:
            cls = getattr(common, name)
            self.assertTrue(issubclass(cls, common.KafkaError), name)
            self.assertIn(name, common.__all__)

    def test_cancelled_error(self) -> None:
        error = common.CancelledError(request_sent=True, message="client closed")
        self.assertIs(error.request_sent, True)
        self.assertEqual(error.message, "client closed")
        self.assertIn("client closed", str(error))
        default = common.CancelledError()
        self.assertIsNone(default.request_sent)
        self.assertIsNone(default.message)
        self.assertFalse(common.CancelledError(False).request_sent)

    def test_operation_in_progress(self) -> None:
        d: Deferred[None] = Deferred()
        self.assertIs(common.OperationInProgress(d).deferred, d)
        self.assertIsNone(common.OperationInProgress().deferred)

    def test_failed_payloads(self) -> None:
        failure = (common.ProduceRequest("t", 0, []), common.NotLeaderForPartitionError())
        error = common.FailedPayloadsError(["ok"], [failure])
        self.assertEqual(error.responses, ["ok"])
        self.assertEqual(error.failed_payloads, [failure])

    def test_retriable(self) -> None:
        self.assertTrue(common.BrokerConnectionError("lost").retriable)
        self.assertTrue(issubclass(common.BrokerConnectionError, common.ClientError))
        self.assertTrue(issubclass(common.BrokerConnectionError, common.ConnectionError))
        self.assertTrue(common.LeaderUnavailableError.retriable)
        self.assertTrue(common.PartitionUnavailableError.retriable)
        self.assertFalse(common.NoCommonVersionError.retriable)
        self.assertFalse(common.KafkaError.retriable)

    def test_no_common_version_is_not_the_broker_error(self) -> None:
        self.assertTrue(issubclass(common.NoCommonVersionError, common.ClientError))
        self.assertFalse(issubclass(common.NoCommonVersionError, common.UnsupportedVersion))

    def test_restart_errors_are_client_errors(self) -> None:
        self.assertTrue(issubclass(common.RestartError, common.ClientError))
        self.assertTrue(issubclass(common.RestopError, common.ClientError))

    def test_buffer_underflow_is_a_decode_error(self) -> None:
        self.assertTrue(issubclass(common.BufferUnderflowError, common.DecodeError))
        self.assertEqual(common.BufferUnderflowError("short", offset=3).offset, 3)

    def test_connection_error_not_star_exported(self) -> None:
        self.assertNotIn("ConnectionError", common.__all__)
        self.assertIsNot(common.ConnectionError, builtins.ConnectionError)
        namespace: dict[str, object] = {}
        exec("from afkak.common import *", namespace)
        self.assertNotIn("ConnectionError", namespace)
        self.assertIs(namespace["Message"], Message)


class AllTests(SynchronousTestCase):
    def test_all_names_exist_and_are_unique(self) -> None:
        self.assertEqual(len(common.__all__), len(set(common.__all__)))
        for name in common.__all__:
            self.assertTrue(hasattr(common, name), name)

    def test_no_helpers_leak(self) -> None:
        for name in ("annotations", "Any", "ClassVar", "namedtuple", "TYPE_CHECKING"):
            self.assertNotIn(name, common.__all__)

"""One rule for bad arguments across the public surface (issue 20 item 9): a wrong
argument raises TypeError/ValueError *at the call*, never as a failed Deferred.

Each row names a call and the argument it gets wrong; the test makes the call
and requires the exception to be raised before the call returns.  Nothing may
reach the (fake) cluster.
"""

from __future__ import annotations

import unittest
from collections.abc import Callable
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from afkak import (
    TLS,
    Consumer,
    ConsumerGroup,
    HashedPartitioner,
    KafkaClient,
    Plain,
    Producer,
    ScramSha256,
    create_message,
    create_message_set,
)
from afkak.admin import (
    AbortTransactionSpec,
    ConfigResource,
    ElectionType,
    FeatureUpdate,
    KafkaAdminClient,
    NewTopic,
    QuotaEntity,
    QuotaFilter,
    QuotaMatch,
)
from afkak.common import (
    FetchRequest,
    ProduceRequest,
    TopicAndPartition,
    UnsupportedCodecError,
)
from afkak.group import committed_offsets, describe_group, group_lag
from afkak.test.test_admin import on_fake_cluster

TP = TopicAndPartition


def _processor(consumer: Any, messages: Any) -> None:
    pass


class Surface:
    """The public objects, built against one fake cluster, that the rows call."""

    def __init__(self, case: unittest.TestCase) -> None:
        self.clock, self.cluster, self.client = on_fake_cluster(case)  # type: ignore[arg-type]
        self.admin = KafkaAdminClient(self.client)
        self.producer = Producer(self.client)
        self.consumer = Consumer(self.client, "t", 0, _processor)


Row = tuple[str, Callable[[Surface], Any], type[Exception]]

#: (what is wrong, the call, the exception it must raise at once)
ROWS: list[Row] = [
    # KafkaClient
    ("KafkaClient hosts an int", lambda s: KafkaClient(9092), TypeError),
    ("KafkaClient timeout negative", lambda s: KafkaClient("h:9092", timeout=-1), ValueError),
    ("KafkaClient tls not a TLS", lambda s: KafkaClient("h:9092", tls="yes"), TypeError),
    ("KafkaClient sasl not a mechanism", lambda s: KafkaClient("h:9092", sasl="x"), TypeError),
    (
        "load_metadata_for_topics a bad name",
        lambda s: s.client.load_metadata_for_topics("bad name!"),
        ValueError,
    ),
    ("load_coordinator_for_group int", lambda s: s.client.load_coordinator_for_group(3), TypeError),
    (
        "send_produce_request payload not a ProduceRequest",
        lambda s: s.client.send_produce_request([("t", 0, [])]),
        TypeError,
    ),
    (
        "send_produce_request acks",
        lambda s: s.client.send_produce_request(
            [ProduceRequest("t", 0, [create_message(b"v")])], acks=7
        ),
        ValueError,
    ),
    (
        "send_fetch_request negative offset",
        lambda s: s.client.send_fetch_request([FetchRequest("t", 0, -5, 1024)]),
        ValueError,
    ),
    (
        "send_fetch_request isolation level",
        lambda s: s.client.send_fetch_request(
            [FetchRequest("t", 0, 0, 1024)], isolation_level="dirty"
        ),
        ValueError,
    ),
    (
        "send_offset_request payload a tuple",
        lambda s: s.client.send_offset_request([("t", 0, -1, 1)]),
        TypeError,
    ),
    (
        "send_offset_commit_request group int",
        lambda s: s.client.send_offset_commit_request(5, []),
        TypeError,
    ),
    (
        "send_offset_fetch_request group empty",
        lambda s: s.client.send_offset_fetch_request("", []),
        ValueError,
    ),
    # TLS and SASL values
    ("TLS missing CA file", lambda s: TLS(trust_root="/nonexistent/ca.pem"), ValueError),
    ("TLS handshake timeout", lambda s: TLS(handshake_timeout=0), ValueError),
    ("Plain username int", lambda s: Plain(1, "p"), TypeError),
    ("ScramSha256 password None", lambda s: ScramSha256("u", None), TypeError),
    # the admin client
    ("KafkaAdminClient not a client", lambda s: KafkaAdminClient("client"), TypeError),
    ("admin delete_topics a str", lambda s: s.admin.delete_topics("or"), TypeError),
    ("admin create_topics names", lambda s: s.admin.create_topics(["t"]), TypeError),
    (
        "admin create_topics bad name",
        lambda s: s.admin.create_topics([NewTopic("a b")]),
        ValueError,
    ),
    ("admin describe_topics bytes", lambda s: s.admin.describe_topics(b"t"), TypeError),
    (
        "admin describe_configs broker name",
        lambda s: s.admin.describe_configs([ConfigResource.broker("x")]),
        ValueError,
    ),
    ("admin list_offsets tuple key", lambda s: s.admin.list_offsets({("t", 0): -1}), TypeError),
    ("admin list_offsets time", lambda s: s.admin.list_offsets({TP("t", 0): -7}), ValueError),
    ("admin delete_records list", lambda s: s.admin.delete_records([TP("t", 0)]), TypeError),
    (
        "admin describe_consumer_groups a str",
        lambda s: s.admin.describe_consumer_groups("g"),
        TypeError,
    ),
    ("admin group_lag topics a str", lambda s: s.admin.group_lag("g", "t"), TypeError),
    (
        "admin plan_offset_reset two targets",
        lambda s: s.admin.plan_offset_reset("g", ["t"], to_earliest=True, to_latest=True),
        ValueError,
    ),
    ("admin describe_producers a str", lambda s: s.admin.describe_producers("t"), TypeError),
    (
        "admin describe_producers broker_id",
        lambda s: s.admin.describe_producers([TP("t", 0)], broker_id=-1),
        ValueError,
    ),
    (
        "admin list_transactions states str",
        lambda s: s.admin.list_transactions(states="x"),
        TypeError,
    ),
    (
        "admin list_transactions producer id",
        lambda s: s.admin.list_transactions(producer_ids=[-2]),
        ValueError,
    ),
    ("admin list_transactions pattern", lambda s: s.admin.list_transactions(pattern=1), TypeError),
    ("admin describe_transactions a str", lambda s: s.admin.describe_transactions("x"), TypeError),
    (
        "admin abort_transaction a partition",
        lambda s: s.admin.abort_transaction(TP("t", 0)),
        TypeError,
    ),
    (
        "admin abort_transaction epoch",
        lambda s: s.admin.abort_transaction(AbortTransactionSpec(TP("t", 0), 1, -3, 0)),
        ValueError,
    ),
    ("admin describe_log_dirs a broker str", lambda s: s.admin.describe_log_dirs(["1"]), TypeError),
    ("admin describe_log_dirs an int", lambda s: s.admin.describe_log_dirs(1), TypeError),
    ("admin update_features a list", lambda s: s.admin.update_features(["x"]), TypeError),
    ("admin update_features none", lambda s: s.admin.update_features({}), ValueError),
    (
        "admin update_features level",
        lambda s: s.admin.update_features({"transaction.version": -1}),
        ValueError,
    ),
    (
        "admin update_features upgrade type",
        lambda s: s.admin.update_features({"x": FeatureUpdate(1, 9)}),  # type: ignore[arg-type]
        ValueError,
    ),
    (
        "admin describe_client_quotas a filter str",
        lambda s: s.admin.describe_client_quotas(["user"]),
        TypeError,
    ),
    (
        "admin describe_client_quotas entity type",
        lambda s: s.admin.describe_client_quotas([QuotaFilter("group")]),
        ValueError,
    ),
    (
        "admin describe_client_quotas exact without a name",
        lambda s: s.admin.describe_client_quotas([QuotaFilter("user", QuotaMatch.EXACT)]),
        ValueError,
    ),
    (
        "admin alter_client_quotas dict key",
        lambda s: s.admin.alter_client_quotas({"user": {"producer_byte_rate": 1.0}}),
        TypeError,
    ),
    (
        "admin alter_client_quotas value",
        lambda s: s.admin.alter_client_quotas(
            {QuotaEntity({"user": "a"}): {"producer_byte_rate": -1}}
        ),
        ValueError,
    ),
    (
        "admin alter_partition_reassignments a list",
        lambda s: s.admin.alter_partition_reassignments([TP("t", 0)]),
        TypeError,
    ),
    (
        "admin alter_partition_reassignments repeated broker",
        lambda s: s.admin.alter_partition_reassignments({TP("t", 0): [1, 1]}),
        ValueError,
    ),
    (
        "admin alter_partition_reassignments no broker",
        lambda s: s.admin.alter_partition_reassignments({TP("t", 0): []}),
        ValueError,
    ),
    (
        "admin list_partition_reassignments a str",
        lambda s: s.admin.list_partition_reassignments("t"),
        TypeError,
    ),
    ("admin elect_leaders election type", lambda s: s.admin.elect_leaders(5), ValueError),
    (
        "admin elect_leaders a tuple partition",
        lambda s: s.admin.elect_leaders(ElectionType.PREFERRED, [("t", 0)]),
        TypeError,
    ),
    (
        "admin find_hanging_transactions both",
        lambda s: s.admin.find_hanging_transactions(partitions=["t"], broker_id=1),
        ValueError,
    ),
    (
        "admin find_hanging_transactions neither",
        lambda s: s.admin.find_hanging_transactions(),
        ValueError,
    ),
    (
        "admin find_hanging_transactions timeout",
        lambda s: s.admin.find_hanging_transactions(broker_id=1, max_transaction_timeout_ms=-1),
        ValueError,
    ),
    # the group helpers
    ("describe_group int", lambda s: describe_group(s.client, 3), TypeError),
    ("committed_offsets empty group", lambda s: committed_offsets(s.client, ""), ValueError),
    ("group_lag group None", lambda s: group_lag(s.client, None), TypeError),
    # Consumer
    ("Consumer partition negative", lambda s: Consumer(s.client, "t", -1, _processor), ValueError),
    ("Consumer processor", lambda s: Consumer(s.client, "t", 0, "p"), TypeError),
    ("Consumer topic bytes", lambda s: Consumer(s.client, b"t", 0, _processor), TypeError),
    (
        "Consumer auto_commit_every_s infinite",
        lambda s: setattr(s.consumer, "auto_commit_every_s", float("inf")),
        ValueError,
    ),
    ("Consumer start offset", lambda s: s.consumer.start("0"), TypeError),
    # ConsumerGroup
    (
        "ConsumerGroup group int",
        lambda s: ConsumerGroup(s.client, 1, ["t"], _processor),
        TypeError,
    ),
    (
        "ConsumerGroup topics bytes",
        lambda s: ConsumerGroup(s.client, "g", b"t", _processor),
        TypeError,
    ),
    (
        "ConsumerGroup processor",
        lambda s: ConsumerGroup(s.client, "g", ["t"], None),
        TypeError,
    ),
    (
        "ConsumerGroup session timeout",
        lambda s: ConsumerGroup(s.client, "g", ["t"], _processor, session_timeout_ms=-1),
        ValueError,
    ),
    # Producer
    ("Producer not a client", lambda s: Producer("client"), TypeError),
    ("Producer req_acks", lambda s: Producer(s.client, req_acks=7), ValueError),
    ("Producer codec", lambda s: Producer(s.client, codec=99), ValueError),
    # messages and partitioners
    ("create_message payload str", lambda s: create_message("v"), TypeError),
    # (afkak 21.5's error for an unknown codec, kept)
    ("create_message_set codec", lambda s: create_message_set([], codec=99), UnsupportedCodecError),
    (
        "HashedPartitioner without a key",
        lambda s: HashedPartitioner("t", [0]).partition(None, [0]),
        TypeError,
    ),
]

#: The producer's sends: afkak 21.5 returned failed Deferreds for these; they raise now.
PRODUCER_ROWS: list[Row] = [
    ("Producer.send topic int", lambda s: s.producer.send(5, b"v"), TypeError),
    ("Producer.send value str", lambda s: s.producer.send("t", "v"), TypeError),
    ("Producer.send key int", lambda s: s.producer.send("t", b"v", key=1), TypeError),
    ("Producer.send partition", lambda s: s.producer.send("t", b"v", partition=-1), TypeError),
    ("Producer.send headers", lambda s: s.producer.send("t", b"v", headers=[(1, b"")]), TypeError),
    (
        "Producer.send_messages msgs bytes",
        lambda s: s.producer.send_messages("t", msgs=b"v"),
        TypeError,
    ),
    (
        "Producer.send_messages no msgs",
        lambda s: s.producer.send_messages("t", msgs=[]),
        ValueError,
    ),
    (
        "Producer.send_messages key str",
        lambda s: s.producer.send_messages("t", "k", [b"v"]),
        TypeError,
    ),
]


def _slug(what: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in what.lower())


def _row_test(row: Row) -> Callable[[Any], None]:
    what, call, expected = row

    def test(self: Any) -> None:
        surface = Surface(self)
        with self.assertRaises(expected):
            outcome = call(surface)
            # A returned (failed) Deferred does not count; its failure is consumed
            # so that it is not logged as unhandled.
            if hasattr(outcome, "addErrback"):
                outcome.addErrback(lambda _: None)
        self.assertEqual(surface.cluster.requests_seen, [])

    test.__doc__ = f"{what}: {expected.__name__} at the call"
    return test


class BadArgumentsRaiseAtTheCall(SynchronousTestCase):
    """One test per row (``test_<row>``), generated below."""

    def test_correct_calls_on_the_same_objects_do_not_raise(self) -> None:
        surface = Surface(self)
        surface.admin.describe_topics(["t"]).addErrback(lambda _: None)
        surface.producer.send("t", b"v").addErrback(lambda _: None)
        surface.producer.send_messages("t", None, [b"v"]).addErrback(lambda _: None)


for _row in ROWS + PRODUCER_ROWS:
    setattr(BadArgumentsRaiseAtTheCall, f"test_{_slug(_row[0])}", _row_test(_row))

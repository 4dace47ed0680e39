"""The public surface afkak users write against stays importable from where afkak 21.5 had it."""

from __future__ import annotations

import importlib
import unittest

import afkak

#: module -> names users import from it (afkak 21.5's documented API, and what we added).
SURFACE = {
    "afkak": [
        "KafkaClient",
        "Producer",
        "Consumer",
        "ConsumerGroup",
        "KafkaConsumer",
        "ShareConsumer",
        "AcknowledgeType",
        "create_message",
        "create_message_set",
        "CODEC_NONE",
        "CODEC_GZIP",
        "CODEC_SNAPPY",
        "CODEC_LZ4",
        "CODEC_ZSTD",
        "OFFSET_EARLIEST",
        "OFFSET_LATEST",
        "OFFSET_COMMITTED",
        "HashedPartitioner",
        "RoundRobinPartitioner",
        "TLS",
        "KeyStore",
        "TrustStore",
        "GSSAPI",
        "Plain",
        "Scram",
        "ScramSha256",
        "ScramSha512",
        "OAuthBearer",
        "OAuthBearerToken",
    ],
    "afkak.client": ["KafkaClient"],
    "afkak.consumer": ["Consumer", "OffsetAndMetadata"],
    "afkak.producer": ["Producer", "RecordMetadata", "ConsumerGroupMetadata", "TransactionState"],
    "afkak.partitioner": ["RoundRobinPartitioner", "HashedPartitioner", "murmur2"],
    "afkak.group": [
        "ConsumerGroup",
        "KafkaConsumer",
        "RangeAssignor",
        "RoundRobinAssignor",
        "describe_group",
        "list_groups",
        "committed_offsets",
        "group_lag",
        "TransactionalProcessor",
    ],
    "afkak.admin": [
        "KafkaAdminClient",
        "NewTopic",
        "NewPartitions",
        "ConfigResource",
        "ConfigChange",
        "AlterOp",
        "OffsetSpec",
        "IsolationLevel",
        "AclBinding",
        "ScramUpsertion",
        "ScramDeletion",
    ],
    "afkak.cli": ["main"],
    "afkak.codec": ["CODEC_NONE", "has_snappy", "compress", "decompress"],
    "afkak.testing": ["FakeKafkaCluster", "EmbeddedBroker", "EmbeddedBrokerUnavailable"],
    "afkak.common": [
        "OFFSET_EARLIEST",
        "OFFSET_LATEST",
        "OFFSET_COMMITTED",
        "KafkaError",
        "BrokerResponseError",
        "RetriableBrokerResponseError",
        "ClientError",
        "CancelledError",
        "FailedPayloadsError",
        "OperationInProgress",
        "RestartError",
        "RestopError",
        "UnsupportedCodecError",
        "ProduceRequest",
        "FetchRequest",
        "OffsetRequest",
        "OffsetCommitRequest",
        "OffsetFetchRequest",
        "TopicAndPartition",
        "SourcedMessage",
        "Message",
        "BrokerMetadata",
        "PartitionMetadata",
        "TopicMetadata",
        "OffsetAndMessage",
    ],
}


class PublicSurfaceTests(unittest.TestCase):
    def test_names_importable(self) -> None:
        missing = [
            f"{module}.{name}"
            for module, names in SURFACE.items()
            for name in names
            if not hasattr(importlib.import_module(module), name)
        ]
        self.assertEqual(missing, [])

    def test_top_level_all_is_the_surface(self) -> None:
        self.assertEqual(set(afkak.__all__) - {"__version__", "MessageSet"}, set(SURFACE["afkak"]))

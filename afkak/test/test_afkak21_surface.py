"""afkak 21.5's whole public surface imports from this afkak, with the documented exceptions.

The expected names were generated once from afkak 21.5.0.post0's source (its
public modules' top-level names, each public class's constructor parameters,
methods and class attributes, the request/response tuples' fields, and the
instance attributes its main classes set) and are data here: afkak 21 is not
imported.  What afkak no longer has is listed in :data:`EXCEPTIONS`, the one
place, each with what replaces it; docs/changes-from-afkak-21.rst names each.
"""

from __future__ import annotations

import importlib
import inspect
import os
from typing import Any

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

import afkak
from afkak.client import KafkaClient
from afkak.consumer import Consumer
from afkak.group import ConsumerGroup
from afkak.producer import Producer
from afkak.testing import FakeKafkaCluster

_KAFKACODEC_REPLACEMENT = (
    "afkak.protocol: request and response classes generated from Kafka's schemas, "
    "sent with KafkaClient.send_request_to_broker / send_request_to_any_broker"
)

#: afkak 21.5 name -> what replaces it.  The only names allowed to be missing.
EXCEPTIONS: dict[str, str] = {
    "afkak.client.log": "twisted.logger: afkak logs with Logger(), not the logging module",
    "afkak.consumer.log": "twisted.logger",
    "afkak.producer.log": "twisted.logger",
    "afkak.kafkacodec.log": "twisted.logger",
    "afkak.brokerclient.log": "twisted.logger",
    "afkak.KafkaClient.close_dlist": "KafkaClient.close() returns the Deferred to wait on",
    "afkak.Consumer.retry_delay": "the retry policy's delays (retry_init_delay, retry_max_delay)",
    **{
        f"afkak.kafkacodec.KafkaCodec.{name}": _KAFKACODEC_REPLACEMENT
        for name in [
            "get_response_correlation_id",
            *(
                f"{verb}_{what}"
                for verb, whats in [
                    (
                        "encode",
                        [
                            "produce_request",
                            "fetch_request",
                            "offset_request",
                            "metadata_request",
                            "consumermetadata_request",
                            "offset_commit_request",
                            "offset_fetch_request",
                            "join_group_request",
                            "join_group_protocol_metadata",
                            "leave_group_request",
                            "heartbeat_request",
                            "sync_group_request",
                            "sync_group_member_assignment",
                        ],
                    ),
                    (
                        "decode",
                        [
                            "produce_response",
                            "fetch_response",
                            "offset_response",
                            "metadata_response",
                            "consumermetadata_response",
                            "offset_commit_response",
                            "offset_fetch_response",
                            "join_group_protocol_metadata",
                            "join_group_response",
                            "leave_group_response",
                            "heartbeat_response",
                            "sync_group_response",
                            "sync_group_member_assignment",
                        ],
                    ),
                ]
                for what in whats
            ),
        ]
    },
}

#: afkak 21.5 module -> its public top-level names.
NAMES = {
    "afkak": [
        "CODEC_GZIP",
        "CODEC_LZ4",
        "CODEC_NONE",
        "CODEC_SNAPPY",
        "Consumer",
        "ConsumerGroup",
        "HashedPartitioner",
        "KafkaClient",
        "OFFSET_COMMITTED",
        "OFFSET_EARLIEST",
        "OFFSET_LATEST",
        "Producer",
        "RoundRobinPartitioner",
        "__author__",
        "__license__",
        "__title__",
        "__version__",
        "create_message",
        "create_message_set",
    ],
    "afkak.brokerclient": ["INIT_DELAY_SECONDS", "MAX_RECONNECT_DELAY_SECONDS", "log"],
    "afkak.client": ["KafkaClient", "log"],
    "afkak.codec": [
        "gzip_decode",
        "gzip_encode",
        "has_gzip",
        "has_snappy",
        "snappy_decode",
        "snappy_encode",
    ],
    "afkak.common": [
        "BrokerMetadata",
        "BrokerNotAvailableError",
        "BrokerResponseError",
        "BufferUnderflowError",
        "CODEC_GZIP",
        "CODEC_LZ4",
        "CODEC_NONE",
        "CODEC_SNAPPY",
        "CancelledError",
        "ChecksumError",
        "ClientError",
        "ClusterAuthorizationFailed",
        "ConcurrentTransactions",
        "ConnectionError",
        "ConsumerCoordinatorNotAvailableError",
        "ConsumerFetchSizeTooSmall",
        "ConsumerMetadataResponse",
        "CoordinatorLoadInProgress",
        "CoordinatorNotAvailable",
        "CorruptMessage",
        "DefaultKafkaPort",
        "DelegationTokenAuthDisabled",
        "DelegationTokenAuthorizationFailed",
        "DelegationTokenExpired",
        "DelegationTokenNotFound",
        "DelegationTokenOwnerMismatch",
        "DelegationTokenRequestNotAllowed",
        "DuplicateRequestError",
        "DuplicateSequenceNumber",
        "FailedPayloadsError",
        "FetchRequest",
        "FetchResponse",
        "FetchSessionIdNotFound",
        "GroupAuthorizationFailed",
        "GroupIdNotFound",
        "IllegalGeneration",
        "IllegalSaslState",
        "InconsistentGroupProtocol",
        "InvalidCommitOffsetSize",
        "InvalidConfig",
        "InvalidConsumerGroupError",
        "InvalidFetchRequestError",
        "InvalidFetchSessionEpoch",
        "InvalidGroupId",
        "InvalidMessageError",
        "InvalidPartitions",
        "InvalidPrincipalType",
        "InvalidProducerEpoch",
        "InvalidProducerIdMapping",
        "InvalidReplicaAssignment",
        "InvalidReplicationFactor",
        "InvalidRequest",
        "InvalidRequiredAcks",
        "InvalidSessionTimeout",
        "InvalidTimestamp",
        "InvalidTopic",
        "InvalidTransactionTimeout",
        "InvalidTxnState",
        "KAFKA_SUCCESS",
        "KafkaError",
        "KafkaStorageError",
        "KafkaUnavailableError",
        "LeaderNotAvailableError",
        "LeaderUnavailableError",
        "ListenerNotFound",
        "LogDirNotFound",
        "Message",
        "MessageSizeTooLargeError",
        "NetworkException",
        "NoResponseError",
        "NonEmptyGroup",
        "NotController",
        "NotCoordinator",
        "NotCoordinatorForConsumerError",
        "NotEnoughReplicas",
        "NotEnoughReplicasAfterAppend",
        "NotLeaderForPartitionError",
        "OFFSET_COMMITTED",
        "OFFSET_EARLIEST",
        "OFFSET_LATEST",
        "OFFSET_NOT_COMMITTED",
        "OffsetAndMessage",
        "OffsetCommitRequest",
        "OffsetCommitResponse",
        "OffsetFetchRequest",
        "OffsetFetchResponse",
        "OffsetMetadataTooLargeError",
        "OffsetOutOfRangeError",
        "OffsetRequest",
        "OffsetResponse",
        "OffsetsLoadInProgressError",
        "OperationInProgress",
        "OperationNotAttempted",
        "OutOfOrderSequenceNumber",
        "PRODUCER_ACK_ALL_REPLICAS",
        "PRODUCER_ACK_LOCAL_WRITE",
        "PRODUCER_ACK_NOT_REQUIRED",
        "PartitionMetadata",
        "PartitionUnavailableError",
        "PolicyViolation",
        "ProduceRequest",
        "ProduceResponse",
        "ProtocolError",
        "ReassignmentInProgress",
        "RebalanceInProgress",
        "RecordListTooLarge",
        "ReplicaNotAvailableError",
        "RequestTimedOutError",
        "RestartError",
        "RestopError",
        "RetriableBrokerResponseError",
        "SaslAuthenticationFailed",
        "SecurityDisabled",
        "SendRequest",
        "SourcedMessage",
        "StaleControllerEpochError",
        "StaleLeaderEpochCodeError",
        "TIMESTAMP_INVALID",
        "TopicAlreadyExists",
        "TopicAndPartition",
        "TopicAuthorizationFailed",
        "TopicMetadata",
        "TransactionCoordinatorFenced",
        "TransactionalIdAuthorizationFailed",
        "UnknownError",
        "UnknownMemberId",
        "UnknownProducerId",
        "UnknownTopicOrPartitionError",
        "UnsupportedCodecError",
        "UnsupportedForMessageFormat",
        "UnsupportedSaslMechanism",
        "UnsupportedVersion",
    ],
    "afkak.consumer": [
        "AUTO_COMMIT_INTERVAL",
        "AUTO_COMMIT_MSG_COUNT",
        "Consumer",
        "FETCH_BUFFER_SIZE_BYTES",
        "FETCH_MAX_WAIT_TIME",
        "FETCH_MIN_BYTES",
        "REQUEST_RETRY_FACTOR",
        "REQUEST_RETRY_MAX_DELAY",
        "REQUEST_RETRY_MIN_DELAY",
        "log",
    ],
    "afkak.kafkacodec": [
        "ATTRIBUTE_CODEC_MASK",
        "DEFAULT_REPLICAS_ACK_TIMEOUT_MSECS",
        "KafkaCodec",
        "MAX_BROKERS",
        "create_gzip_message",
        "create_message",
        "create_message_set",
        "create_snappy_message",
        "log",
    ],
    "afkak.partitioner": [
        "HashedPartitioner",
        "Partitioner",
        "RoundRobinPartitioner",
        "pure_murmur2",
    ],
    "afkak.producer": [
        "BATCH_SEND_MSG_BYTES",
        "BATCH_SEND_MSG_COUNT",
        "BATCH_SEND_SECS_COUNT",
        "Producer",
        "log",
    ],
}

#: afkak 21.5 class -> its constructor parameters and public methods / class attributes.
CLASSES = {
    "afkak.client.KafkaClient": {
        "attrs": [
            "DEFAULT_FETCH_MIN_BYTES",
            "DEFAULT_FETCH_SERVER_WAIT_MSECS",
            "DEFAULT_REPLICAS_ACK_MSECS",
            "DEFAULT_REQUEST_TIMEOUT_MSECS",
            "clientId",
            "clock",
            "close",
            "consumer_group_to_brokers",
            "has_metadata_for_topic",
            "load_consumer_metadata_for_group",
            "load_coordinator_for_group",
            "load_metadata_for_topics",
            "metadata_error_for_topic",
            "partition_fully_replicated",
            "reset_all_metadata",
            "reset_consumer_group_metadata",
            "reset_topic_metadata",
            "send_fetch_request",
            "send_offset_commit_request",
            "send_offset_fetch_request",
            "send_offset_request",
            "send_produce_request",
            "topic_fully_replicated",
            "update_cluster_hosts",
        ],
        "init": [
            "hosts",
            "clientId",
            "timeout",
            "disconnect_on_timeout",
            "correlation_id",
            "reactor",
            "endpoint_factory",
            "retry_policy",
        ],
    },
    "afkak.common.BrokerNotAvailableError": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.BrokerResponseError": {
        "attrs": ["message", "raise_for_errno", "retriable"],
        "init": [],
    },
    "afkak.common.CancelledError": {
        "attrs": [],
        "init": ["request_sent", "message"],
    },
    "afkak.common.ClusterAuthorizationFailed": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.ConcurrentTransactions": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.CoordinatorLoadInProgress": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.CoordinatorNotAvailable": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.CorruptMessage": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.DelegationTokenAuthDisabled": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.DelegationTokenAuthorizationFailed": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.DelegationTokenExpired": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.DelegationTokenNotFound": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.DelegationTokenOwnerMismatch": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.DelegationTokenRequestNotAllowed": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.DuplicateSequenceNumber": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.FailedPayloadsError": {
        "attrs": ["failed_payloads", "responses"],
        "init": [],
    },
    "afkak.common.FetchSessionIdNotFound": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.GroupAuthorizationFailed": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.GroupIdNotFound": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.IllegalGeneration": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.IllegalSaslState": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InconsistentGroupProtocol": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidCommitOffsetSize": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidConfig": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidFetchRequestError": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidFetchSessionEpoch": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidGroupId": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidPartitions": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidPrincipalType": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidProducerEpoch": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidProducerIdMapping": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidReplicaAssignment": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidReplicationFactor": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidRequest": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidRequiredAcks": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidSessionTimeout": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidTimestamp": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidTopic": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidTransactionTimeout": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.InvalidTxnState": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.KafkaStorageError": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.LeaderNotAvailableError": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.ListenerNotFound": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.LogDirNotFound": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.MessageSizeTooLargeError": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.NetworkException": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.NonEmptyGroup": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.NotController": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.NotCoordinator": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.NotEnoughReplicas": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.NotEnoughReplicasAfterAppend": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.NotLeaderForPartitionError": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.OffsetMetadataTooLargeError": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.OffsetOutOfRangeError": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.OperationInProgress": {
        "attrs": [],
        "init": ["deferred"],
    },
    "afkak.common.OperationNotAttempted": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.OutOfOrderSequenceNumber": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.PolicyViolation": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.ReassignmentInProgress": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.RebalanceInProgress": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.RecordListTooLarge": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.ReplicaNotAvailableError": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.RequestTimedOutError": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.RetriableBrokerResponseError": {
        "attrs": ["retriable"],
        "init": [],
    },
    "afkak.common.SaslAuthenticationFailed": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.SecurityDisabled": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.StaleControllerEpochError": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.TopicAlreadyExists": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.TopicAuthorizationFailed": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.TransactionCoordinatorFenced": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.TransactionalIdAuthorizationFailed": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.UnknownError": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.UnknownMemberId": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.UnknownProducerId": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.UnknownTopicOrPartitionError": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.UnsupportedForMessageFormat": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.UnsupportedSaslMechanism": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.common.UnsupportedVersion": {
        "attrs": ["errno", "message"],
        "init": [],
    },
    "afkak.consumer.Consumer": {
        "attrs": [
            "commit",
            "last_committed_offset",
            "last_processed_offset",
            "shutdown",
            "start",
            "stop",
        ],
        "init": [
            "client",
            "topic",
            "partition",
            "processor",
            "consumer_group",
            "commit_metadata",
            "auto_commit_every_n",
            "auto_commit_every_ms",
            "fetch_size_bytes",
            "fetch_max_wait_time",
            "buffer_size",
            "max_buffer_size",
            "request_retry_init_delay",
            "request_retry_max_delay",
            "request_retry_max_attempts",
            "auto_offset_reset",
            "commit_consumer_id",
            "commit_generation_id",
        ],
    },
    "afkak.kafkacodec.KafkaCodec": {
        "attrs": [
            "API_VERSIONS_KEY",
            "CONSUMER_METADATA_KEY",
            "CREATE_TOPICS_KEY",
            "DELETE_TOPICS_KEY",
            "DESCRIBE_GROUP_KEY",
            "FETCH_KEY",
            "FIND_COORDINATOR_KEY",
            "HEARTBEAT_KEY",
            "JOIN_GROUP_KEY",
            "LEAVE_GROUP_KEY",
            "LIST_GROUPS_KEY",
            "METADATA_KEY",
            "OFFSET_COMMIT_KEY",
            "OFFSET_FETCH_KEY",
            "OFFSET_KEY",
            "PRODUCE_KEY",
            "SASL_HANDSHAKE_KEY",
            "SYNC_GROUP_KEY",
            "decode_consumermetadata_response",
            "decode_fetch_response",
            "decode_heartbeat_response",
            "decode_join_group_protocol_metadata",
            "decode_join_group_response",
            "decode_leave_group_response",
            "decode_metadata_response",
            "decode_offset_commit_response",
            "decode_offset_fetch_response",
            "decode_offset_response",
            "decode_produce_response",
            "decode_sync_group_member_assignment",
            "decode_sync_group_response",
            "encode_consumermetadata_request",
            "encode_fetch_request",
            "encode_heartbeat_request",
            "encode_join_group_protocol_metadata",
            "encode_join_group_request",
            "encode_leave_group_request",
            "encode_metadata_request",
            "encode_offset_commit_request",
            "encode_offset_fetch_request",
            "encode_offset_request",
            "encode_produce_request",
            "encode_sync_group_member_assignment",
            "encode_sync_group_request",
            "get_response_correlation_id",
            "key_name",
        ],
        "init": [],
    },
    "afkak.partitioner.HashedPartitioner": {
        "attrs": ["partition"],
        "init": [],
    },
    "afkak.partitioner.Partitioner": {
        "attrs": ["partition"],
        "init": ["topic", "partitions"],
    },
    "afkak.partitioner.RoundRobinPartitioner": {
        "attrs": ["partition", "randomStart", "set_random_start"],
        "init": ["topic", "partitions"],
    },
    "afkak.producer.Producer": {
        "attrs": [
            "DEFAULT_ACK_TIMEOUT",
            "DEFAULT_REQ_ATTEMPTS",
            "INIT_RETRY_INTERVAL",
            "RETRY_INTERVAL_FACTOR",
            "send_messages",
            "stop",
        ],
        "init": [
            "client",
            "partitioner_class",
            "req_acks",
            "ack_timeout",
            "max_req_attempts",
            "retry_interval",
            "codec",
            "batch_send",
            "batch_every_n",
            "batch_every_b",
            "batch_every_t",
        ],
    },
}

#: afkak.common tuple -> its fields, in order.
TUPLE_FIELDS = {
    "BrokerMetadata": ["node_id", "host", "port"],
    "ConsumerMetadataResponse": ["error", "node_id", "host", "port"],
    "FetchRequest": ["topic", "partition", "offset", "max_bytes"],
    "FetchResponse": ["topic", "partition", "error", "highwaterMark", "messages"],
    "Message": ["magic", "attributes", "key", "value"],
    "OffsetAndMessage": ["offset", "message"],
    "OffsetCommitRequest": ["topic", "partition", "offset", "timestamp", "metadata"],
    "OffsetCommitResponse": ["topic", "partition", "error"],
    "OffsetFetchRequest": ["topic", "partition"],
    "OffsetFetchResponse": ["topic", "partition", "offset", "metadata", "error"],
    "OffsetRequest": ["topic", "partition", "time", "max_offsets"],
    "OffsetResponse": ["topic", "partition", "error", "offsets"],
    "PartitionMetadata": [
        "topic",
        "partition",
        "partition_error_code",
        "leader",
        "replicas",
        "isr",
    ],
    "ProduceRequest": ["topic", "partition", "messages"],
    "ProduceResponse": ["topic", "partition", "error", "offset"],
    "SendRequest": ["topic", "key", "messages", "deferred"],
    "SourcedMessage": ["topic", "partition", "offset", "message"],
    "TopicAndPartition": ["topic", "partition"],
    "TopicMetadata": ["topic", "topic_error_code", "partition_metadata"],
}

#: Instance attributes afkak 21.5's main classes set (what applications read).
INSTANCE_ATTRIBUTES = {
    "afkak.KafkaClient": [
        "clientId",
        "clients",
        "close_dlist",
        "correlation_id",
        "partition_meta",
        "reactor",
        "timeout",
        "topic_errors",
        "topic_partitions",
        "topics_to_brokers",
    ],
    "afkak.Producer": [
        "ack_timeout",
        "batchDesc",
        "batch_every_b",
        "batch_every_n",
        "batch_every_t",
        "client",
        "codec",
        "partitioner_class",
        "partitioners",
        "req_acks",
        "stopping",
    ],
    "afkak.Consumer": [
        "auto_commit_every_n",
        "auto_commit_every_s",
        "auto_offset_reset",
        "buffer_size",
        "client",
        "commit_consumer_id",
        "commit_generation_id",
        "commit_metadata",
        "consumer_group",
        "fetch_max_wait_time",
        "fetch_min_bytes",
        "max_buffer_size",
        "partition",
        "processor",
        "request_retry_max_attempts",
        "retry_delay",
        "retry_init_delay",
        "retry_max_delay",
        "topic",
    ],
    "afkak.ConsumerGroup": [
        "client",
        "consumer_kwargs",
        "consumers",
        "coordinator_broker",
        "fatal_backoff_ms",
        "generation_id",
        "group_id",
        "heartbeat_interval_ms",
        "initial_backoff_ms",
        "leader_id",
        "member_id",
        "processor",
        "retry_backoff_ms",
        "session_timeout_ms",
        "topics",
    ],
}

#: Parameters afkak 21.5 took as ``**kwargs`` (keyword-only here is fine).
KEYWORD_ONLY_IN_21 = {
    "afkak.ConsumerGroup": [
        "session_timeout_ms",
        "heartbeat_interval_ms",
        "initial_backoff_ms",
        "retry_backoff_ms",
        "fatal_backoff_ms",
    ],
}
#: Classes 21.5 defined elsewhere, by the public name applications use.
PUBLIC_CLASS_NAMES = {"afkak._group.ConsumerGroup": "afkak.ConsumerGroup"}


def _resolve(qualname: str) -> tuple[bool, Any]:
    """(found, object) for a dotted name: a module, then attributes."""
    parts = qualname.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False, None
            obj = getattr(obj, attr)
        return True, obj
    return False, None


def _short(qualname: str) -> str:
    """How the changes page names an exception: ``module.name`` or ``Class.name``."""
    return ".".join(qualname.split(".")[-2:])


class Afkak21SurfaceTests(SynchronousTestCase):
    def missing(self, qualnames: list[str]) -> list[str]:
        return [q for q in qualnames if q not in EXCEPTIONS and not _resolve(q)[0]]

    def test_module_names(self) -> None:
        self.assertEqual(
            self.missing([f"{module}.{name}" for module, names in NAMES.items() for name in names]),
            [],
        )

    def test_top_level_all(self) -> None:
        dunders = {"__title__", "__version__", "__author__", "__license__"}
        self.assertLessEqual(set(NAMES["afkak"]) - dunders, set(afkak.__all__))

    def test_class_methods_and_attributes(self) -> None:
        self.assertEqual(
            self.missing(
                [f"{cls}.{attr}" for cls, spec in CLASSES.items() for attr in spec["attrs"]]
            ),
            [],
        )

    def test_constructor_parameters(self) -> None:
        problems = []
        for cls, spec in CLASSES.items():
            if not spec["init"]:
                continue
            cls = PUBLIC_CLASS_NAMES.get(cls, cls)
            found, obj = _resolve(cls)
            self.assertTrue(found, cls)
            params = inspect.signature(obj).parameters
            positional = [
                name
                for name, p in params.items()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
            keyword_only = KEYWORD_ONLY_IN_21.get(cls, [])
            expected = [n for n in spec["init"] if n not in keyword_only]
            if positional[: len(expected)] != expected:
                problems.append(f"{cls}: positional {positional} do not start with {expected}")
            problems.extend(
                f"{cls}: no keyword {name}" for name in spec["init"] if name not in params
            )
        self.assertEqual(problems, [])

    def test_tuple_fields(self) -> None:
        import afkak.common

        self.assertEqual(
            {name: list(getattr(afkak.common, name)._fields) for name in TUPLE_FIELDS},
            TUPLE_FIELDS,
        )

    def test_instance_attributes(self) -> None:
        clock = Clock()
        cluster = FakeKafkaCluster(brokers=1, reactor=clock)
        client = KafkaClient(
            cluster.bootstrap_hosts, reactor=clock, endpoint_factory=cluster.endpoint_factory
        )
        self.addCleanup(client.close)
        instances = {
            "afkak.KafkaClient": client,
            "afkak.Producer": Producer(client),
            "afkak.Consumer": Consumer(client, "t", 0, lambda consumer, messages: None),
            "afkak.ConsumerGroup": ConsumerGroup(
                client, "g", ["t"], lambda consumer, messages: None
            ),
        }
        missing = [
            f"{cls}.{attr}"
            for cls, attrs in INSTANCE_ATTRIBUTES.items()
            for attr in attrs
            if f"{cls}.{attr}" not in EXCEPTIONS and not hasattr(instances[cls], attr)
        ]
        self.assertEqual(missing, [])

    def test_exceptions_are_missing_and_documented(self) -> None:
        # An exception that exists after all is stale; each is named in the changes page.
        self.assertEqual([q for q in EXCEPTIONS if _resolve(q)[0]], [])
        path = os.path.join(
            os.path.dirname(afkak.__file__), "..", "docs", "changes-from-afkak-21.rst"
        )
        if not os.path.exists(path):
            self.skipTest("docs are not installed with the package")
        with open(path, encoding="utf-8") as f:
            doc = f.read()
        self.assertEqual([q for q in EXCEPTIONS if f"``{_short(q)}``" not in doc], [])

"""Each public module's ``__all__`` is exactly the names pinned here: a change is deliberate.

A public module is one under ``afkak`` whose dotted path has no part with a
leading underscore (tests aside).  Its ``__all__`` states what it promises:
afkak 21.5's names where it had the module, and what docs/ documents.  The
generated ``afkak.protocol.messages.<api>`` modules are left out: their names
are Kafka's schemas' (``afkak.protocol.messages`` itself is pinned).
:class:`~afkak.testing.FakeKafkaCluster`'s facade is pinned in
``test_testing_faults.FacadeSurfaceTests``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil

from twisted.trial.unittest import SynchronousTestCase

import afkak

#: module -> its ``__all__``, whitespace-separated.
PINNED = {
    "afkak": """
        __version__ AcknowledgeType CODEC_GZIP CODEC_LZ4 CODEC_NONE CODEC_SNAPPY CODEC_ZSTD
        Consumer ConsumerGroup create_message create_message_set GSSAPI HashedPartitioner
        KafkaClient KafkaConsumer KeyStore MessageSet OAuthBearer OAuthBearerToken
        OFFSET_COMMITTED OFFSET_EARLIEST OFFSET_LATEST Plain Producer RoundRobinPartitioner
        Scram ScramSha256 ScramSha512 ShareConsumer TLS TrustStore
    """,
    "afkak.admin": """
        AbortTransactionSpec AclBinding AclDeletion AclOperation AclPermission AlterOp
        ClusterDescription ConfigChange ConfigEntry ConfigResource ConfigResourceType
        ConfigSource ConfigSynonym CreatedTopic DeletedRecords DeletedTopic ElectionType
        FeatureMetadata FeatureUpdate FeatureUpgradeType GroupDescription GroupListing
        HangingTransaction IsolationLevel ItemResult KafkaAdminClient ListedOffset
        LogDirDescription MemberDescription NewPartitions NewTopic OffsetReset OffsetSpec
        PartitionDescription PartitionLag PartitionProducers PartitionReassignment PatternType
        ProducerState QuorumInfo QuorumReplica QuotaEntity QuotaFilter QuotaMatch ReplicaInfo
        ResourceConfig ResourceType ScramCredentialInfo ScramDeletion ScramMechanism
        ScramUpsertion ShareGroupDescription ShareMemberDescription SharePartitionOffset
        TopicDescription TopicListing TransactionDescription TransactionListing
        UserScramCredentials VersionRange
    """,
    "afkak.brokerclient": """
        INIT_DELAY_SECONDS MAX_RECONNECT_DELAY_SECONDS
    """,
    "afkak.cli": """
        main
    """,
    "afkak.client": """
        AdminClient AuthenticationRefused BrokerRequests ClusterMetadata ConsumerClient
        GroupRequests KafkaClient NoBrokerListening ProducerClient
    """,
    "afkak.codec": """
        check_compression_level CODEC_GZIP CODEC_LZ4 CODEC_NAMES CODEC_NONE CODEC_SNAPPY
        CODEC_ZSTD compress COMPRESSION_LEVELS decompress decompress_lz4_legacy DEFAULT_MAX_SIZE
        gzip_decode gzip_encode has_gzip has_lz4 has_snappy has_zstd snappy_decode snappy_encode
    """,
    "afkak.common": """
        BrokerConnectionError BrokerIdNotRegistered BrokerMetadata BrokerNotAvailableError
        BrokerResponseError BufferExhaustedError BufferUnderflowError CancelledError
        ChecksumError ClientError ClusterAuthorizationFailed CODEC_GZIP CODEC_LZ4 CODEC_NONE
        CODEC_SNAPPY CODEC_ZSTD ConcurrentTransactions ConsumerCoordinatorNotAvailableError
        ConsumerFetchSizeTooSmall ConsumerMetadataResponse CoordinatorLoadInProgress
        CoordinatorNotAvailable CorruptMessage DecodeError DefaultKafkaPort
        DelegationTokenAuthDisabled DelegationTokenAuthorizationFailed DelegationTokenExpired
        DelegationTokenNotFound DelegationTokenOwnerMismatch DelegationTokenRequestNotAllowed
        DeliveryTimeoutError DuplicateBrokerRegistration DuplicateRequestError DuplicateResource
        DuplicateSequenceNumber DuplicateVoter ElectionNotNeeded EligibleLeadersNotAvailable
        EncodeError ErrorCode FailedPayloadsError FeatureUpdateFailed FencedInstanceId
        FencedLeaderEpoch FencedMemberEpoch FencedStateEpoch FetchRequest FetchResponse
        FetchSessionIdNotFound FetchSessionTopicIdError GroupAuthorizationFailed GroupIdNotFound
        GroupMaxSizeReached GroupSubscribedToTopic IllegalGeneration IllegalSaslState
        InconsistentClusterId InconsistentGroupProtocol InconsistentTopicId InconsistentVoterSet
        IneligibleReplica InvalidCommitOffsetSize InvalidConfig InvalidConsumerGroupError
        InvalidFetchRequestError InvalidFetchSessionEpoch InvalidGroupId InvalidMessageError
        InvalidPartitions InvalidPrincipalType InvalidProducerEpoch InvalidProducerIdMapping
        InvalidRecord InvalidRecordState InvalidRegistration InvalidRegularExpression
        InvalidReplicaAssignment InvalidReplicationFactor InvalidRequest InvalidRequiredAcks
        InvalidSessionTimeout InvalidShareSessionEpoch InvalidTimestamp InvalidTopic
        InvalidTransactionTimeout InvalidTxnState InvalidUpdateVersion InvalidVoterKey
        KAFKA_SUCCESS KafkaError KafkaStorageError KafkaTimeoutError KafkaUnavailableError
        LeaderNotAvailableError LeaderUnavailableError ListenerNotFound LogDirNotFound
        LogTruncationError MemberIdRequired Message MessageSizeTooLargeError
        MismatchedEndpointType NetworkException NewLeaderElected NoCommonVersionError
        NonEmptyGroup NoReassignmentInProgress NoResponseError NotController NotCoordinator
        NotCoordinatorForConsumerError NotEnoughReplicas NotEnoughReplicasAfterAppend
        NotLeaderForPartitionError OFFSET_COMMITTED OFFSET_EARLIEST OFFSET_LATEST
        OFFSET_NOT_COMMITTED OffsetAndMessage OffsetCommitRequest OffsetCommitResponse
        OffsetFetchRequest OffsetFetchResponse OffsetMetadataTooLargeError
        OffsetMovedToTieredStorage OffsetNotAvailable OffsetOutOfRangeError OffsetRequest
        OffsetResponse OffsetsLoadInProgressError OperationInProgress OperationNotAttempted
        OutOfOrderSequenceNumber PartitionMetadata PartitionUnavailableError PolicyViolation
        PositionOutOfRange PreferredLeaderNotAvailable PrincipalDeserializationFailure
        PRODUCER_ACK_ALL_REPLICAS PRODUCER_ACK_LOCAL_WRITE PRODUCER_ACK_NOT_REQUIRED
        ProduceRequest ProduceResponse ProducerFenced ProtocolError ReassignmentInProgress
        RebalanceInProgress RebootstrapRequired RecordListTooLarge ReplicaNotAvailableError
        RequestTimedOutError ResourceNotFound RestartError RestopError
        RetriableBrokerResponseError SaslAuthenticationFailed SecurityDisabled SendRequest
        ShareSessionLimitReached ShareSessionNotFound SnapshotNotFound SourcedMessage
        StaleBrokerEpoch StaleControllerEpochError StaleLeaderEpochCodeError StaleMemberEpoch
        StreamsInvalidTopology StreamsInvalidTopologyEpoch StreamsTopologyFenced
        TelemetryTooLarge ThrottlingQuotaExceeded TIMESTAMP_CREATE_TIME TIMESTAMP_INVALID
        TIMESTAMP_LOG_APPEND_TIME TLSAuthenticationFailed TLSListenerError TopicAlreadyExists
        TopicAndPartition TopicAuthorizationFailed TopicDeletionDisabled TopicMetadata
        TransactionAbortable TransactionAbortedError TransactionalIdAuthorizationFailed
        TransactionalIdNotFound TransactionCoordinatorFenced TransactionStateError
        UnacceptableCredential UnknownControllerId UnknownError UnknownLeaderEpoch
        UnknownMemberId UnknownProducerId UnknownSubscriptionId UnknownTopicId
        UnknownTopicOrPartitionError UnreleasedInstanceId UnstableOffsetCommit
        UnsupportedAssignor UnsupportedCodecError UnsupportedCompressionType
        UnsupportedEndpointType UnsupportedForMessageFormat UnsupportedSaslMechanism
        UnsupportedVersion VoterNotFound
    """,
    "afkak.connection": """
        Authenticator BrokerConnection ClientCredentials default_endpoint_factory
        DEFAULT_MAX_FRAME_SIZE FramedProtocol FrameTooLargeError GSSAPI GSSAPIUnavailable
        KeyStore LoginRefresh MskIamError MskIamTokens OAuthBearer OAuthBearerToken Plain
        RequestBuilder SaslAuthenticator SaslConversation SaslMechanism Scram ScramSha256
        ScramSha512 Send State TLS tls_endpoint_factory TLSHandshakeError TokenEndpointError
        TrustStore VersionedRequest
    """,
    "afkak.connection.framing": """
        DEFAULT_MAX_FRAME_SIZE FramedProtocol FrameTooLargeError StreamTransport
    """,
    "afkak.consumer": """
        AUTO_COMMIT_INTERVAL AUTO_COMMIT_MSG_COUNT Consumer FETCH_BUFFER_SIZE_BYTES
        FETCH_MAX_WAIT_TIME FETCH_MIN_BYTES OffsetAndMetadata PreparingDeserializer
        REQUEST_RETRY_FACTOR REQUEST_RETRY_MAX_DELAY REQUEST_RETRY_MIN_DELAY
    """,
    "afkak.consumer.positions": """
        commit_offsets committed_offsets offset_value OffsetAndMetadata offsets_for_times
        partition_of partitions_of timestamps_of
    """,
    "afkak.group": """
        AcknowledgeType Assignment ASSIGNORS committed_offsets ConsumerGroup
        CooperativeStickyAssignor decode_assignment decode_subscription DEFAULT_ASSIGNORS
        describe_group encode_assignment encode_subscription Generation group_lag
        GroupDescription GroupListing GroupMember KafkaConsumer list_groups Liveness
        MAX_POLL_RECORDS Member MemberDescription MemberState PartitionAssignor
        PartitionLag RangeAssignor RebalanceListener RebalanceProtocol RoundRobinAssignor
        ShareConsumer ShareMemberState ShareRecord Subscription TransactionalProcessor
    """,
    "afkak.consumer.deserialize": """
        checked Deserializer deserializing Deserializing PreparingDeserializer
    """,
    "afkak.kafkacodec": """
        ATTRIBUTE_CODEC_MASK create_gzip_message create_message create_message_set
        create_snappy_message DEFAULT_REPLICAS_ACK_TIMEOUT_MSECS KafkaCodec MAX_BROKERS
    """,
    "afkak.message_set": """
        CODEC_MASK create_message create_message_set flatten MessageSet wrap_messages
    """,
    "afkak.metrics": """
        Avg CLIENT ConnectionSensors ConsumerSensors COORDINATOR FETCH Gauge GroupSensors Max
        Measured MetricConfig MetricName Metrics NODE node_tag PRODUCER PRODUCER_TOPIC
        ProducerSensors Rate registry_of Sensor Total Value
    """,
    "afkak.metrics.otel": """
        instrument otel_name
    """,
    "afkak.metrics.prometheus": """
        AfkakCollector prometheus_name
    """,
    "afkak.metrics.telemetry": """
        Collector encode Point telemetry_names
    """,
    "afkak.partitioner": """
        DefaultPartitioner HashedPartitioner murmur2 Partitioner pure_murmur2
        RoundRobinPartitioner
    """,
    "afkak.producer": """
        BATCH_SEND_MSG_BYTES BATCH_SEND_MSG_COUNT BATCH_SEND_SECS_COUNT ConsumerGroupMetadata
        Producer RecordMetadata TransactionState
    """,
    "afkak.protocol": """
        decode_request decode_response encode_request encode_response FieldSpec Message
        peek_correlation_id request_class response_class Struct ZERO_UUID
    """,
    "afkak.protocol.consumer_protocol": """
        ASSIGNMENT_VERSION decode_assignment decode_subscription encode_assignment
        encode_subscription PROTOCOL_TYPE Subscription SUBSCRIPTION_VERSION
    """,
    "afkak.protocol.header": """
        decode_request decode_response encode_request encode_request_body encode_response
        peek_correlation_id request_header_version response_header_version
    """,
    "afkak.protocol.messages": """
        API_KEYS AddOffsetsToTxnRequest AddOffsetsToTxnResponse AddPartitionsToTxnRequest
        AddPartitionsToTxnResponse AlterClientQuotasRequest AlterClientQuotasResponse
        AlterConfigsRequest AlterConfigsResponse AlterPartitionReassignmentsRequest
        AlterPartitionReassignmentsResponse AlterReplicaLogDirsRequest
        AlterReplicaLogDirsResponse AlterShareGroupOffsetsRequest AlterShareGroupOffsetsResponse
        AlterUserScramCredentialsRequest AlterUserScramCredentialsResponse ApiVersionsRequest
        ApiVersionsResponse ConsumerGroupDescribeRequest ConsumerGroupDescribeResponse
        ConsumerGroupHeartbeatRequest ConsumerGroupHeartbeatResponse ConsumerProtocolAssignment
        ConsumerProtocolSubscription CreateAclsRequest CreateAclsResponse
        CreatePartitionsRequest CreatePartitionsResponse CreateTopicsRequest
        CreateTopicsResponse DeleteAclsRequest DeleteAclsResponse DeleteGroupsRequest
        DeleteGroupsResponse DeleteRecordsRequest DeleteRecordsResponse
        DeleteShareGroupOffsetsRequest DeleteShareGroupOffsetsResponse DeleteTopicsRequest
        DeleteTopicsResponse DescribeAclsRequest DescribeAclsResponse
        DescribeClientQuotasRequest DescribeClientQuotasResponse DescribeClusterRequest
        DescribeClusterResponse DescribeConfigsRequest DescribeConfigsResponse
        DescribeGroupsRequest DescribeGroupsResponse DescribeLogDirsRequest
        DescribeLogDirsResponse DescribeProducersRequest DescribeProducersResponse
        DescribeQuorumRequest DescribeQuorumResponse DescribeShareGroupOffsetsRequest
        DescribeShareGroupOffsetsResponse DescribeTopicPartitionsRequest
        DescribeTopicPartitionsResponse DescribeTransactionsRequest DescribeTransactionsResponse
        DescribeUserScramCredentialsRequest DescribeUserScramCredentialsResponse
        ElectLeadersRequest ElectLeadersResponse EndTxnRequest EndTxnResponse FetchRequest
        FetchResponse FindCoordinatorRequest FindCoordinatorResponse
        GetTelemetrySubscriptionsRequest GetTelemetrySubscriptionsResponse HeartbeatRequest
        HeartbeatResponse IncrementalAlterConfigsRequest IncrementalAlterConfigsResponse
        InitProducerIdRequest InitProducerIdResponse JoinGroupRequest JoinGroupResponse
        LeaveGroupRequest LeaveGroupResponse ListConfigResourcesRequest
        ListConfigResourcesResponse ListGroupsRequest ListGroupsResponse ListOffsetsRequest
        ListOffsetsResponse ListPartitionReassignmentsRequest ListPartitionReassignmentsResponse
        ListTransactionsRequest ListTransactionsResponse MetadataRequest MetadataResponse
        OffsetCommitRequest OffsetCommitResponse OffsetDeleteRequest OffsetDeleteResponse
        OffsetFetchRequest OffsetFetchResponse OffsetForLeaderEpochRequest
        OffsetForLeaderEpochResponse ProduceRequest ProduceResponse PushTelemetryRequest
        PushTelemetryResponse request_class RequestHeader REQUESTS response_class ResponseHeader
        RESPONSES SaslAuthenticateRequest SaslAuthenticateResponse SaslHandshakeRequest
        SaslHandshakeResponse ShareAcknowledgeRequest ShareAcknowledgeResponse ShareFetchRequest
        ShareFetchResponse ShareGroupDescribeRequest ShareGroupDescribeResponse
        ShareGroupHeartbeatRequest ShareGroupHeartbeatResponse SyncGroupRequest
        SyncGroupResponse TxnOffsetCommitRequest TxnOffsetCommitResponse UpdateFeaturesRequest
        UpdateFeaturesResponse WriteTxnMarkersRequest WriteTxnMarkersResponse
    """,
    "afkak.protocol.metadata_answer": """
        MetadataAnswer read_answer Row TopicAnswer TopicMemo
    """,
    "afkak.protocol.produce_answer": """
        one_partition_answer topic_entry
    """,
    "afkak.protocol.produce_body": """
        produce_body
    """,
    "afkak.records": """
        BATCH_HEADER_SIZE build_batch build_batches build_control_batch ControlMarker
        ControlType gc_paused Header read_batches Record RECORD_SIZE_BOUND RecordBatch
        RecordBatchBuilder split_points TimestampType
    """,
    "afkak.records.aborted": """
        AbortedTransactions committed_batches isolation_level READ_COMMITTED READ_UNCOMMITTED
    """,
    "afkak.records.batch": """
        COMPILED RecordBatch RecordColumns
    """,
    "afkak.records.builder": """
        BATCH_HEADER_SIZE build_batch build_batches build_control_batch RECORD_SIZE_BOUND
        RecordBatchBuilder split_points
    """,
    "afkak.records.gc_pause": """
        gc_paused reachable track_all untrack
    """,
    "afkak.records.legacy": """
        encode_message_set read_legacy_message unwrap_message
    """,
    "afkak.records.messages": """
        fetched_messages
    """,
    "afkak.records.reader": """
        read_batches
    """,
    "afkak.records.record": """
        ControlMarker ControlType Header Record TimestampType
    """,
    "afkak.schema_registry": """
        AVRO AvroDeserializer AvroSerializer DeserializationError frame INCOMPATIBLE_SCHEMA
        INVALID_SCHEMA INVALID_VERSION JSON JSONSchemaDeserializer JSONSchemaSerializer PROTOBUF
        ProtobufDeserializer ProtobufSerializer record_subject_name_strategy
        registered_message_class RegisteredSchema RegistryDeserializer RegistrySerializer Schema
        schema_id_of SCHEMA_NOT_FOUND SchemaReference SchemaRegistryClient SchemaRegistryError
        SerializationError single_schema_avro_decoder SUBJECT_NOT_FOUND SubjectNameStrategy
        topic_record_subject_name_strategy topic_subject_name_strategy VERSION_NOT_FOUND
    """,
    "afkak.spark": """
        AfkakDataSource DataLossError from_confluent_avro OptionError RowError
    """,
    "afkak.testing": """
        CommittedOffset EmbeddedBroker EmbeddedBrokerUnavailable FakeBroker FakeKafkaCluster
        FakePartition FakeTopic SeenRequest
    """,
    "afkak.testing.apache_kafka": """
        ApacheKafka ApacheKafkaUnavailable cache_root java_available JVM_OPTIONS KAFKA_VERSIONS
        log4j2_version resolve_classpath
    """,
    "afkak.testing.schema_registry": """
        InMemorySchemaRegistry
    """,
    "afkak.tracing": """
        KafkaTracing
    """,
}


def public_modules() -> list[str]:
    """Every public module of afkak (see above)."""
    found = ["afkak"]
    for info in pkgutil.walk_packages(afkak.__path__, "afkak."):
        parts = info.name.split(".")
        if parts[1] == "test" or any(part.startswith("_") for part in parts[1:]):
            continue
        if info.name.startswith("afkak.protocol.messages."):
            continue
        found.append(info.name)
    return found


def promised(name: str) -> list[str] | None:
    """The module's ``__all__``; read from its source when an optional dependency is
    missing (``afkak.spark`` without PySpark)."""
    try:
        return getattr(importlib.import_module(name), "__all__", None)
    except ImportError:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        with open(spec.origin, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                return list(ast.literal_eval(node.value))
        return None


class PublicSurfaceTests(SynchronousTestCase):
    def test_every_public_module_is_pinned(self) -> None:
        self.assertEqual(sorted(public_modules()), sorted(PINNED))

    def test_each_all_is_the_pinned_set(self) -> None:
        for name, pinned in PINNED.items():
            names = promised(name)
            self.assertIsNotNone(names, f"{name} has no __all__")
            assert names is not None
            self.assertEqual(len(names), len(set(names)), f"{name}: a name twice")
            self.assertEqual(set(names), set(pinned.split()), name)

    def test_each_promised_name_exists(self) -> None:
        missing = []
        for name in PINNED:
            try:
                module = importlib.import_module(name)
            except ImportError:
                continue  # an optional dependency is missing
            missing += [f"{name}.{attr}" for attr in module.__all__ if not hasattr(module, attr)]
        self.assertEqual(missing, [])

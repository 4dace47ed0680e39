"""Broker error codes: the errno table, raise_for_errno and afkak's aliases."""

from __future__ import annotations

import pickle

from hypothesis import given, strategies as st
from twisted.trial.unittest import SynchronousTestCase

from afkak import common
from afkak.common import (
    BrokerResponseError,
    ErrorCode,
    KafkaError,
    RetriableBrokerResponseError,
)

# (errno, afkak class name, Kafka name, retriable per Kafka 4.3's Errors.java)
KAFKA_4_3_ERRORS = [
    (-1, "UnknownError", "UNKNOWN_SERVER_ERROR", False),
    (1, "OffsetOutOfRangeError", "OFFSET_OUT_OF_RANGE", False),
    (2, "CorruptMessage", "CORRUPT_MESSAGE", True),
    (3, "UnknownTopicOrPartitionError", "UNKNOWN_TOPIC_OR_PARTITION", True),
    (4, "InvalidFetchRequestError", "INVALID_FETCH_SIZE", False),
    (5, "LeaderNotAvailableError", "LEADER_NOT_AVAILABLE", True),
    (6, "NotLeaderForPartitionError", "NOT_LEADER_OR_FOLLOWER", True),
    (7, "RequestTimedOutError", "REQUEST_TIMED_OUT", True),
    (8, "BrokerNotAvailableError", "BROKER_NOT_AVAILABLE", False),
    (9, "ReplicaNotAvailableError", "REPLICA_NOT_AVAILABLE", True),
    (10, "MessageSizeTooLargeError", "MESSAGE_TOO_LARGE", False),
    (11, "StaleControllerEpochError", "STALE_CONTROLLER_EPOCH", False),
    (12, "OffsetMetadataTooLargeError", "OFFSET_METADATA_TOO_LARGE", False),
    (13, "NetworkException", "NETWORK_EXCEPTION", True),
    (14, "CoordinatorLoadInProgress", "COORDINATOR_LOAD_IN_PROGRESS", True),
    (15, "CoordinatorNotAvailable", "COORDINATOR_NOT_AVAILABLE", True),
    (16, "NotCoordinator", "NOT_COORDINATOR", True),
    (17, "InvalidTopic", "INVALID_TOPIC_EXCEPTION", False),
    (18, "RecordListTooLarge", "RECORD_LIST_TOO_LARGE", False),
    (19, "NotEnoughReplicas", "NOT_ENOUGH_REPLICAS", True),
    (20, "NotEnoughReplicasAfterAppend", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True),
    (21, "InvalidRequiredAcks", "INVALID_REQUIRED_ACKS", False),
    (22, "IllegalGeneration", "ILLEGAL_GENERATION", False),
    (23, "InconsistentGroupProtocol", "INCONSISTENT_GROUP_PROTOCOL", False),
    (24, "InvalidGroupId", "INVALID_GROUP_ID", False),
    (25, "UnknownMemberId", "UNKNOWN_MEMBER_ID", False),
    (26, "InvalidSessionTimeout", "INVALID_SESSION_TIMEOUT", False),
    (27, "RebalanceInProgress", "REBALANCE_IN_PROGRESS", False),
    (28, "InvalidCommitOffsetSize", "INVALID_COMMIT_OFFSET_SIZE", False),
    (29, "TopicAuthorizationFailed", "TOPIC_AUTHORIZATION_FAILED", False),
    (30, "GroupAuthorizationFailed", "GROUP_AUTHORIZATION_FAILED", False),
    (31, "ClusterAuthorizationFailed", "CLUSTER_AUTHORIZATION_FAILED", False),
    (32, "InvalidTimestamp", "INVALID_TIMESTAMP", False),
    (33, "UnsupportedSaslMechanism", "UNSUPPORTED_SASL_MECHANISM", False),
    (34, "IllegalSaslState", "ILLEGAL_SASL_STATE", False),
    (35, "UnsupportedVersion", "UNSUPPORTED_VERSION", False),
    (36, "TopicAlreadyExists", "TOPIC_ALREADY_EXISTS", False),
    (37, "InvalidPartitions", "INVALID_PARTITIONS", False),
    (38, "InvalidReplicationFactor", "INVALID_REPLICATION_FACTOR", False),
    (39, "InvalidReplicaAssignment", "INVALID_REPLICA_ASSIGNMENT", False),
    (40, "InvalidConfig", "INVALID_CONFIG", False),
    (41, "NotController", "NOT_CONTROLLER", True),
    (42, "InvalidRequest", "INVALID_REQUEST", False),
    (43, "UnsupportedForMessageFormat", "UNSUPPORTED_FOR_MESSAGE_FORMAT", False),
    (44, "PolicyViolation", "POLICY_VIOLATION", False),
    (45, "OutOfOrderSequenceNumber", "OUT_OF_ORDER_SEQUENCE_NUMBER", False),
    (46, "DuplicateSequenceNumber", "DUPLICATE_SEQUENCE_NUMBER", False),
    (47, "InvalidProducerEpoch", "INVALID_PRODUCER_EPOCH", False),
    (48, "InvalidTxnState", "INVALID_TXN_STATE", False),
    (49, "InvalidProducerIdMapping", "INVALID_PRODUCER_ID_MAPPING", False),
    (50, "InvalidTransactionTimeout", "INVALID_TRANSACTION_TIMEOUT", False),
    (51, "ConcurrentTransactions", "CONCURRENT_TRANSACTIONS", True),
    (52, "TransactionCoordinatorFenced", "TRANSACTION_COORDINATOR_FENCED", False),
    (53, "TransactionalIdAuthorizationFailed", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False),
    (54, "SecurityDisabled", "SECURITY_DISABLED", False),
    (55, "OperationNotAttempted", "OPERATION_NOT_ATTEMPTED", False),
    (56, "KafkaStorageError", "KAFKA_STORAGE_ERROR", True),
    (57, "LogDirNotFound", "LOG_DIR_NOT_FOUND", False),
    (58, "SaslAuthenticationFailed", "SASL_AUTHENTICATION_FAILED", False),
    (59, "UnknownProducerId", "UNKNOWN_PRODUCER_ID", False),
    (60, "ReassignmentInProgress", "REASSIGNMENT_IN_PROGRESS", False),
    (61, "DelegationTokenAuthDisabled", "DELEGATION_TOKEN_AUTH_DISABLED", False),
    (62, "DelegationTokenNotFound", "DELEGATION_TOKEN_NOT_FOUND", False),
    (63, "DelegationTokenOwnerMismatch", "DELEGATION_TOKEN_OWNER_MISMATCH", False),
    (64, "DelegationTokenRequestNotAllowed", "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", False),
    (65, "DelegationTokenAuthorizationFailed", "DELEGATION_TOKEN_AUTHORIZATION_FAILED", False),
    (66, "DelegationTokenExpired", "DELEGATION_TOKEN_EXPIRED", False),
    (67, "InvalidPrincipalType", "INVALID_PRINCIPAL_TYPE", False),
    (68, "NonEmptyGroup", "NON_EMPTY_GROUP", False),
    (69, "GroupIdNotFound", "GROUP_ID_NOT_FOUND", False),
    (70, "FetchSessionIdNotFound", "FETCH_SESSION_ID_NOT_FOUND", True),
    (71, "InvalidFetchSessionEpoch", "INVALID_FETCH_SESSION_EPOCH", True),
    (72, "ListenerNotFound", "LISTENER_NOT_FOUND", True),
    (73, "TopicDeletionDisabled", "TOPIC_DELETION_DISABLED", False),
    (74, "FencedLeaderEpoch", "FENCED_LEADER_EPOCH", True),
    (75, "UnknownLeaderEpoch", "UNKNOWN_LEADER_EPOCH", True),
    (76, "UnsupportedCompressionType", "UNSUPPORTED_COMPRESSION_TYPE", False),
    (77, "StaleBrokerEpoch", "STALE_BROKER_EPOCH", False),
    (78, "OffsetNotAvailable", "OFFSET_NOT_AVAILABLE", True),
    (79, "MemberIdRequired", "MEMBER_ID_REQUIRED", False),
    (80, "PreferredLeaderNotAvailable", "PREFERRED_LEADER_NOT_AVAILABLE", True),
    (81, "GroupMaxSizeReached", "GROUP_MAX_SIZE_REACHED", False),
    (82, "FencedInstanceId", "FENCED_INSTANCE_ID", False),
    (83, "EligibleLeadersNotAvailable", "ELIGIBLE_LEADERS_NOT_AVAILABLE", True),
    (84, "ElectionNotNeeded", "ELECTION_NOT_NEEDED", True),
    (85, "NoReassignmentInProgress", "NO_REASSIGNMENT_IN_PROGRESS", False),
    (86, "GroupSubscribedToTopic", "GROUP_SUBSCRIBED_TO_TOPIC", False),
    (87, "InvalidRecord", "INVALID_RECORD", False),
    (88, "UnstableOffsetCommit", "UNSTABLE_OFFSET_COMMIT", True),
    (89, "ThrottlingQuotaExceeded", "THROTTLING_QUOTA_EXCEEDED", True),
    (90, "ProducerFenced", "PRODUCER_FENCED", False),
    (91, "ResourceNotFound", "RESOURCE_NOT_FOUND", False),
    (92, "DuplicateResource", "DUPLICATE_RESOURCE", False),
    (93, "UnacceptableCredential", "UNACCEPTABLE_CREDENTIAL", False),
    (94, "InconsistentVoterSet", "INCONSISTENT_VOTER_SET", False),
    (95, "InvalidUpdateVersion", "INVALID_UPDATE_VERSION", False),
    (96, "FeatureUpdateFailed", "FEATURE_UPDATE_FAILED", False),
    (97, "PrincipalDeserializationFailure", "PRINCIPAL_DESERIALIZATION_FAILURE", False),
    (98, "SnapshotNotFound", "SNAPSHOT_NOT_FOUND", False),
    (99, "PositionOutOfRange", "POSITION_OUT_OF_RANGE", False),
    (100, "UnknownTopicId", "UNKNOWN_TOPIC_ID", True),
    (101, "DuplicateBrokerRegistration", "DUPLICATE_BROKER_REGISTRATION", False),
    (102, "BrokerIdNotRegistered", "BROKER_ID_NOT_REGISTERED", False),
    (103, "InconsistentTopicId", "INCONSISTENT_TOPIC_ID", True),
    (104, "InconsistentClusterId", "INCONSISTENT_CLUSTER_ID", False),
    (105, "TransactionalIdNotFound", "TRANSACTIONAL_ID_NOT_FOUND", False),
    (106, "FetchSessionTopicIdError", "FETCH_SESSION_TOPIC_ID_ERROR", True),
    (107, "IneligibleReplica", "INELIGIBLE_REPLICA", False),
    (108, "NewLeaderElected", "NEW_LEADER_ELECTED", False),
    (109, "OffsetMovedToTieredStorage", "OFFSET_MOVED_TO_TIERED_STORAGE", False),
    (110, "FencedMemberEpoch", "FENCED_MEMBER_EPOCH", False),
    (111, "UnreleasedInstanceId", "UNRELEASED_INSTANCE_ID", False),
    (112, "UnsupportedAssignor", "UNSUPPORTED_ASSIGNOR", False),
    (113, "StaleMemberEpoch", "STALE_MEMBER_EPOCH", False),
    (114, "MismatchedEndpointType", "MISMATCHED_ENDPOINT_TYPE", False),
    (115, "UnsupportedEndpointType", "UNSUPPORTED_ENDPOINT_TYPE", False),
    (116, "UnknownControllerId", "UNKNOWN_CONTROLLER_ID", False),
    (117, "UnknownSubscriptionId", "UNKNOWN_SUBSCRIPTION_ID", False),
    (118, "TelemetryTooLarge", "TELEMETRY_TOO_LARGE", False),
    (119, "InvalidRegistration", "INVALID_REGISTRATION", False),
    (120, "TransactionAbortable", "TRANSACTION_ABORTABLE", False),
    (121, "InvalidRecordState", "INVALID_RECORD_STATE", False),
    (122, "ShareSessionNotFound", "SHARE_SESSION_NOT_FOUND", True),
    (123, "InvalidShareSessionEpoch", "INVALID_SHARE_SESSION_EPOCH", True),
    (124, "FencedStateEpoch", "FENCED_STATE_EPOCH", False),
    (125, "InvalidVoterKey", "INVALID_VOTER_KEY", False),
    (126, "DuplicateVoter", "DUPLICATE_VOTER", False),
    (127, "VoterNotFound", "VOTER_NOT_FOUND", False),
    (128, "InvalidRegularExpression", "INVALID_REGULAR_EXPRESSION", False),
    (129, "RebootstrapRequired", "REBOOTSTRAP_REQUIRED", False),
    (130, "StreamsInvalidTopology", "STREAMS_INVALID_TOPOLOGY", False),
    (131, "StreamsInvalidTopologyEpoch", "STREAMS_INVALID_TOPOLOGY_EPOCH", False),
    (132, "StreamsTopologyFenced", "STREAMS_TOPOLOGY_FENCED", False),
    (133, "ShareSessionLimitReached", "SHARE_SESSION_LIMIT_REACHED", True),
]

# afkak 21's documented aliases: alias name -> class name.
ALIASES = {
    "ConsumerCoordinatorNotAvailableError": "CoordinatorNotAvailable",
    "InvalidMessageError": "CorruptMessage",
    "NotCoordinatorForConsumerError": "NotCoordinator",
    "OffsetsLoadInProgressError": "CoordinatorLoadInProgress",
    "StaleLeaderEpochCodeError": "NetworkException",
}

# Codes where kafka-python (the test-time reference) departs from Kafka's
# RetriableException hierarchy; afkak follows Kafka.
KAFKA_PYTHON_RETRIABLE_DEVIATIONS = {2, 51}


class ErrnoTableTests(SynchronousTestCase):
    def test_every_code_has_its_class(self) -> None:
        for errno, name, message, retriable in KAFKA_4_3_ERRORS:
            cls = getattr(common, name)
            self.assertIs(BrokerResponseError.errnos[errno], cls)
            self.assertEqual((cls.errno, cls.message, cls.retriable), (errno, message, retriable))
            self.assertEqual(issubclass(cls, RetriableBrokerResponseError), retriable)
            self.assertIn(name, common.__all__)

    def test_no_other_codes(self) -> None:
        self.assertEqual(
            sorted(BrokerResponseError.errnos), [code for code, *_ in KAFKA_4_3_ERRORS]
        )
        self.assertEqual(list(range(1, 134)), sorted(BrokerResponseError.errnos)[1:])

    def test_error_code_is_the_table(self) -> None:
        """ErrorCode names every code once, and gives each class its errno and message."""
        self.assertEqual(
            [(code.value, code.name) for code in ErrorCode],
            [(0, "NONE")] + [(errno, message) for errno, _, message, _ in KAFKA_4_3_ERRORS],
        )
        for code, cls in BrokerResponseError.errnos.items():
            self.assertIs(type(code), int)
            self.assertIs(type(cls.errno), int)
            self.assertEqual(ErrorCode(code).name, cls.message)
        self.assertIn("ErrorCode", common.__all__)

    def test_a_class_names_its_code(self) -> None:
        """A subclass given a member gets a plain int errno and Kafka's name."""
        saved = dict(BrokerResponseError.errnos)
        self.addCleanup(lambda: BrokerResponseError.errnos.update(saved))
        del BrokerResponseError.errnos[ErrorCode.INVALID_RECORD_STATE]

        class Mine(BrokerResponseError):
            errno = ErrorCode.INVALID_RECORD_STATE

        self.assertEqual(
            (type(Mine.errno), Mine.errno, Mine.message), (int, 121, "INVALID_RECORD_STATE")
        )
        self.assertIs(BrokerResponseError.errnos[121], Mine)
        self.assertEqual(str(Mine("x")), "[Error 121] INVALID_RECORD_STATE: x")

    def test_hierarchy(self) -> None:
        self.assertTrue(issubclass(BrokerResponseError, KafkaError))
        self.assertFalse(BrokerResponseError.retriable)
        self.assertTrue(RetriableBrokerResponseError.retriable)
        self.assertIsNone(BrokerResponseError.message)
        self.assertIsNone(BrokerResponseError.errno)

    def test_aliases(self) -> None:
        for alias, name in ALIASES.items():
            self.assertIs(getattr(common, alias), getattr(common, name))
            self.assertIn(alias, common.__all__)

    def test_duplicate_errno_rejected(self) -> None:
        with self.assertRaises(TypeError):

            class Duplicate(BrokerResponseError):
                errno = 1

        self.assertIs(BrokerResponseError.errnos[1], common.OffsetOutOfRangeError)

    def test_matches_kafka_python(self) -> None:
        """Every code kafka-python knows is here, with the same retriable flag
        except where kafka-python departs from Kafka."""
        from kafka import errors as kp

        known = {
            cls.errno: cls
            for cls in vars(kp).values()
            if isinstance(cls, type)
            and issubclass(cls, kp.BrokerResponseError)
            and cls.errno not in (None, 0)
        }
        self.assertGreater(len(known), 120)
        for errno, theirs in known.items():
            ours = BrokerResponseError.errnos[errno]
            if errno not in KAFKA_PYTHON_RETRIABLE_DEVIATIONS:
                self.assertEqual(ours.retriable, theirs.retriable, ours)


class RaiseForErrnoTests(SynchronousTestCase):
    def test_raises_the_class(self) -> None:
        for errno, name, _message, _retriable in KAFKA_4_3_ERRORS:
            with self.assertRaises(getattr(common, name)) as cm:
                BrokerResponseError.raise_for_errno(errno, "detail", 7)
            self.assertIs(type(cm.exception), getattr(common, name))
            self.assertEqual(cm.exception.args, ("detail", 7))

    def test_zero_is_success(self) -> None:
        self.assertIsNone(BrokerResponseError.raise_for_errno(0))

    @given(
        st.integers(-(2**15), 2**15 - 1).filter(
            lambda code: code != 0 and code not in BrokerResponseError.errnos
        )
    )
    def test_unknown_code(self, errno: int) -> None:
        with self.assertRaises(BrokerResponseError) as cm:
            BrokerResponseError.raise_for_errno(errno, "why")
        error = cm.exception
        self.assertIs(type(error), BrokerResponseError)
        self.assertEqual(error.errno, errno)
        self.assertIsNone(error.message)
        self.assertFalse(error.retriable)
        self.assertEqual(error.args, ("why",))
        self.assertIn(str(errno), str(error))
        self.assertIsNone(BrokerResponseError.errno, "the class attribute is untouched")

    def test_from_errno_returns(self) -> None:
        error = BrokerResponseError.from_errno(74, "epoch 3")
        self.assertIsInstance(error, common.FencedLeaderEpoch)
        self.assertTrue(error.retriable)

    def test_str(self) -> None:
        self.assertEqual(
            str(common.OffsetOutOfRangeError("t/0")), "[Error 1] OFFSET_OUT_OF_RANGE: t/0"
        )
        self.assertEqual(str(common.NotCoordinator()), "[Error 16] NOT_COORDINATOR")
        self.assertEqual(str(BrokerResponseError.from_errno(999)), "[Error 999] unknown error code")

    def test_pickle(self) -> None:
        error = pickle.loads(pickle.dumps(common.UnknownMemberId("m-1")))
        self.assertIs(type(error), common.UnknownMemberId)
        self.assertEqual(error.args, ("m-1",))
        unknown = pickle.loads(pickle.dumps(BrokerResponseError.from_errno(999)))
        self.assertEqual(unknown.errno, 999)

    def test_module_is_public(self) -> None:
        self.assertEqual(common.CorruptMessage.__module__, "afkak.common")
        self.assertEqual(
            repr(common.StaleLeaderEpochCodeError), "<class 'afkak.common.NetworkException'>"
        )

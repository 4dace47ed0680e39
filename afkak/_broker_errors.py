"""Broker error codes: one :class:`BrokerResponseError` subclass per Kafka error code.

:class:`ErrorCode` is the table of every code that Apache Kafka 4.3 defines
(-1 and 1..133, and 0 for none), by Kafka's name; each class names its
member, which gives the class its ``errno`` and ``message``.  Class names for
codes 1..72 are afkak's historical ones (some end in ``Error``, some do not);
newer codes use the CamelCase of the Kafka name.  ``retriable`` follows Kafka
(the Java exception is a ``RetriableException``).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, ClassVar

from afkak._errors import KafkaError


class ErrorCode(IntEnum):
    """Kafka's error codes by Kafka's name: the one table of codes.

    Each :class:`BrokerResponseError` subclass names its member here, which
    gives it ``errno`` and ``message``.  Compare response codes with these
    members (``code == ErrorCode.NOT_COORDINATOR``); where a comparison runs
    per record, bind the member to a module-level ``int`` first.
    """

    NONE = 0
    UNKNOWN_SERVER_ERROR = -1
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133


class BrokerResponseError(KafkaError):
    """One ``BrokerResponseError`` subclass is defined for each protocol error code.

    :ivar int errno: The integer error code reported by the server.
    :ivar bool retriable: Whether it is valid to retry the request that
        produced the error.  A metadata refresh may be needed first.
    :ivar str message: The Kafka name of the error code, e.g.
        ``"OFFSET_OUT_OF_RANGE"``; ``None`` if the code is unknown to afkak
        (future Kafka releases may add codes).  Kafka renames codes from time
        to time, so check the exception type or ``errno``, not this string.
    :cvar errnos: Map of error code to the class that represents it.
    """

    errno: ClassVar[int | None] = None
    message: ClassVar[str | None] = None
    errnos: ClassVar[dict[int, type[BrokerResponseError]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        errno = cls.__dict__.get("errno")
        if isinstance(errno, ErrorCode):
            # Plain ints in the public attributes, as afkak always had.
            cls.message = errno.name
            cls.errno = errno = int(errno)
        if errno is not None:
            taken = BrokerResponseError.errnos.setdefault(errno, cls)
            if taken is not cls:
                raise TypeError(f"error code {errno} is already taken by {taken.__name__}")

    def __str__(self) -> str:
        detail = super().__str__()
        head = f"[Error {self.errno}] {self.message or 'unknown error code'}"
        return f"{head}: {detail}" if detail else head

    @classmethod
    def from_errno(cls, errno: int, *args: Any) -> BrokerResponseError:
        """Return (not raise) the exception for a non-zero error code.

        An unknown code gives a plain :class:`BrokerResponseError` whose
        ``errno`` is the code and whose ``message`` is ``None``.
        """
        error_class = BrokerResponseError.errnos.get(errno)
        if error_class is not None:
            return error_class(*args)
        error = BrokerResponseError(*args)
        error.errno = errno  # type: ignore[misc]
        return error

    @classmethod
    def raise_for_errno(cls, errno: int, *args: Any) -> None:
        """Raise an exception for the given error code.

        :param errno: Kafka error code.
        :raises BrokerResponseError: For any non-zero ``errno``: the specific
            subclass if afkak defines one for the code, else a plain
            ``BrokerResponseError`` carrying ``errno``.  ``args`` become the
            exception's arguments.  Error code 0 (no error) returns ``None``.
        """
        if errno:
            raise cls.from_errno(errno, *args)


class RetriableBrokerResponseError(BrokerResponseError):
    """The shared superclass of all broker errors which can be retried."""

    retriable = True


class UnknownError(BrokerResponseError):
    errno = ErrorCode.UNKNOWN_SERVER_ERROR


class OffsetOutOfRangeError(BrokerResponseError):
    errno = ErrorCode.OFFSET_OUT_OF_RANGE


class CorruptMessage(RetriableBrokerResponseError):
    errno = ErrorCode.CORRUPT_MESSAGE


class UnknownTopicOrPartitionError(RetriableBrokerResponseError):
    errno = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class InvalidFetchRequestError(BrokerResponseError):
    errno = ErrorCode.INVALID_FETCH_SIZE


class LeaderNotAvailableError(RetriableBrokerResponseError):
    errno = ErrorCode.LEADER_NOT_AVAILABLE


class NotLeaderForPartitionError(RetriableBrokerResponseError):
    errno = ErrorCode.NOT_LEADER_OR_FOLLOWER


class RequestTimedOutError(RetriableBrokerResponseError):
    errno = ErrorCode.REQUEST_TIMED_OUT


class BrokerNotAvailableError(BrokerResponseError):
    errno = ErrorCode.BROKER_NOT_AVAILABLE


class ReplicaNotAvailableError(RetriableBrokerResponseError):
    errno = ErrorCode.REPLICA_NOT_AVAILABLE


class MessageSizeTooLargeError(BrokerResponseError):
    errno = ErrorCode.MESSAGE_TOO_LARGE


class StaleControllerEpochError(BrokerResponseError):
    errno = ErrorCode.STALE_CONTROLLER_EPOCH


class OffsetMetadataTooLargeError(BrokerResponseError):
    errno = ErrorCode.OFFSET_METADATA_TOO_LARGE


class NetworkException(RetriableBrokerResponseError):
    errno = ErrorCode.NETWORK_EXCEPTION


class CoordinatorLoadInProgress(RetriableBrokerResponseError):
    errno = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


class CoordinatorNotAvailable(RetriableBrokerResponseError):
    errno = ErrorCode.COORDINATOR_NOT_AVAILABLE


class NotCoordinator(RetriableBrokerResponseError):
    errno = ErrorCode.NOT_COORDINATOR


class InvalidTopic(BrokerResponseError):
    errno = ErrorCode.INVALID_TOPIC_EXCEPTION


class RecordListTooLarge(BrokerResponseError):
    errno = ErrorCode.RECORD_LIST_TOO_LARGE


class NotEnoughReplicas(RetriableBrokerResponseError):
    errno = ErrorCode.NOT_ENOUGH_REPLICAS


class NotEnoughReplicasAfterAppend(RetriableBrokerResponseError):
    errno = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND


class InvalidRequiredAcks(BrokerResponseError):
    errno = ErrorCode.INVALID_REQUIRED_ACKS


class IllegalGeneration(BrokerResponseError):
    errno = ErrorCode.ILLEGAL_GENERATION


class InconsistentGroupProtocol(BrokerResponseError):
    errno = ErrorCode.INCONSISTENT_GROUP_PROTOCOL


class InvalidGroupId(BrokerResponseError):
    errno = ErrorCode.INVALID_GROUP_ID


class UnknownMemberId(BrokerResponseError):
    errno = ErrorCode.UNKNOWN_MEMBER_ID


class InvalidSessionTimeout(BrokerResponseError):
    errno = ErrorCode.INVALID_SESSION_TIMEOUT


class RebalanceInProgress(BrokerResponseError):
    errno = ErrorCode.REBALANCE_IN_PROGRESS


class InvalidCommitOffsetSize(BrokerResponseError):
    errno = ErrorCode.INVALID_COMMIT_OFFSET_SIZE


class TopicAuthorizationFailed(BrokerResponseError):
    errno = ErrorCode.TOPIC_AUTHORIZATION_FAILED


class GroupAuthorizationFailed(BrokerResponseError):
    errno = ErrorCode.GROUP_AUTHORIZATION_FAILED


class ClusterAuthorizationFailed(BrokerResponseError):
    errno = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


class InvalidTimestamp(BrokerResponseError):
    errno = ErrorCode.INVALID_TIMESTAMP


class UnsupportedSaslMechanism(BrokerResponseError):
    errno = ErrorCode.UNSUPPORTED_SASL_MECHANISM


class IllegalSaslState(BrokerResponseError):
    errno = ErrorCode.ILLEGAL_SASL_STATE


class UnsupportedVersion(BrokerResponseError):
    errno = ErrorCode.UNSUPPORTED_VERSION


class TopicAlreadyExists(BrokerResponseError):
    errno = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidPartitions(BrokerResponseError):
    errno = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactor(BrokerResponseError):
    errno = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignment(BrokerResponseError):
    errno = ErrorCode.INVALID_REPLICA_ASSIGNMENT


class InvalidConfig(BrokerResponseError):
    errno = ErrorCode.INVALID_CONFIG


class NotController(RetriableBrokerResponseError):
    errno = ErrorCode.NOT_CONTROLLER


class InvalidRequest(BrokerResponseError):
    errno = ErrorCode.INVALID_REQUEST


class UnsupportedForMessageFormat(BrokerResponseError):
    errno = ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT


class PolicyViolation(BrokerResponseError):
    errno = ErrorCode.POLICY_VIOLATION


class OutOfOrderSequenceNumber(BrokerResponseError):
    errno = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class DuplicateSequenceNumber(BrokerResponseError):
    errno = ErrorCode.DUPLICATE_SEQUENCE_NUMBER


class InvalidProducerEpoch(BrokerResponseError):
    errno = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidTxnState(BrokerResponseError):
    errno = ErrorCode.INVALID_TXN_STATE


class InvalidProducerIdMapping(BrokerResponseError):
    errno = ErrorCode.INVALID_PRODUCER_ID_MAPPING


class InvalidTransactionTimeout(BrokerResponseError):
    errno = ErrorCode.INVALID_TRANSACTION_TIMEOUT


class ConcurrentTransactions(RetriableBrokerResponseError):
    errno = ErrorCode.CONCURRENT_TRANSACTIONS


class TransactionCoordinatorFenced(BrokerResponseError):
    errno = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class TransactionalIdAuthorizationFailed(BrokerResponseError):
    errno = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


class SecurityDisabled(BrokerResponseError):
    errno = ErrorCode.SECURITY_DISABLED


class OperationNotAttempted(BrokerResponseError):
    errno = ErrorCode.OPERATION_NOT_ATTEMPTED


class KafkaStorageError(RetriableBrokerResponseError):
    errno = ErrorCode.KAFKA_STORAGE_ERROR


class LogDirNotFound(BrokerResponseError):
    errno = ErrorCode.LOG_DIR_NOT_FOUND


class SaslAuthenticationFailed(BrokerResponseError):
    errno = ErrorCode.SASL_AUTHENTICATION_FAILED


class UnknownProducerId(BrokerResponseError):
    errno = ErrorCode.UNKNOWN_PRODUCER_ID


class ReassignmentInProgress(BrokerResponseError):
    errno = ErrorCode.REASSIGNMENT_IN_PROGRESS


class DelegationTokenAuthDisabled(BrokerResponseError):
    errno = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED


class DelegationTokenNotFound(BrokerResponseError):
    errno = ErrorCode.DELEGATION_TOKEN_NOT_FOUND


class DelegationTokenOwnerMismatch(BrokerResponseError):
    errno = ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH


class DelegationTokenRequestNotAllowed(BrokerResponseError):
    errno = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED


class DelegationTokenAuthorizationFailed(BrokerResponseError):
    errno = ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED


class DelegationTokenExpired(BrokerResponseError):
    errno = ErrorCode.DELEGATION_TOKEN_EXPIRED


class InvalidPrincipalType(BrokerResponseError):
    errno = ErrorCode.INVALID_PRINCIPAL_TYPE


class NonEmptyGroup(BrokerResponseError):
    errno = ErrorCode.NON_EMPTY_GROUP


class GroupIdNotFound(BrokerResponseError):
    errno = ErrorCode.GROUP_ID_NOT_FOUND


class FetchSessionIdNotFound(RetriableBrokerResponseError):
    errno = ErrorCode.FETCH_SESSION_ID_NOT_FOUND


class InvalidFetchSessionEpoch(RetriableBrokerResponseError):
    errno = ErrorCode.INVALID_FETCH_SESSION_EPOCH


class ListenerNotFound(RetriableBrokerResponseError):
    errno = ErrorCode.LISTENER_NOT_FOUND


class TopicDeletionDisabled(BrokerResponseError):
    errno = ErrorCode.TOPIC_DELETION_DISABLED


class FencedLeaderEpoch(RetriableBrokerResponseError):
    errno = ErrorCode.FENCED_LEADER_EPOCH


class UnknownLeaderEpoch(RetriableBrokerResponseError):
    errno = ErrorCode.UNKNOWN_LEADER_EPOCH


class UnsupportedCompressionType(BrokerResponseError):
    errno = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


class StaleBrokerEpoch(BrokerResponseError):
    errno = ErrorCode.STALE_BROKER_EPOCH


class OffsetNotAvailable(RetriableBrokerResponseError):
    errno = ErrorCode.OFFSET_NOT_AVAILABLE


class MemberIdRequired(BrokerResponseError):
    errno = ErrorCode.MEMBER_ID_REQUIRED


class PreferredLeaderNotAvailable(RetriableBrokerResponseError):
    errno = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE


class GroupMaxSizeReached(BrokerResponseError):
    errno = ErrorCode.GROUP_MAX_SIZE_REACHED


class FencedInstanceId(BrokerResponseError):
    errno = ErrorCode.FENCED_INSTANCE_ID


class EligibleLeadersNotAvailable(RetriableBrokerResponseError):
    errno = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE


class ElectionNotNeeded(RetriableBrokerResponseError):
    errno = ErrorCode.ELECTION_NOT_NEEDED


class NoReassignmentInProgress(BrokerResponseError):
    errno = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS


class GroupSubscribedToTopic(BrokerResponseError):
    errno = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC


class InvalidRecord(BrokerResponseError):
    errno = ErrorCode.INVALID_RECORD


class UnstableOffsetCommit(RetriableBrokerResponseError):
    errno = ErrorCode.UNSTABLE_OFFSET_COMMIT


class ThrottlingQuotaExceeded(RetriableBrokerResponseError):
    errno = ErrorCode.THROTTLING_QUOTA_EXCEEDED


class ProducerFenced(BrokerResponseError):
    errno = ErrorCode.PRODUCER_FENCED


class ResourceNotFound(BrokerResponseError):
    errno = ErrorCode.RESOURCE_NOT_FOUND


class DuplicateResource(BrokerResponseError):
    errno = ErrorCode.DUPLICATE_RESOURCE


class UnacceptableCredential(BrokerResponseError):
    errno = ErrorCode.UNACCEPTABLE_CREDENTIAL


class InconsistentVoterSet(BrokerResponseError):
    errno = ErrorCode.INCONSISTENT_VOTER_SET


class InvalidUpdateVersion(BrokerResponseError):
    errno = ErrorCode.INVALID_UPDATE_VERSION


class FeatureUpdateFailed(BrokerResponseError):
    errno = ErrorCode.FEATURE_UPDATE_FAILED


class PrincipalDeserializationFailure(BrokerResponseError):
    errno = ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE


class SnapshotNotFound(BrokerResponseError):
    errno = ErrorCode.SNAPSHOT_NOT_FOUND


class PositionOutOfRange(BrokerResponseError):
    errno = ErrorCode.POSITION_OUT_OF_RANGE


class UnknownTopicId(RetriableBrokerResponseError):
    errno = ErrorCode.UNKNOWN_TOPIC_ID


class DuplicateBrokerRegistration(BrokerResponseError):
    errno = ErrorCode.DUPLICATE_BROKER_REGISTRATION


class BrokerIdNotRegistered(BrokerResponseError):
    errno = ErrorCode.BROKER_ID_NOT_REGISTERED


class InconsistentTopicId(RetriableBrokerResponseError):
    errno = ErrorCode.INCONSISTENT_TOPIC_ID


class InconsistentClusterId(BrokerResponseError):
    errno = ErrorCode.INCONSISTENT_CLUSTER_ID


class TransactionalIdNotFound(BrokerResponseError):
    errno = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


class FetchSessionTopicIdError(RetriableBrokerResponseError):
    errno = ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR


class IneligibleReplica(BrokerResponseError):
    errno = ErrorCode.INELIGIBLE_REPLICA


class NewLeaderElected(BrokerResponseError):
    errno = ErrorCode.NEW_LEADER_ELECTED


class OffsetMovedToTieredStorage(BrokerResponseError):
    errno = ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE


class FencedMemberEpoch(BrokerResponseError):
    errno = ErrorCode.FENCED_MEMBER_EPOCH


class UnreleasedInstanceId(BrokerResponseError):
    errno = ErrorCode.UNRELEASED_INSTANCE_ID


class UnsupportedAssignor(BrokerResponseError):
    errno = ErrorCode.UNSUPPORTED_ASSIGNOR


class StaleMemberEpoch(BrokerResponseError):
    errno = ErrorCode.STALE_MEMBER_EPOCH


class MismatchedEndpointType(BrokerResponseError):
    errno = ErrorCode.MISMATCHED_ENDPOINT_TYPE


class UnsupportedEndpointType(BrokerResponseError):
    errno = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE


class UnknownControllerId(BrokerResponseError):
    errno = ErrorCode.UNKNOWN_CONTROLLER_ID


class UnknownSubscriptionId(BrokerResponseError):
    errno = ErrorCode.UNKNOWN_SUBSCRIPTION_ID


class TelemetryTooLarge(BrokerResponseError):
    errno = ErrorCode.TELEMETRY_TOO_LARGE


class InvalidRegistration(BrokerResponseError):
    errno = ErrorCode.INVALID_REGISTRATION


class TransactionAbortable(BrokerResponseError):
    errno = ErrorCode.TRANSACTION_ABORTABLE


class InvalidRecordState(BrokerResponseError):
    errno = ErrorCode.INVALID_RECORD_STATE


class ShareSessionNotFound(RetriableBrokerResponseError):
    errno = ErrorCode.SHARE_SESSION_NOT_FOUND


class InvalidShareSessionEpoch(RetriableBrokerResponseError):
    errno = ErrorCode.INVALID_SHARE_SESSION_EPOCH


class FencedStateEpoch(BrokerResponseError):
    errno = ErrorCode.FENCED_STATE_EPOCH


class InvalidVoterKey(BrokerResponseError):
    errno = ErrorCode.INVALID_VOTER_KEY


class DuplicateVoter(BrokerResponseError):
    errno = ErrorCode.DUPLICATE_VOTER


class VoterNotFound(BrokerResponseError):
    errno = ErrorCode.VOTER_NOT_FOUND


class InvalidRegularExpression(BrokerResponseError):
    errno = ErrorCode.INVALID_REGULAR_EXPRESSION


class RebootstrapRequired(BrokerResponseError):
    errno = ErrorCode.REBOOTSTRAP_REQUIRED


class StreamsInvalidTopology(BrokerResponseError):
    errno = ErrorCode.STREAMS_INVALID_TOPOLOGY


class StreamsInvalidTopologyEpoch(BrokerResponseError):
    errno = ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH


class StreamsTopologyFenced(BrokerResponseError):
    errno = ErrorCode.STREAMS_TOPOLOGY_FENCED


class ShareSessionLimitReached(RetriableBrokerResponseError):
    errno = ErrorCode.SHARE_SESSION_LIMIT_REACHED


# afkak's historical aliases.
ConsumerCoordinatorNotAvailableError = CoordinatorNotAvailable
InvalidMessageError = CorruptMessage
NotCoordinatorForConsumerError = NotCoordinator
OffsetsLoadInProgressError = CoordinatorLoadInProgress
StaleLeaderEpochCodeError = NetworkException

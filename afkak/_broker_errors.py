"""Broker error codes: one :class:`BrokerResponseError` subclass per Kafka error code.

The table covers every code that Apache Kafka 4.3 defines (-1 and 1..133).
Class names for codes 1..72 are afkak's historical ones (some end in
``Error``, some do not); newer codes use the CamelCase of the Kafka name.
``message`` is Kafka's current name for the code and ``retriable`` follows
Kafka (the Java exception is a ``RetriableException``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from afkak._errors import KafkaError


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


def error_code(error: type[BrokerResponseError]) -> int:
    """The Kafka error code of *error*, for code that compares codes in responses."""
    if error.errno is None:
        raise TypeError(f"{error.__name__} has no error code")
    return error.errno


class RetriableBrokerResponseError(BrokerResponseError):
    """The shared superclass of all broker errors which can be retried."""

    retriable = True


class UnknownError(BrokerResponseError):
    errno = -1
    message = "UNKNOWN_SERVER_ERROR"


class OffsetOutOfRangeError(BrokerResponseError):
    errno = 1
    message = "OFFSET_OUT_OF_RANGE"


class CorruptMessage(RetriableBrokerResponseError):
    errno = 2
    message = "CORRUPT_MESSAGE"


class UnknownTopicOrPartitionError(RetriableBrokerResponseError):
    errno = 3
    message = "UNKNOWN_TOPIC_OR_PARTITION"


class InvalidFetchRequestError(BrokerResponseError):
    errno = 4
    message = "INVALID_FETCH_SIZE"


class LeaderNotAvailableError(RetriableBrokerResponseError):
    errno = 5
    message = "LEADER_NOT_AVAILABLE"


class NotLeaderForPartitionError(RetriableBrokerResponseError):
    errno = 6
    message = "NOT_LEADER_OR_FOLLOWER"


class RequestTimedOutError(RetriableBrokerResponseError):
    errno = 7
    message = "REQUEST_TIMED_OUT"


class BrokerNotAvailableError(BrokerResponseError):
    errno = 8
    message = "BROKER_NOT_AVAILABLE"


class ReplicaNotAvailableError(RetriableBrokerResponseError):
    errno = 9
    message = "REPLICA_NOT_AVAILABLE"


class MessageSizeTooLargeError(BrokerResponseError):
    errno = 10
    message = "MESSAGE_TOO_LARGE"


class StaleControllerEpochError(BrokerResponseError):
    errno = 11
    message = "STALE_CONTROLLER_EPOCH"


class OffsetMetadataTooLargeError(BrokerResponseError):
    errno = 12
    message = "OFFSET_METADATA_TOO_LARGE"


class NetworkException(RetriableBrokerResponseError):
    errno = 13
    message = "NETWORK_EXCEPTION"


class CoordinatorLoadInProgress(RetriableBrokerResponseError):
    errno = 14
    message = "COORDINATOR_LOAD_IN_PROGRESS"


class CoordinatorNotAvailable(RetriableBrokerResponseError):
    errno = 15
    message = "COORDINATOR_NOT_AVAILABLE"


class NotCoordinator(RetriableBrokerResponseError):
    errno = 16
    message = "NOT_COORDINATOR"


class InvalidTopic(BrokerResponseError):
    errno = 17
    message = "INVALID_TOPIC_EXCEPTION"


class RecordListTooLarge(BrokerResponseError):
    errno = 18
    message = "RECORD_LIST_TOO_LARGE"


class NotEnoughReplicas(RetriableBrokerResponseError):
    errno = 19
    message = "NOT_ENOUGH_REPLICAS"


class NotEnoughReplicasAfterAppend(RetriableBrokerResponseError):
    errno = 20
    message = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"


class InvalidRequiredAcks(BrokerResponseError):
    errno = 21
    message = "INVALID_REQUIRED_ACKS"


class IllegalGeneration(BrokerResponseError):
    errno = 22
    message = "ILLEGAL_GENERATION"


class InconsistentGroupProtocol(BrokerResponseError):
    errno = 23
    message = "INCONSISTENT_GROUP_PROTOCOL"


class InvalidGroupId(BrokerResponseError):
    errno = 24
    message = "INVALID_GROUP_ID"


class UnknownMemberId(BrokerResponseError):
    errno = 25
    message = "UNKNOWN_MEMBER_ID"


class InvalidSessionTimeout(BrokerResponseError):
    errno = 26
    message = "INVALID_SESSION_TIMEOUT"


class RebalanceInProgress(BrokerResponseError):
    errno = 27
    message = "REBALANCE_IN_PROGRESS"


class InvalidCommitOffsetSize(BrokerResponseError):
    errno = 28
    message = "INVALID_COMMIT_OFFSET_SIZE"


class TopicAuthorizationFailed(BrokerResponseError):
    errno = 29
    message = "TOPIC_AUTHORIZATION_FAILED"


class GroupAuthorizationFailed(BrokerResponseError):
    errno = 30
    message = "GROUP_AUTHORIZATION_FAILED"


class ClusterAuthorizationFailed(BrokerResponseError):
    errno = 31
    message = "CLUSTER_AUTHORIZATION_FAILED"


class InvalidTimestamp(BrokerResponseError):
    errno = 32
    message = "INVALID_TIMESTAMP"


class UnsupportedSaslMechanism(BrokerResponseError):
    errno = 33
    message = "UNSUPPORTED_SASL_MECHANISM"


class IllegalSaslState(BrokerResponseError):
    errno = 34
    message = "ILLEGAL_SASL_STATE"


class UnsupportedVersion(BrokerResponseError):
    errno = 35
    message = "UNSUPPORTED_VERSION"


class TopicAlreadyExists(BrokerResponseError):
    errno = 36
    message = "TOPIC_ALREADY_EXISTS"


class InvalidPartitions(BrokerResponseError):
    errno = 37
    message = "INVALID_PARTITIONS"


class InvalidReplicationFactor(BrokerResponseError):
    errno = 38
    message = "INVALID_REPLICATION_FACTOR"


class InvalidReplicaAssignment(BrokerResponseError):
    errno = 39
    message = "INVALID_REPLICA_ASSIGNMENT"


class InvalidConfig(BrokerResponseError):
    errno = 40
    message = "INVALID_CONFIG"


class NotController(RetriableBrokerResponseError):
    errno = 41
    message = "NOT_CONTROLLER"


class InvalidRequest(BrokerResponseError):
    errno = 42
    message = "INVALID_REQUEST"


class UnsupportedForMessageFormat(BrokerResponseError):
    errno = 43
    message = "UNSUPPORTED_FOR_MESSAGE_FORMAT"


class PolicyViolation(BrokerResponseError):
    errno = 44
    message = "POLICY_VIOLATION"


class OutOfOrderSequenceNumber(BrokerResponseError):
    errno = 45
    message = "OUT_OF_ORDER_SEQUENCE_NUMBER"


class DuplicateSequenceNumber(BrokerResponseError):
    errno = 46
    message = "DUPLICATE_SEQUENCE_NUMBER"


class InvalidProducerEpoch(BrokerResponseError):
    errno = 47
    message = "INVALID_PRODUCER_EPOCH"


class InvalidTxnState(BrokerResponseError):
    errno = 48
    message = "INVALID_TXN_STATE"


class InvalidProducerIdMapping(BrokerResponseError):
    errno = 49
    message = "INVALID_PRODUCER_ID_MAPPING"


class InvalidTransactionTimeout(BrokerResponseError):
    errno = 50
    message = "INVALID_TRANSACTION_TIMEOUT"


class ConcurrentTransactions(BrokerResponseError):
    errno = 51
    message = "CONCURRENT_TRANSACTIONS"


class TransactionCoordinatorFenced(BrokerResponseError):
    errno = 52
    message = "TRANSACTION_COORDINATOR_FENCED"


class TransactionalIdAuthorizationFailed(BrokerResponseError):
    errno = 53
    message = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


class SecurityDisabled(BrokerResponseError):
    errno = 54
    message = "SECURITY_DISABLED"


class OperationNotAttempted(BrokerResponseError):
    errno = 55
    message = "OPERATION_NOT_ATTEMPTED"


class KafkaStorageError(RetriableBrokerResponseError):
    errno = 56
    message = "KAFKA_STORAGE_ERROR"


class LogDirNotFound(BrokerResponseError):
    errno = 57
    message = "LOG_DIR_NOT_FOUND"


class SaslAuthenticationFailed(BrokerResponseError):
    errno = 58
    message = "SASL_AUTHENTICATION_FAILED"


class UnknownProducerId(BrokerResponseError):
    errno = 59
    message = "UNKNOWN_PRODUCER_ID"


class ReassignmentInProgress(BrokerResponseError):
    errno = 60
    message = "REASSIGNMENT_IN_PROGRESS"


class DelegationTokenAuthDisabled(BrokerResponseError):
    errno = 61
    message = "DELEGATION_TOKEN_AUTH_DISABLED"


class DelegationTokenNotFound(BrokerResponseError):
    errno = 62
    message = "DELEGATION_TOKEN_NOT_FOUND"


class DelegationTokenOwnerMismatch(BrokerResponseError):
    errno = 63
    message = "DELEGATION_TOKEN_OWNER_MISMATCH"


class DelegationTokenRequestNotAllowed(BrokerResponseError):
    errno = 64
    message = "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"


class DelegationTokenAuthorizationFailed(BrokerResponseError):
    errno = 65
    message = "DELEGATION_TOKEN_AUTHORIZATION_FAILED"


class DelegationTokenExpired(BrokerResponseError):
    errno = 66
    message = "DELEGATION_TOKEN_EXPIRED"


class InvalidPrincipalType(BrokerResponseError):
    errno = 67
    message = "INVALID_PRINCIPAL_TYPE"


class NonEmptyGroup(BrokerResponseError):
    errno = 68
    message = "NON_EMPTY_GROUP"


class GroupIdNotFound(BrokerResponseError):
    errno = 69
    message = "GROUP_ID_NOT_FOUND"


class FetchSessionIdNotFound(RetriableBrokerResponseError):
    errno = 70
    message = "FETCH_SESSION_ID_NOT_FOUND"


class InvalidFetchSessionEpoch(RetriableBrokerResponseError):
    errno = 71
    message = "INVALID_FETCH_SESSION_EPOCH"


class ListenerNotFound(RetriableBrokerResponseError):
    errno = 72
    message = "LISTENER_NOT_FOUND"


class TopicDeletionDisabled(BrokerResponseError):
    errno = 73
    message = "TOPIC_DELETION_DISABLED"


class FencedLeaderEpoch(RetriableBrokerResponseError):
    errno = 74
    message = "FENCED_LEADER_EPOCH"


class UnknownLeaderEpoch(RetriableBrokerResponseError):
    errno = 75
    message = "UNKNOWN_LEADER_EPOCH"


class UnsupportedCompressionType(BrokerResponseError):
    errno = 76
    message = "UNSUPPORTED_COMPRESSION_TYPE"


class StaleBrokerEpoch(BrokerResponseError):
    errno = 77
    message = "STALE_BROKER_EPOCH"


class OffsetNotAvailable(RetriableBrokerResponseError):
    errno = 78
    message = "OFFSET_NOT_AVAILABLE"


class MemberIdRequired(BrokerResponseError):
    errno = 79
    message = "MEMBER_ID_REQUIRED"


class PreferredLeaderNotAvailable(RetriableBrokerResponseError):
    errno = 80
    message = "PREFERRED_LEADER_NOT_AVAILABLE"


class GroupMaxSizeReached(BrokerResponseError):
    errno = 81
    message = "GROUP_MAX_SIZE_REACHED"


class FencedInstanceId(BrokerResponseError):
    errno = 82
    message = "FENCED_INSTANCE_ID"


class EligibleLeadersNotAvailable(RetriableBrokerResponseError):
    errno = 83
    message = "ELIGIBLE_LEADERS_NOT_AVAILABLE"


class ElectionNotNeeded(RetriableBrokerResponseError):
    errno = 84
    message = "ELECTION_NOT_NEEDED"


class NoReassignmentInProgress(BrokerResponseError):
    errno = 85
    message = "NO_REASSIGNMENT_IN_PROGRESS"


class GroupSubscribedToTopic(BrokerResponseError):
    errno = 86
    message = "GROUP_SUBSCRIBED_TO_TOPIC"


class InvalidRecord(BrokerResponseError):
    errno = 87
    message = "INVALID_RECORD"


class UnstableOffsetCommit(RetriableBrokerResponseError):
    errno = 88
    message = "UNSTABLE_OFFSET_COMMIT"


class ThrottlingQuotaExceeded(RetriableBrokerResponseError):
    errno = 89
    message = "THROTTLING_QUOTA_EXCEEDED"


class ProducerFenced(BrokerResponseError):
    errno = 90
    message = "PRODUCER_FENCED"


class ResourceNotFound(BrokerResponseError):
    errno = 91
    message = "RESOURCE_NOT_FOUND"


class DuplicateResource(BrokerResponseError):
    errno = 92
    message = "DUPLICATE_RESOURCE"


class UnacceptableCredential(BrokerResponseError):
    errno = 93
    message = "UNACCEPTABLE_CREDENTIAL"


class InconsistentVoterSet(BrokerResponseError):
    errno = 94
    message = "INCONSISTENT_VOTER_SET"


class InvalidUpdateVersion(BrokerResponseError):
    errno = 95
    message = "INVALID_UPDATE_VERSION"


class FeatureUpdateFailed(BrokerResponseError):
    errno = 96
    message = "FEATURE_UPDATE_FAILED"


class PrincipalDeserializationFailure(BrokerResponseError):
    errno = 97
    message = "PRINCIPAL_DESERIALIZATION_FAILURE"


class SnapshotNotFound(BrokerResponseError):
    errno = 98
    message = "SNAPSHOT_NOT_FOUND"


class PositionOutOfRange(BrokerResponseError):
    errno = 99
    message = "POSITION_OUT_OF_RANGE"


class UnknownTopicId(RetriableBrokerResponseError):
    errno = 100
    message = "UNKNOWN_TOPIC_ID"


class DuplicateBrokerRegistration(BrokerResponseError):
    errno = 101
    message = "DUPLICATE_BROKER_REGISTRATION"


class BrokerIdNotRegistered(BrokerResponseError):
    errno = 102
    message = "BROKER_ID_NOT_REGISTERED"


class InconsistentTopicId(RetriableBrokerResponseError):
    errno = 103
    message = "INCONSISTENT_TOPIC_ID"


class InconsistentClusterId(BrokerResponseError):
    errno = 104
    message = "INCONSISTENT_CLUSTER_ID"


class TransactionalIdNotFound(BrokerResponseError):
    errno = 105
    message = "TRANSACTIONAL_ID_NOT_FOUND"


class FetchSessionTopicIdError(RetriableBrokerResponseError):
    errno = 106
    message = "FETCH_SESSION_TOPIC_ID_ERROR"


class IneligibleReplica(BrokerResponseError):
    errno = 107
    message = "INELIGIBLE_REPLICA"


class NewLeaderElected(BrokerResponseError):
    errno = 108
    message = "NEW_LEADER_ELECTED"


class OffsetMovedToTieredStorage(BrokerResponseError):
    errno = 109
    message = "OFFSET_MOVED_TO_TIERED_STORAGE"


class FencedMemberEpoch(BrokerResponseError):
    errno = 110
    message = "FENCED_MEMBER_EPOCH"


class UnreleasedInstanceId(BrokerResponseError):
    errno = 111
    message = "UNRELEASED_INSTANCE_ID"


class UnsupportedAssignor(BrokerResponseError):
    errno = 112
    message = "UNSUPPORTED_ASSIGNOR"


class StaleMemberEpoch(BrokerResponseError):
    errno = 113
    message = "STALE_MEMBER_EPOCH"


class MismatchedEndpointType(BrokerResponseError):
    errno = 114
    message = "MISMATCHED_ENDPOINT_TYPE"


class UnsupportedEndpointType(BrokerResponseError):
    errno = 115
    message = "UNSUPPORTED_ENDPOINT_TYPE"


class UnknownControllerId(BrokerResponseError):
    errno = 116
    message = "UNKNOWN_CONTROLLER_ID"


class UnknownSubscriptionId(BrokerResponseError):
    errno = 117
    message = "UNKNOWN_SUBSCRIPTION_ID"


class TelemetryTooLarge(BrokerResponseError):
    errno = 118
    message = "TELEMETRY_TOO_LARGE"


class InvalidRegistration(BrokerResponseError):
    errno = 119
    message = "INVALID_REGISTRATION"


class TransactionAbortable(BrokerResponseError):
    errno = 120
    message = "TRANSACTION_ABORTABLE"


class InvalidRecordState(BrokerResponseError):
    errno = 121
    message = "INVALID_RECORD_STATE"


class ShareSessionNotFound(RetriableBrokerResponseError):
    errno = 122
    message = "SHARE_SESSION_NOT_FOUND"


class InvalidShareSessionEpoch(RetriableBrokerResponseError):
    errno = 123
    message = "INVALID_SHARE_SESSION_EPOCH"


class FencedStateEpoch(BrokerResponseError):
    errno = 124
    message = "FENCED_STATE_EPOCH"


class InvalidVoterKey(BrokerResponseError):
    errno = 125
    message = "INVALID_VOTER_KEY"


class DuplicateVoter(BrokerResponseError):
    errno = 126
    message = "DUPLICATE_VOTER"


class VoterNotFound(BrokerResponseError):
    errno = 127
    message = "VOTER_NOT_FOUND"


class InvalidRegularExpression(BrokerResponseError):
    errno = 128
    message = "INVALID_REGULAR_EXPRESSION"


class RebootstrapRequired(BrokerResponseError):
    errno = 129
    message = "REBOOTSTRAP_REQUIRED"


class StreamsInvalidTopology(BrokerResponseError):
    errno = 130
    message = "STREAMS_INVALID_TOPOLOGY"


class StreamsInvalidTopologyEpoch(BrokerResponseError):
    errno = 131
    message = "STREAMS_INVALID_TOPOLOGY_EPOCH"


class StreamsTopologyFenced(BrokerResponseError):
    errno = 132
    message = "STREAMS_TOPOLOGY_FENCED"


class ShareSessionLimitReached(RetriableBrokerResponseError):
    errno = 133
    message = "SHARE_SESSION_LIMIT_REACHED"


# afkak's historical aliases.
ConsumerCoordinatorNotAvailableError = CoordinatorNotAvailable
InvalidMessageError = CorruptMessage
NotCoordinatorForConsumerError = NotCoordinator
OffsetsLoadInProgressError = CoordinatorLoadInProgress
StaleLeaderEpochCodeError = NetworkException

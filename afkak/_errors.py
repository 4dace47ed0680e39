"""Client-side exceptions: the base of afkak's error hierarchy.

Broker error codes live in :mod:`afkak._broker_errors`; both are re-exported
by :mod:`afkak.common`, which is the public place to import them from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred


class KafkaError(RuntimeError):
    """Base class of every afkak error.

    ``retriable`` says whether repeating the operation that failed may
    succeed (possibly after a metadata refresh or a reconnect).
    """

    retriable: bool = False


class ClientError(KafkaError):
    """Generic error when the client detects an error."""


class ProtocolError(KafkaError):
    """Bytes on the wire do not follow the Kafka protocol."""


class DecodeError(ProtocolError):
    """A frame, message or record batch could not be decoded.

    The one error type that malformed input raises: a truncated frame, a length
    that is negative where it may not be or runs past the end, trailing garbage,
    an invalid varint.  ``api_key`` and ``version`` name the message being
    decoded (``None`` outside a message, e.g. in a record batch) and ``offset``
    is the byte offset in the buffer where decoding failed.
    """

    def __init__(
        self,
        reason: str,
        *,
        api_key: int | None = None,
        version: int | None = None,
        offset: int | None = None,
    ) -> None:
        self.reason = reason
        self.api_key = api_key
        self.version = version
        self.offset = offset
        where = []
        if api_key is not None:
            where.append(f"api_key={api_key}")
        if version is not None:
            where.append(f"version={version}")
        if offset is not None:
            where.append(f"offset={offset}")
        super().__init__(f"{reason} ({', '.join(where)})" if where else reason)


class ChecksumError(DecodeError):
    """A record batch or legacy message failed its CRC check.

    ``batch_offset`` is the Kafka offset (not byte offset) of the batch or message.
    """

    def __init__(self, reason: str, *, batch_offset: int, offset: int | None = None) -> None:
        self.batch_offset = batch_offset
        super().__init__(f"{reason} (batch at Kafka offset {batch_offset})", offset=offset)


class EncodeError(ProtocolError, ValueError):
    """A value cannot be encoded at the requested version.

    Raised, naming the field and version, when a non-default value is set on a
    non-ignorable field that the version lacks, when ``None`` is given for a
    field that is not nullable in that version, or when a value is out of range.
    """


class UnsupportedCodecError(ClientError):
    """A compression codec is unknown, or its optional library is not installed."""


class BufferUnderflowError(DecodeError):
    """A buffer ended before the value being decoded (afkak's old name for a short read)."""


class ConsumerFetchSizeTooSmall(KafkaError):
    """A message is larger than the consumer's maximum fetch buffer."""


class LogTruncationError(KafkaError):
    """The log was truncated below the consumer's position (KIP-320).

    Java's ``LogTruncationException``: after an unclean leader election the
    new leader lacks records the consumer had read.  Raised when the
    consumer has no ``auto_offset_reset``; ``divergent_offset`` is the first
    offset the new leader does not share with what was read (None: unknown),
    ``position`` the consumer's.
    """

    def __init__(
        self, message: str, topic: str, partition: int, position: int, divergent_offset: int | None
    ) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.position = position
        self.divergent_offset = divergent_offset


class DuplicateRequestError(KafkaError):
    """A request was made with a correlation id that is already in flight."""


class FailedPayloadsError(KafkaError):
    """A request fanned out to several brokers failed in part or in whole.

    In a method like ``KafkaClient.send_produce_request()`` partial failure is
    possible because payloads are distributed among the brokers that lead each
    partition.  ``responses`` holds the responses that did arrive and
    ``failed_payloads`` a list of ``(payload, failure)`` pairs.
    """

    def __init__(self, responses: list[Any], failed_payloads: list[tuple[Any, Any]]) -> None:
        super().__init__(responses, failed_payloads)

    @property
    def responses(self) -> list[Any]:
        return self.args[0]

    @property
    def failed_payloads(self) -> list[tuple[Any, Any]]:
        return self.args[1]


class InvalidConsumerGroupError(KafkaError):
    """The consumer group name is not valid (e.g. empty or not a ``str``)."""


class KafkaUnavailableError(KafkaError):
    """No broker of the cluster could be reached."""

    retriable = True  # the cluster may come back


class LeaderUnavailableError(KafkaError):
    """The partition has no leader in the cluster metadata (election in progress)."""

    retriable = True


class PartitionUnavailableError(KafkaError):
    """The topic or partition is not in the cluster metadata (yet)."""

    retriable = True


class NoResponseError(KafkaError):
    """A request that expects a response was answered with none."""


class CancelledError(KafkaError):
    """An operation was cancelled, e.g. because the client was closed.

    ``request_sent`` tells whether the request had already been written to the
    broker (``True``), had not (``False``), or is unknown (``None``): a request
    that was sent may have taken effect.
    """

    def __init__(self, request_sent: bool | None = None, message: str | None = None) -> None:
        self.request_sent = request_sent
        self.message = message
        super().__init__(*(() if message is None else (message,)))


class KafkaTimeoutError(ClientError):
    """The producer gave up on a send in time (Java's ``TimeoutException``)."""


class DeliveryTimeoutError(KafkaTimeoutError):
    """A record was not acknowledged within the producer's ``delivery_timeout_ms``.

    Kafka's Java producer reports this as a ``TimeoutException``; the record
    may or may not have been written.
    """


class BufferExhaustedError(KafkaTimeoutError):
    """A send got no buffer space within the producer's ``max_block_ms``.

    As Java's ``BufferExhaustedException``: the buffer (``buffer_memory``)
    stayed full, usually because the brokers are slow or unreachable.  The
    record was not written.
    """


class TransactionStateError(ClientError):
    """A transactional producer call made in a state that does not allow it.

    Such as a send outside a begun transaction, or ``begin_transaction()``
    before ``init_transactions()``.
    """


class TransactionAbortedError(KafkaError):
    """A send that was not written because its transaction was aborted."""


class OperationInProgress(KafkaError):
    """The operation is already under way; ``deferred`` fires when it completes."""

    def __init__(self, deferred: Deferred[Any] | None = None) -> None:
        self.deferred = deferred
        super().__init__()


class RestartError(ClientError):
    """``start()`` was called on a consumer that is already running."""


class RestopError(ClientError):
    """``stop()`` or ``shutdown()`` was called on a consumer that is not running."""


class NoCommonVersionError(ClientError):
    """The broker does not support this: it lacks the API, or every version of it
    that afkak can speak (or that the request needs, e.g. ListOffsets v7 for
    ``MAX_TIMESTAMP``).

    Distinct from the broker error :class:`afkak.common.UnsupportedVersion`
    (errno 35): this one is raised by the client, before anything is sent, when
    the ranges from the broker's ApiVersions response do not overlap afkak's.
    The message names the API, both sides' versions and the broker; so do the
    attributes: ``api_name``, ``api_key``, ``afkak_versions`` and
    ``broker_versions`` (``(min, max)``; ``None``: the broker lacks the API) and
    ``broker`` (``"host:port"``), each ``None`` when not known.
    """

    def __init__(
        self,
        message: str,
        *,
        api_name: str | None = None,
        api_key: int | None = None,
        afkak_versions: tuple[int, int] | None = None,
        broker_versions: tuple[int, int] | None = None,
        broker: str | None = None,
    ) -> None:
        super().__init__(message)
        self.api_name = api_name
        self.api_key = api_key
        self.afkak_versions = afkak_versions
        self.broker_versions = broker_versions
        self.broker = broker


class ConnectionError(ClientError):  # afkak's documented name; shadows the built-in here
    """A connection to a broker failed.

    Not exported by ``from afkak.common import *`` because it would shadow the
    built-in :class:`ConnectionError`; import it by name.
    """


class BrokerConnectionError(ConnectionError):
    """The connection to a broker was lost or refused, possibly with the request in flight.

    Retriable: the request may be sent again on a new connection.  Whether a
    request that was in flight took effect on the broker is unknown, so
    non-idempotent requests (e.g. a produce without idempotence) may be
    duplicated by a retry.
    """

    retriable = True


class TLSListenerError(BrokerConnectionError):
    """A client without TLS reached a TLS listener: the broker answered the first
    request with a TLS record.  Not retriable: pass ``tls=`` or use the
    listener without TLS.
    """

    retriable = False


class TLSAuthenticationFailed(BrokerConnectionError):
    """The broker ended the TLS session before answering anything: with TLS 1.3 a
    broker checks the client's certificate only after the client's side of the
    handshake is done, so a missing or untrusted client certificate shows up as
    this.  Not retriable: a new connection would be refused the same way.
    """

    retriable = False

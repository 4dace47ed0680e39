"""The Producer's settings, checked and resolved from its constructor arguments.

Resolving means applying the rules that tie settings together: idempotence
is on by default and implies ``acks=all``; an explicit ``req_acks`` other than
all turns the default idempotence off (as Kafka's producer does since 3.0),
while an explicit ``enable_idempotence=True`` with such ``req_acks`` is an
error.  ``batch_send=True`` makes afkak's ``batch_every_*`` triggers the
batching policy, with ``batch_every_t`` as the linger.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from afkak._retry import RetryPolicy, backoff_policy
from afkak.client._interlayer import INT32_MAX, integer
from afkak.codec import CODEC_NAMES, CODEC_NONE, check_compression_level, compress
from afkak.common import PRODUCER_ACK_ALL_REPLICAS, PRODUCER_ACK_LOCAL_WRITE

#: Marks an argument the caller did not pass.
UNSET: Any = type("Unset", (), {"__repr__": lambda self: "<unset>"})()

_ACKS = (-1, 0, 1)
#: Kafka refuses more than five in-flight batches per partition with idempotence.
MAX_IDEMPOTENT_IN_FLIGHT = 5


@attrs.frozen
class Options:
    acks: int
    idempotent: bool
    ack_timeout_ms: int
    #: Attempts per batch (or lookup) at most; unlimited unless set, as Kafka's ``retries``.
    max_attempts: int
    retry_interval: float
    #: What each retry's wait is multiplied by (``Producer.RETRY_INTERVAL_FACTOR``).
    retry_factor: float
    #: ``retry.backoff.max.ms`` in seconds.
    retry_backoff_max: float
    #: ``delivery.timeout.ms`` in seconds.
    delivery_timeout: float
    #: ``max.block.ms`` in seconds: the longest a send waits for buffer space.
    max_block: float
    codec: int
    #: The codec's compression level (None: its default).
    compression_level: int | None
    batch_send: bool
    batch_every_n: int
    batch_every_b: int
    #: Seconds a batch may wait for more records (``None``: until a trigger).
    linger: float | None
    batch_size: int
    max_in_flight: int
    buffer_memory: int
    retry_unknown_outcome: bool
    #: ``None``: the client's.
    max_request_size: int | None

    def retry_policy(self, uniform: Callable[[float, float], float]) -> RetryPolicy:
        """Kafka's retry backoff: *retry_interval* growing to *retry_backoff_max*, jittered
        by *uniform* (the client's random source)."""
        return backoff_policy(
            self.retry_interval,
            max(self.retry_interval, self.retry_backoff_max),
            factor=self.retry_factor,
            uniform=uniform,
        )


def _int(name: str, value: Any, low: int) -> int:
    """An int setting: at least *low*, at most the protocol's int32."""
    return integer(name, value, low, INT32_MAX)


def _number(name: str, value: Any, low: float) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, not {value!r}")
    if not value >= low:
        raise ValueError(f"{name} must be at least {low}, not {value!r}")
    return float(value)


def _acks(
    req_acks: Any, enable_idempotence: Any, transactional_id: Any, transaction_timeout_ms: Any
) -> tuple[int, bool]:
    """The acks and whether the producer is idempotent (a transactional one is)."""
    if req_acks is not UNSET and (req_acks not in _ACKS or isinstance(req_acks, bool)):
        raise ValueError(f"req_acks must be one of {_ACKS}, not {req_acks!r}")
    if transactional_id is not None:
        _check_transactional(transactional_id, enable_idempotence, transaction_timeout_ms)
        enable_idempotence = True
    if enable_idempotence is UNSET:
        idempotent = req_acks in (UNSET, PRODUCER_ACK_ALL_REPLICAS)
    elif isinstance(enable_idempotence, bool):
        idempotent = enable_idempotence
        if idempotent and req_acks not in (UNSET, PRODUCER_ACK_ALL_REPLICAS):
            raise ValueError(
                f"enable_idempotence=True needs req_acks=-1 (all replicas), not {req_acks!r}"
            )
    else:
        raise TypeError(f"enable_idempotence must be a bool, not {enable_idempotence!r}")
    if req_acks is UNSET:
        return (PRODUCER_ACK_ALL_REPLICAS if idempotent else PRODUCER_ACK_LOCAL_WRITE), idempotent
    return req_acks, idempotent


def _check_transactional(
    transactional_id: Any, enable_idempotence: Any, transaction_timeout_ms: Any
) -> None:
    if not isinstance(transactional_id, str) or not transactional_id:
        raise TypeError(f"transactional_id must be a non-empty str, not {transactional_id!r}")
    if enable_idempotence is False:
        raise ValueError("a transactional producer is idempotent: enable_idempotence=False")
    if (
        isinstance(transaction_timeout_ms, bool)
        or not isinstance(transaction_timeout_ms, int)
        or not 0 < transaction_timeout_ms < 2**31
    ):
        raise ValueError(
            f"transaction_timeout_ms must be a positive int, not {transaction_timeout_ms!r}"
        )


def _codec(codec: Any) -> int:
    """The codec, checked (UnsupportedCodecError when its library is missing)."""
    if codec is None:
        codec = CODEC_NONE
    if codec not in CODEC_NAMES or isinstance(codec, bool):
        raise ValueError(f"unknown compression codec {codec!r}")
    compress(codec, b"")
    return codec  # type: ignore[no-any-return]


def resolve(
    *,
    req_acks: Any,
    ack_timeout: Any,
    max_req_attempts: Any,
    retry_interval: Any,
    retry_backoff_max_ms: Any,
    retry_factor: Any = 2.0,
    delivery_timeout_ms: Any,
    codec: Any,
    max_block_ms: Any = 60_000,
    compression_level: Any = None,
    batch_send: Any,
    batch_every_n: Any,
    batch_every_b: Any,
    batch_every_t: Any,
    enable_idempotence: Any,
    linger_ms: Any,
    batch_size: Any,
    max_in_flight_per_partition: Any,
    buffer_memory: Any,
    retry_unknown_outcome: Any,
    transactional_id: Any = None,
    transaction_timeout_ms: Any = 60_000,
    max_request_size: Any = None,
) -> Options:
    """Check the arguments (TypeError / ValueError) and resolve their defaults."""
    acks, idempotent = _acks(req_acks, enable_idempotence, transactional_id, transaction_timeout_ms)
    codec = _codec(codec)
    batch_send = bool(batch_send)
    # afkak 21: a trigger of 0 or None is off.
    every_n = 0 if batch_every_n is None else _int("batch_every_n", batch_every_n, 0)
    every_b = 0 if batch_every_b is None else _int("batch_every_b", batch_every_b, 0)
    every_t = 0 if batch_every_t is None else _number("batch_every_t", batch_every_t, 0)
    if batch_send:
        if not (every_n or every_b or every_t):
            raise ValueError("batch_send needs one of batch_every_n, _b or _t to be non-zero")
        linger = every_t or None
    else:
        linger = _int("linger_ms", linger_ms, 0) / 1000.0
    in_flight = _int("max_in_flight_per_partition", max_in_flight_per_partition, 1)
    if idempotent and in_flight > MAX_IDEMPOTENT_IN_FLIGHT:
        raise ValueError(
            f"idempotence allows at most {MAX_IDEMPOTENT_IN_FLIGHT} requests in flight"
            f" per partition, not {in_flight}"
        )
    return Options(
        acks=acks,
        idempotent=idempotent,
        ack_timeout_ms=_int("ack_timeout", ack_timeout, 0),
        max_attempts=(
            INT32_MAX
            if max_req_attempts is UNSET
            else _int("max_req_attempts", max_req_attempts, 1)
        ),
        retry_interval=_number("retry_interval", retry_interval, 0),
        retry_factor=_number("RETRY_INTERVAL_FACTOR", retry_factor, 1),
        retry_backoff_max=_int("retry_backoff_max_ms", retry_backoff_max_ms, 0) / 1000.0,
        delivery_timeout=_int("delivery_timeout_ms", delivery_timeout_ms, 1) / 1000.0,
        max_block=_int("max_block_ms", max_block_ms, 0) / 1000.0,
        codec=codec,
        compression_level=check_compression_level(codec, compression_level),
        batch_send=batch_send,
        batch_every_n=every_n,
        batch_every_b=every_b,
        linger=linger,
        batch_size=_int("batch_size", batch_size, 1),
        max_in_flight=in_flight,
        buffer_memory=integer("buffer_memory", buffer_memory, 1, 2**63 - 1),
        retry_unknown_outcome=bool(retry_unknown_outcome),
        max_request_size=None
        if max_request_size is None
        else _int("max_request_size", max_request_size, 1024),
    )

"""Message construction for ``KafkaClient.send_produce_request()``.

afkak 21 compressed a message set by wrapping it in one compressed message
(attributes carrying the codec, value the compressed inner message set), and
applications hold on to that wrapper (``create_message_set(...)[0]``) or mix
it with plain messages.  afkak writes only record batch v2, where compression
applies to a whole batch, so the client opens every wrapper again
(:func:`flatten`) and writes its inner messages as records of a batch
compressed with the wrapper's codec: nothing is ever written as an opaque
compressed blob.
"""

from collections.abc import Callable, Iterable
from typing import Any

from afkak._errors import DecodeError
from afkak.codec import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NAMES,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    DEFAULT_MAX_SIZE,
    compress,
    has_gzip,
    has_lz4,
    has_snappy,
    has_zstd,
)
from afkak.common import Message, UnsupportedCodecError
from afkak.records.legacy import encode_message_set, unwrap_message

__all__ = [
    "CODEC_MASK",
    "MessageSet",
    "create_message",
    "create_message_set",
    "flatten",
    "wrap_messages",
]

# Codec -> whether its library is installed.
_AVAILABLE: dict[int, Callable[[], bool]] = {
    CODEC_NONE: lambda: True,
    CODEC_GZIP: has_gzip,
    CODEC_SNAPPY: has_snappy,
    CODEC_LZ4: has_lz4,
    CODEC_ZSTD: has_zstd,
}


#: The codec bits of a message's attributes (afkak 21 used the low two only).
CODEC_MASK = 0x07


class MessageSet(list[Message]):
    """A list of messages to be written as one record batch compressed with ``codec``.

    :func:`create_message_set` returns one holding afkak 21's single
    compressed wrapper message when given a codec.

    It is a :class:`list` in every other respect.  Two message sets are equal
    when their messages and codecs are; a message set and a plain list compare
    as lists.

    :raises UnsupportedCodecError: if ``codec`` is not one of the
        ``afkak.codec.CODEC_*`` constants, or its optional library is not
        installed.
    """

    __slots__ = ("codec",)

    def __init__(self, messages: Iterable[Message] = (), codec: int = CODEC_NONE) -> None:
        available = _AVAILABLE.get(codec) if type(codec) is int else None
        if available is None:
            raise UnsupportedCodecError(f"unknown compression codec {codec!r}")
        if not available():
            name = CODEC_NAMES[codec]
            raise UnsupportedCodecError(
                f"{name} compression needs an optional package: pip install afkak[{name}]"
            )
        super().__init__(messages)
        self.codec = codec

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageSet) and self.codec != other.codec:
            return False
        return list.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None

    def __repr__(self) -> str:
        return f"MessageSet({list.__repr__(self)}, codec={self.codec})"


def create_message(payload: bytes | None, key: bytes | None = None) -> Message:
    """Construct a :class:`~afkak.common.Message`.

    :param payload: The value to send to Kafka, ``bytes`` or ``None`` (a
        tombstone on a compacted topic).
    :param key: ``bytes`` or ``None``.  It routes the message when
        partitioning and gives its identity on a compacted topic.
    :raises TypeError: if ``payload`` or ``key`` is neither ``bytes`` nor ``None``.
    """
    if payload is not None and not isinstance(payload, bytes):
        raise TypeError(f"payload must be bytes or None, not {type(payload).__name__}")
    if key is not None and not isinstance(key, bytes):
        raise TypeError(f"key must be bytes or None, not {type(key).__name__}")
    return Message(0, 0, key, payload)


def create_message_set(requests: Iterable[Any], codec: int = CODEC_NONE) -> MessageSet:
    """Create a message set from a list of requests, as afkak 21 did.

    Each request is a :class:`~afkak.common.SendRequest` (or a tuple of the
    same shape: topic, key, messages, deferred) and contributes one message per
    item of its ``messages``, all with its ``key``.

    With ``CODEC_NONE`` the result holds the plain messages.  With a codec it
    holds one wrapper message, ``Message(0, codec, None, compressed)``, whose
    value is the inner messages' magic-0 message set compressed with *codec*
    (afkak 21's format).  The client writes a wrapper's inner messages as the
    records of a batch compressed with its codec, so offsets count the inner
    messages.  The :class:`MessageSet`'s ``codec`` is *codec* either way.

    :param codec: One of ``CODEC_NONE``, ``CODEC_GZIP``, ``CODEC_SNAPPY``,
        ``CODEC_LZ4`` or ``CODEC_ZSTD``.
    :raises UnsupportedCodecError: for an unknown codec, or one whose optional
        library is not installed.
    :raises TypeError: for a message or key that is neither ``bytes`` nor ``None``.
    """
    messages = MessageSet(codec=codec)
    for _topic, key, payloads, _deferred in requests:
        messages.extend([create_message(payload, key) for payload in payloads])
    if codec == CODEC_NONE or not messages:
        return messages
    return MessageSet([wrap_messages(messages, codec)], codec)


def wrap_messages(messages: Iterable[Message], codec: int) -> Message:
    """afkak 21's compressed wrapper: one message holding *messages* compressed with *codec*."""
    MessageSet(codec=codec)  # UnsupportedCodecError for an unknown or missing codec
    return Message(0, codec, None, compress(codec, encode_message_set(list(messages))))


def flatten(messages: Iterable[Any], max_size: int = DEFAULT_MAX_SIZE) -> tuple[list[Any], int]:
    """The messages to write as records, and the codec of their batch.

    Each compressed wrapper (a message whose attributes carry a codec) is
    replaced by its inner messages.  The batch's codec is the
    :class:`MessageSet`'s, else the first wrapper's, else ``CODEC_NONE``.

    :raises ValueError: a wrapper's value is not a compressed message set.
    :raises UnsupportedCodecError: a wrapper's codec library is missing.
    """
    codec = getattr(messages, "codec", CODEC_NONE)
    try:
        # The common case, at C speed: no message has attributes.
        plain = not any([m[1] for m in messages])
    except (TypeError, IndexError, KeyError):
        plain = False  # not messages: the per-message path lets the caller's checks report it
    if plain:
        return list(messages), codec
    flat: list[Any] = []
    for m in messages:
        wrapped = _codec_of(m)
        if not wrapped:
            flat.append(m)
            continue
        if codec == CODEC_NONE:
            codec = wrapped
        try:
            inner = unwrap_message(m[0], m[1], m[3], max_size)
        except DecodeError as e:
            raise ValueError(f"a compressed message does not hold a message set: {e}") from None
        flat.extend(Message(0, 0, key, value, timestamp=ts) for key, value, ts in inner)
    return flat, codec


def _codec_of(message: Any) -> int:
    """The codec of a compressed wrapper message; 0 for anything else."""
    if isinstance(message, tuple) and len(message) == 4 and type(message[1]) is int:
        return message[1] & CODEC_MASK
    return 0

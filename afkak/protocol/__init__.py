"""Kafka wire protocol: message classes generated from Kafka's schemas, and framing.

Each message class (``afkak.protocol.messages.FetchRequest``, ...) has
``encode(version) -> bytes`` and ``decode(data, version)``; ``afkak.protocol.header`` adds
the request/response headers and the size prefix.  Encoding a non-default value
in a field the version lacks raises :class:`~afkak._errors.EncodeError` unless
the schema marks the field ignorable, in which case the value is dropped (as
Kafka's own generator does).  Malformed input raises
:class:`~afkak._errors.DecodeError` only.
"""

from afkak.protocol._message import FieldSpec, Message, Struct
from afkak.protocol._primitives import ZERO_UUID
from afkak.protocol.header import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_correlation_id,
)
from afkak.protocol.messages import request_class, response_class

__all__ = [
    "ZERO_UUID",
    "FieldSpec",
    "Message",
    "Struct",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "peek_correlation_id",
    "request_class",
    "response_class",
]

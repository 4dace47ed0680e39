"""Request and response framing: size prefix, header, body.

Requests use header v2 when the API version is flexible, else v1.  Responses
use header v1 when flexible, else v0, except ApiVersionsResponse, which always
uses v0 so that a client can read it whatever version it asked for.
Decoding functions take a frame *without* its int32 size prefix.
"""

from __future__ import annotations

import functools
import struct
from typing import Any

from afkak._errors import DecodeError, EncodeError
from afkak.protocol import _primitives as _p
from afkak.protocol._message import Message
from afkak.protocol.messages import request_class, response_class
from afkak.protocol.messages.request_header import RequestHeader
from afkak.protocol.messages.response_header import ResponseHeader

__all__ = [
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_request_body",
    "encode_response",
    "peek_correlation_id",
    "request_header_version",
    "response_header_version",
]

API_VERSIONS_KEY = 18
_API_KEY_VERSION = struct.Struct(">hh")
#: A request frame's size, api key, api version and correlation id.
_REQUEST_HEAD = struct.Struct(">ihhi")


def _flexible(cls: type[Message], version: int) -> bool:
    return cls.FLEXIBLE_VERSION is not None and version >= cls.FLEXIBLE_VERSION


def request_header_version(cls: type[Message], version: int) -> int:
    return 2 if _flexible(cls, version) else 1


def response_header_version(cls: type[Message], version: int) -> int:
    if cls.API_KEY == API_VERSIONS_KEY:
        return 0
    return 1 if _flexible(cls, version) else 0


def encode_request(msg: Message, version: int, correlation_id: int, client_id: str | None) -> bytes:
    """Full request frame: int32 size, request header, body."""
    if msg.API_KEY is None or request_class(msg.API_KEY) is not type(msg):
        raise EncodeError(f"{type(msg).__name__} is not a request")
    header = RequestHeader(msg.API_KEY, version, correlation_id, client_id)
    header_bytes = header.encode(request_header_version(type(msg), version))
    return msg._encode(version, [b"", header_bytes], True)


def encode_request_body(
    cls: type[Message], version: int, correlation_id: int, client_id: str | None, body: bytes
) -> bytes:
    """Full request frame for *body*, a ``cls`` message already encoded at *version*
    (as ``msg.encode(version)``): the same bytes as :func:`encode_request`."""
    tail = _header_tail(client_id, _flexible(cls, version))
    return b"".join(
        (
            _REQUEST_HEAD.pack(8 + len(tail) + len(body), cls.API_KEY, version, correlation_id),
            tail,
            body,
        )
    )


@functools.lru_cache(maxsize=256)
def _header_tail(client_id: str | None, flexible: bool) -> bytes:
    """The request header after the correlation id: the client id, and (*flexible*:
    header v2) its empty tagged fields."""
    return _p.nstring(client_id) + (b"\x00" if flexible else b"")


def encode_response(msg: Message, version: int, correlation_id: int) -> bytes:
    """Full response frame: int32 size, response header, body."""
    if msg.API_KEY is None or response_class(msg.API_KEY) is not type(msg):
        raise EncodeError(f"{type(msg).__name__} is not a response")
    header = ResponseHeader(correlation_id).encode(response_header_version(type(msg), version))
    return msg._encode(version, [b"", header], True)


def decode_request(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, Any]:
    """Decode a request frame (without size prefix) into its header and message."""
    mv = memoryview(frame)
    try:
        api_key, version = _API_KEY_VERSION.unpack_from(mv, 0)
    except struct.error:
        raise DecodeError("truncated request header", offset=0) from None
    try:
        cls = request_class(api_key)
    except KeyError:
        raise DecodeError(f"unknown api key {api_key}", api_key=api_key, offset=0) from None
    if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
        raise DecodeError(
            f"unsupported {cls.__name__} version", api_key=api_key, version=version, offset=2
        )
    header, pos = RequestHeader._decode_from(mv, 0, request_header_version(cls, version))
    msg, pos = cls._decode_from(mv, pos, version)
    _check_end(mv, pos, api_key, version)
    return header, msg


def peek_correlation_id(frame: bytes | bytearray | memoryview) -> int:
    """The correlation id of a response frame (without size prefix)."""
    try:
        return int(_p.INT32.unpack_from(frame, 0)[0])
    except struct.error:
        raise DecodeError("truncated response header", offset=0) from None


def decode_response(
    frame: bytes | bytearray | memoryview, api_key: int, version: int
) -> tuple[int, Any]:
    """Decode a response frame (without size prefix); return (correlation_id, message)."""
    mv = memoryview(frame)
    try:
        cls = response_class(api_key)
    except KeyError:
        raise DecodeError(f"unknown api key {api_key}", api_key=api_key) from None
    header, pos = ResponseHeader._decode_from(mv, 0, response_header_version(cls, version))
    msg, pos = cls._decode_from(mv, pos, version)
    _check_end(mv, pos, api_key, version)
    return header.correlation_id, msg


def _check_end(mv: memoryview, pos: int, api_key: int, version: int) -> None:
    if pos != len(mv):
        raise DecodeError(
            f"{len(mv) - pos} trailing bytes after the message",
            api_key=api_key,
            version=version,
            offset=pos,
        )

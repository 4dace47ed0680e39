"""API version negotiation: reading a broker's ApiVersions answer and choosing versions.

A broker that does not know the ApiVersions version we sent answers
UNSUPPORTED_VERSION in the v0 layout, listing its own ApiVersions range
(KIP-511).  librdkafka's mock cluster answers versions above 2 with an encoding
of its own, so only the error code (the first two bytes of the body) can be
trusted; Kafka's clients then retry with v0, and so do we.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from afkak._broker_errors import ErrorCode
from afkak._errors import DecodeError, NoCommonVersionError
from afkak.protocol.header import decode_response
from afkak.protocol.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest

ApiVersionRanges = Mapping[int, tuple[int, int]]
"""Inclusive ``(min, max)`` version range the broker supports, by API key."""

UNSUPPORTED_VERSION = int(ErrorCode.UNSUPPORTED_VERSION)
_UNSUPPORTED_VERSION_BYTES = UNSUPPORTED_VERSION.to_bytes(2, "big")
_API_VERSIONS_KEY = ApiVersionsRequest.API_KEY
#: Metadata: every broker lists it (a client cannot work without it); an answer
#: without it is corrupt, and accepting it would leave a ready connection on
#: which no Metadata request could ever be sent (found by the fuzzer).
_ALWAYS_LISTED = frozenset((MetadataRequest.API_KEY,))


def decode_api_versions(frame: bytes, version: int) -> ApiVersionsResponse:
    """Decode an ApiVersions response frame (without size prefix) to a request at ``version``.

    An UNSUPPORTED_VERSION answer is read in the v0 layout; if even that fails
    (librdkafka's mock), the result carries just the error code.
    """
    # Response header v0 is the 4-byte correlation id; the error code follows.
    if version > 0 and frame[4:6] == _UNSUPPORTED_VERSION_BYTES:
        try:
            old: ApiVersionsResponse = decode_response(frame, _API_VERSIONS_KEY, 0)[1]
        except DecodeError:
            return ApiVersionsResponse(error_code=UNSUPPORTED_VERSION)
        return old
    response: ApiVersionsResponse = decode_response(frame, _API_VERSIONS_KEY, version)[1]
    if response.error_code == ErrorCode.NONE:
        _check_ranges(response, version)
    return response


def _check_ranges(response: ApiVersionsResponse, version: int) -> None:
    """Refuse version ranges no broker sends (a corrupted answer would wedge the connection).

    The broker answered ApiVersions at ``version``, so it lists that API with
    ``version`` in range; every range is ``0 <= min <= max``, each API once,
    and Metadata is there.
    """
    seen = set()
    for k in response.api_keys:
        if not 0 <= k.min_version <= k.max_version or k.api_key in seen:
            raise DecodeError(f"implausible ApiVersions entry {k!r}")
        seen.add(k.api_key)
    own = ranges_of(response).get(_API_VERSIONS_KEY)
    if own is None or not own[0] <= version <= own[1]:
        raise DecodeError(f"ApiVersions v{version} answered without listing that version")
    missing = _ALWAYS_LISTED - seen
    if missing:
        raise DecodeError(f"ApiVersions answered without the APIs {sorted(missing)}")


def ranges_of(response: ApiVersionsResponse) -> dict[int, tuple[int, int]]:
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


def retry_version(response: ApiVersionsResponse, rejected: int) -> int:
    """The ApiVersions version to retry with after ``rejected`` got UNSUPPORTED_VERSION.

    The broker's own maximum when it named one below ``rejected``, else 0.
    """
    broker = ranges_of(response).get(_API_VERSIONS_KEY)
    if broker is not None and broker[1] < rejected:
        return max(0, min(broker[1], ApiVersionsRequest.MAX_VERSION))
    return 0


def choose_version(
    request_class: Any,
    api_versions: ApiVersionRanges,
    min_version: int | None = None,
    max_version: int | None = None,
    *,
    broker: str | None = None,
    reason: str | None = None,
) -> int:
    """The highest version of ``request_class`` both sides support, within the caller's bounds.

    Never below the class's ``MIN_VERSION`` (Kafka 4 brokers still advertise
    versions that afkak no longer speaks).

    :param broker: the broker's ``host:port``, for the error.
    :param reason: why the request needs ``min_version``, for the error.
    :raises NoCommonVersionError: naming the API, every range involved and the broker.
    """
    low = request_class.MIN_VERSION
    high = request_class.MAX_VERSION
    if min_version is not None and min_version > low:
        low = min_version
    if max_version is not None and max_version < high:
        high = max_version
    theirs = api_versions.get(request_class.API_KEY)
    if theirs is not None:
        version = high if high < theirs[1] else theirs[1]
        if version >= low and version >= theirs[0]:
            return version
    raise NoCommonVersionError(
        _no_common_version(request_class, theirs, min_version, max_version, broker, reason),
        api_name=request_class.API_NAME,
        api_key=request_class.API_KEY,
        afkak_versions=(request_class.MIN_VERSION, request_class.MAX_VERSION),
        broker_versions=theirs,
        broker=broker,
    )


def _no_common_version(
    request_class: Any,
    theirs: tuple[int, int] | None,
    min_version: int | None,
    max_version: int | None,
    broker: str | None,
    reason: str | None,
) -> str:
    name = f"{request_class.API_NAME} (api key {request_class.API_KEY})"
    ours = f"afkak supports {request_class.MIN_VERSION}-{request_class.MAX_VERSION}"
    if min_version is not None or max_version is not None:
        low = "" if min_version is None else min_version
        high = "" if max_version is None else max_version
        ours += f", the request allows {low}-{high}"
        if reason:
            ours += f" ({reason})"
    who = "the broker" if broker is None else f"the broker at {broker}"
    if theirs is None:
        return f"no common version of {name}: {ours}, {who} does not support it"
    return f"no common version of {name}: {ours}, {who} supports {theirs[0]}-{theirs[1]}"

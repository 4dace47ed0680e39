"""A request on its way through a broker connection, and builders of version-dependent requests."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

import attrs
from twisted.internet.defer import Deferred

from afkak.protocol.header import decode_response


class RequestBuilder(Protocol):
    """Builds a request whose shape depends on the version the connection chose.

    ``request_class`` names the API (and bounds the versions); calling the
    builder with the chosen version returns an instance of it.  A builder may
    also read its own answers: ``decode_frame(frame)`` returns the response in
    *frame* (without size prefix) when it has a shape the builder reads faster
    than the generated decoder, else None (then the general decoder reads it).
    Likewise ``encode_body(version)`` may return the request's body already
    encoded at *version* (as ``message.encode(version)``), built without the
    message; then calling the builder is skipped.
    """

    request_class: Any

    def __call__(self, version: int) -> Any: ...


@attrs.frozen
class VersionedRequest:
    """A :class:`RequestBuilder` made of a request class and a function of the version."""

    request_class: Any
    build: Callable[[int], Any]

    def __call__(self, version: int) -> Any:
        return self.build(version)


class PendingRequest:
    """One request from :meth:`BrokerConnection.request` until its Deferred fires.

    ``sent`` is set once its bytes are written, with the ``correlation_id``
    it went under and ``frames_before``, the count of responses the
    connection had received by then (a request timing out with none received
    since shows a silent connection).  Its ``timeout`` and ``deadline``
    (reactor seconds) are kept by the connection's
    :class:`~afkak.connection._deadlines.RequestDeadlines`; ``notify`` says
    whether its timing out is reported (handshake requests' are not).
    """

    __slots__ = (
        "request_class",
        "_message",
        "_builder",
        "min_version",
        "max_version",
        "expect_response",
        "deferred",
        "_canceller",
        "timeout",
        "deadline",
        "notify",
        "version",
        "sent",
        "correlation_id",
        "frames_before",
        "sent_at",
        "_decode_frame",
        "_encode_body",
    )

    def __init__(
        self,
        msg_or_builder: Any,
        min_version: int | None,
        max_version: int | None,
        expect_response: bool,
        canceller: Callable[[PendingRequest], None] | None = None,
    ) -> None:
        request_class = getattr(msg_or_builder, "request_class", None)
        self._builder = request_class is not None
        self.request_class: Any = request_class if self._builder else type(msg_or_builder)
        if getattr(self.request_class, "API_KEY", None) is None:
            raise TypeError(f"not a request message or RequestBuilder: {msg_or_builder!r}")
        self._message = msg_or_builder
        self._decode_frame: Callable[[bytes], Any] | None = getattr(
            msg_or_builder, "decode_frame", None
        )
        self._encode_body: Callable[[int], bytes] | None = getattr(
            msg_or_builder, "encode_body", None
        )
        self.min_version = min_version
        self.max_version = max_version
        self.expect_response = expect_response
        self._canceller = canceller
        self.deferred: Deferred[Any] = Deferred(None if canceller is None else self)
        self.timeout = math.inf
        self.deadline = math.inf
        self.notify = True
        self.version = -1
        self.sent = False
        self.correlation_id = -1
        self.frames_before = 0
        #: When it was written (reactor seconds; -1 unless metrics are kept).
        self.sent_at = -1.0

    @property
    def api_name(self) -> str:
        return str(self.request_class.API_NAME)

    @property
    def min_version_reason(self) -> str | None:
        """Why the request needs its ``min_version`` (a builder's ``min_version_reason``)."""
        return getattr(self._message, "min_version_reason", None) if self._builder else None

    def message(self, version: int) -> Any:
        """The message to send at ``version``, built now if a builder was given; or
        its body already encoded (``bytes``), if the builder encodes its own."""
        self.version = version
        message = self._message
        if not self._builder:
            return message
        if self._encode_body is not None:
            return self._encode_body(version)
        built = message(version)
        if type(built) is not self.request_class:
            raise TypeError(
                f"{message!r} built {type(built).__name__}, not {self.request_class.__name__}"
            )
        return built

    def decode(self, frame: bytes) -> Any:
        """The response message in ``frame`` (without size prefix)."""
        if self._decode_frame is not None:
            response = self._decode_frame(frame)
            if response is not None:
                return response
        return decode_response(frame, self.request_class.API_KEY, self.version)[1]

    def __call__(self, deferred: Deferred[Any]) -> None:
        """Its Deferred's canceller: the request itself, rather than a closure and
        its cells per request (many clients in one process promoted them to the
        cyclic GC's oldest generation)."""
        assert self._canceller is not None
        self._canceller(self)

    def succeed(self, result: Any) -> None:
        self.deferred.callback(result)

    def fail(self, error: BaseException) -> None:
        self.deferred.errback(error)

"""The Consumer's settings, checked and resolved from its constructor arguments.

Checked at construction so that a bad argument raises at the call, not at
the first fetch or commit.  Resolving applies the rule that ties them
together: a consumer group turns auto-commit on by default, and without one
there is nothing to auto-commit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from operator import attrgetter
from typing import Any, Generic, Protocol, TypeVar, overload

import attrs

from afkak.client._interlayer import INT32_MAX, integer, number
from afkak.common import OFFSET_EARLIEST, OFFSET_LATEST, InvalidConsumerGroupError
from afkak.records.aborted import READ_COMMITTED, isolation_level as isolation_level_of

from ._retry import RequestRetries

#: Default ``auto_commit_every_n`` when a consumer group is given.
AUTO_COMMIT_MSG_COUNT = 100
#: Default ``auto_commit_every_ms`` when a consumer group is given.
AUTO_COMMIT_INTERVAL = 5000
#: Default ``fetch_size_bytes``: the broker waits for this many bytes...
FETCH_MIN_BYTES = 64 * 1024
#: ...or this many milliseconds (default ``fetch_max_wait_time``).
FETCH_MAX_WAIT_TIME = 100
#: afkak 21's initial fetch buffer size (128 KiB), kept with its value for
#: applications that size records or fetches from it.  The consumer's own
#: default is :data:`DEFAULT_FETCH_SIZE`.
FETCH_BUFFER_SIZE_BYTES = 128 * 1024
#: The fetch size used when ``buffer_size`` is not given: 1 MiB, as the Java
#: client's ``max.partition.fetch.bytes`` (smaller fetches spend a quarter of
#: the consumer's time on per-request work), at most ``max_buffer_size``.
DEFAULT_FETCH_SIZE = 1024 * 1024
#: Default ``request_retry_init_delay`` (seconds).
REQUEST_RETRY_MIN_DELAY = 0.1
#: Default ``request_retry_max_delay`` (seconds).
REQUEST_RETRY_MAX_DELAY = 30.0


_ARGUMENT = "argument"


def _from(argument: str | dict[str, str]) -> dict[str, Any]:
    """The metadata of an :class:`Options` field resolved from the constructor *argument*
    (for an attrs value, ``{its field: argument}``)."""
    return {_ARGUMENT: argument}


#: The constructor arguments of the :class:`RequestRetries` fields.
_RETRY_ARGUMENTS = {
    "init_delay": "request_retry_init_delay",
    "max_delay": "request_retry_max_delay",
    "max_attempts": "request_retry_max_attempts",
}


@attrs.frozen
class Options:
    """The resolved settings; each field names the constructor argument it comes from."""

    consumer_group: str | None = attrs.field(metadata=_from("consumer_group"))
    commit_metadata: str | bytes | None = attrs.field(metadata=_from("commit_metadata"))
    #: 0: off (always 0 without a group).
    auto_commit_every_n: int = attrs.field(metadata=_from("auto_commit_every_n"))
    auto_commit_every_ms: int = attrs.field(metadata=_from("auto_commit_every_ms"))
    fetch_min_bytes: int = attrs.field(metadata=_from("fetch_size_bytes"))
    fetch_max_wait_ms: int = attrs.field(metadata=_from("fetch_max_wait_time"))
    buffer_size: int = attrs.field(metadata=_from("buffer_size"))
    #: Whether ``buffer_size`` was chosen by the application (else it follows
    #: :data:`DEFAULT_FETCH_SIZE` and ``max_buffer_size``).
    buffer_size_given: bool = attrs.field()
    max_buffer_size: int | None = attrs.field(metadata=_from("max_buffer_size"))
    retry: RequestRetries = attrs.field(metadata=_from(_RETRY_ARGUMENTS))
    auto_offset_reset: int | None = attrs.field(metadata=_from("auto_offset_reset"))
    commit_consumer_id: str = attrs.field(metadata=_from("commit_consumer_id"))
    commit_generation_id: int = attrs.field(metadata=_from("commit_generation_id"))
    #: The wire isolation level (0: read_uncommitted, 1: read_committed).
    isolation: int = attrs.field(metadata=_from("isolation_level"))
    #: The consumer's rack (KIP-392; "": none).
    client_rack: str = attrs.field(default="", metadata=_from("client_rack"))

    @property
    def isolation_name(self) -> str:
        """``isolation_level`` as the constructor takes it."""
        return "read_committed" if self.isolation == READ_COMMITTED else "read_uncommitted"

    @property
    def auto_commit_every_s(self) -> float:
        """afkak 21's ``auto_commit_every_s``."""
        return self.auto_commit_every_ms / 1000.0

    def arguments(self) -> dict[str, Any]:
        """Constructor arguments that :func:`resolve` to these options.

        A ``buffer_size`` the application did not choose is None, so that it
        keeps following ``max_buffer_size``.
        """
        found = {argument: read(self) for read, argument in _READERS}
        if not self.buffer_size_given:
            found["buffer_size"] = None
        return found


def _argument_paths() -> dict[str, str]:
    paths: dict[str, str] = {}
    for field in attrs.fields(Options):
        argument = field.metadata.get(_ARGUMENT)
        if isinstance(argument, str):
            paths[field.name] = argument
        elif argument is not None:
            paths.update({f"{field.name}.{sub}": name for sub, name in argument.items()})
    return paths


#: ``{Options attribute path: constructor argument}``, as the fields declare.
ARGUMENT_OF: dict[str, str] = _argument_paths()
_READERS = [(attrgetter(path), argument) for path, argument in ARGUMENT_OF.items()]


def seconds_as_ms(seconds: float) -> int:
    """An ``auto_commit_every_s`` as ``auto_commit_every_ms`` (whose range is checked then)."""
    return round(number("auto_commit_every_s", seconds, -math.inf) * 1000)


def resolve(
    *,
    consumer_group: Any,
    commit_metadata: Any,
    auto_commit_every_n: Any,
    auto_commit_every_ms: Any,
    fetch_size_bytes: Any,
    fetch_max_wait_time: Any,
    buffer_size: Any,
    max_buffer_size: Any,
    request_retry_init_delay: Any,
    request_retry_max_delay: Any,
    request_retry_max_attempts: Any,
    auto_offset_reset: Any,
    commit_consumer_id: Any,
    commit_generation_id: Any,
    isolation_level: Any,
    client_rack: Any = None,
) -> Options:
    """Check the arguments (TypeError / ValueError) and resolve their defaults."""
    _check_group(consumer_group, commit_metadata)
    every_n, every_ms = _auto_commit(consumer_group, auto_commit_every_n, auto_commit_every_ms)
    first_fetch_size = _buffer_size(buffer_size, max_buffer_size)
    if auto_offset_reset not in (None, OFFSET_EARLIEST, OFFSET_LATEST):
        raise ValueError(
            f"auto_offset_reset must be OFFSET_EARLIEST, OFFSET_LATEST or None, "
            f"not {auto_offset_reset!r}"
        )
    if client_rack is not None and not isinstance(client_rack, str):
        raise TypeError(f"client_rack must be a str or None, not {client_rack!r}")
    if not isinstance(commit_consumer_id, str):
        raise TypeError(f"commit_consumer_id must be a str, not {commit_consumer_id!r}")
    return Options(
        consumer_group=consumer_group,
        commit_metadata=commit_metadata,
        auto_commit_every_n=integer("auto_commit_every_n", every_n, 0, INT32_MAX),
        auto_commit_every_ms=integer("auto_commit_every_ms", every_ms, 0, INT32_MAX),
        fetch_min_bytes=integer("fetch_size_bytes", fetch_size_bytes, 0, INT32_MAX),
        fetch_max_wait_ms=integer("fetch_max_wait_time", fetch_max_wait_time, 0, INT32_MAX),
        buffer_size=integer("buffer_size", first_fetch_size, 1, INT32_MAX),
        buffer_size_given=buffer_size is not None,
        max_buffer_size=max_buffer_size,
        retry=_retry(request_retry_init_delay, request_retry_max_delay, request_retry_max_attempts),
        auto_offset_reset=auto_offset_reset,
        commit_consumer_id=commit_consumer_id,
        commit_generation_id=integer(
            "commit_generation_id", commit_generation_id, -(2**31), INT32_MAX
        ),
        isolation=isolation_level_of(isolation_level),
        client_rack=client_rack or "",
    )


def _check_group(consumer_group: Any, commit_metadata: Any) -> None:
    if consumer_group is not None and (not isinstance(consumer_group, str) or not consumer_group):
        raise InvalidConsumerGroupError(f"bad consumer_group {consumer_group!r}")
    if commit_metadata is not None and not isinstance(commit_metadata, (str, bytes)):
        raise TypeError(f"commit_metadata must be str or bytes, not {commit_metadata!r}")
    if isinstance(commit_metadata, bytes):
        commit_metadata.decode("utf-8")  # the protocol carries a string


def _auto_commit(consumer_group: Any, every_n: Any, every_ms: Any) -> tuple[Any, Any]:
    """A group commits by default; without one there is nothing to auto-commit (0: off)."""
    if consumer_group is not None:
        return (
            AUTO_COMMIT_MSG_COUNT if every_n is None else every_n,
            AUTO_COMMIT_INTERVAL if every_ms is None else every_ms,
        )
    if every_n or every_ms:
        raise ValueError("auto_commit_every_n/_ms are set without a consumer_group")
    return 0, 0


def _buffer_size(buffer_size: Any, max_buffer_size: Any) -> Any:
    """The first fetch size: the one chosen (at most *max_buffer_size*), or the default."""
    if max_buffer_size is not None:
        integer("max_buffer_size", max_buffer_size, 1, INT32_MAX)
    if buffer_size is None:
        return min(DEFAULT_FETCH_SIZE, max_buffer_size or DEFAULT_FETCH_SIZE)
    if max_buffer_size is not None:
        if integer("buffer_size", buffer_size, 1, INT32_MAX) > max_buffer_size:
            raise ValueError(
                f"buffer_size ({buffer_size}) is greater than max_buffer_size ({max_buffer_size})"
            )
    return buffer_size


def _retry(init_delay: Any, max_delay: Any, max_attempts: Any) -> RequestRetries:
    if not init_delay > 0:
        raise ValueError(f"request_retry_init_delay must be positive: {init_delay!r}")
    if not max_delay >= init_delay:
        raise ValueError(
            f"request_retry_max_delay ({max_delay!r}) is less than "
            f"request_retry_init_delay ({init_delay!r})"
        )
    return RequestRetries(
        init_delay, max_delay, integer("request_retry_max_attempts", max_attempts, 0, INT32_MAX)
    )


T = TypeVar("T")


class Configurable(Protocol):
    """What a :class:`Setting` reads and sets: the options and the way to change them."""

    _options: Options

    def _reconfigure(self, **changes: Any) -> None: ...


class Setting(Generic[T]):
    """A setting an application reads and sets as an attribute, as in afkak 21.

    Read from the object's :class:`Options` (*read*: a dotted attribute
    path, or a function); a new value goes to the constructor argument
    *argument* (by default the one the field *read* names comes from,
    :data:`ARGUMENT_OF`), through *to_argument*, and
    is checked as the constructor checks it (TypeError / ValueError).  A
    *fixed* setting is set at construction only.
    """

    def __init__(
        self,
        read: str | Callable[[Options], T],
        argument: str | None = None,
        to_argument: Callable[[T], Any] | None = None,
        *,
        fixed: bool = False,
        doc: str | None = None,
    ) -> None:
        self._read: Callable[[Options], T] = attrgetter(read) if isinstance(read, str) else read
        if argument is None and isinstance(read, str) and not fixed:
            argument = ARGUMENT_OF[read]
        self._argument = argument
        self._to_argument = to_argument
        self.__doc__ = doc
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Setting[T]: ...

    @overload
    def __get__(self, obj: Configurable, owner: type | None = None) -> T: ...

    def __get__(self, obj: Configurable | None, owner: type | None = None) -> T | Setting[T]:
        if obj is None:
            return self
        return self._read(obj._options)

    def __set__(self, obj: Configurable, value: T) -> None:
        if self._argument is None:
            raise AttributeError(f"{self._name} is fixed at construction")
        if self._to_argument is not None:
            value = self._to_argument(value)
        obj._reconfigure(**{self._argument: value})

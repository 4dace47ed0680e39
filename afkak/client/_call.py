"""The shape shared by the per-API request builders.

A call is what the client hands a broker connection: a callable that builds
the request message for the version the connection negotiated, plus a
``parse`` that turns the response into afkak's result tuples.  The version is
remembered because several responses (Fetch, Produce, OffsetCommit and
OffsetFetch from their topic-id versions on) can only be read knowing it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from typing import Any
from uuid import UUID

from afkak.common import BrokerResponseError, ErrorCode


class VersionedCall(ABC):
    """Base of the per-API calls: build at the negotiated version, then parse.

    Subclasses set ``request_class`` (the message class, which names the API
    for the connection) and implement :meth:`build` and :meth:`parse`;
    ``min_version`` and ``max_version`` bound the negotiated version (``None``:
    no bound beyond what both sides speak).
    """

    request_class: Any
    max_version: int | None = None
    min_version: int | None = None
    #: Why ``min_version`` is needed, for the error a broker without it gets.
    min_version_reason: str | None = None
    version: int = -1

    def __call__(self, version: int) -> Any:
        self.version = version
        return self.build(version)

    @abstractmethod
    def build(self, version: int) -> Any:
        """The request message at ``version``."""

    @abstractmethod
    def parse(self, response: Any) -> list[Any]:
        """Convert the response to afkak's result tuples."""


class TopicIds:
    """Topic ids for the topics of one request, for the versions that use ids.

    When any topic's id is unknown, :attr:`cap` limits the request to the last
    version that still names topics.  Built per request and held until its
    response: the reverse map is made only when a response names a topic by id
    and needs the general decoder (fewer objects for the cyclic GC to scan).
    """

    __slots__ = ("by_name", "_by_id", "complete", "cap")

    def __init__(
        self, topics: Iterable[str], known: Mapping[str, UUID], last_name_version: int
    ) -> None:
        self.by_name = {t: known[t] for t in topics if t in known}
        self._by_id: dict[UUID, str] | None = None
        self.complete = all(t in self.by_name for t in topics)
        self.cap = None if self.complete else last_name_version

    @property
    def by_id(self) -> dict[UUID, str]:
        """The topics by id."""
        by_id = self._by_id
        if by_id is None:
            by_id = self._by_id = {i: t for t, i in self.by_name.items()}
        return by_id

    def name_of(self, name_or_id: str | UUID) -> str:
        """The topic a response entry names, by name or (at topic-id versions) by id."""
        if isinstance(name_or_id, str):
            return name_or_id
        try:
            return self.by_id[name_or_id]
        except KeyError:
            raise BrokerResponseError.from_errno(
                ErrorCode.UNKNOWN_TOPIC_ID, f"response names unknown topic id {name_or_id}"
            ) from None


def group_by_topic(
    items: Iterable[Any], topic_of: Callable[[Any], str] = attrgetter("topic")
) -> dict[str, list[Any]]:
    """Items (payloads by default) grouped by topic, in first-seen order."""
    grouped: dict[str, list[Any]] = {}
    for item in items:
        grouped.setdefault(topic_of(item), []).append(item)
    return grouped


def check_top_level_error(error_code: int) -> None:
    """Raise the broker error a whole response carries, if any."""
    if error_code:
        raise BrokerResponseError.from_errno(error_code)

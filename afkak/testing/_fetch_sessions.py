"""KIP-227 fetch sessions of the fake brokers (when ``cluster.state.fetch_sessions`` is on).

As Kafka's FetchSession: epoch 0 creates a session holding the request's
partitions; an incremental request (the session's id and next epoch) adds or
updates the partitions it names and drops the forgotten ones, and is answered
for every partition of the session, but only partitions with records, an
error or a new high watermark appear in the response.  An unknown id is
FETCH_SESSION_ID_NOT_FOUND, a wrong epoch INVALID_FETCH_SESSION_EPOCH.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from afkak._broker_errors import FetchSessionIdNotFound, InvalidFetchSessionEpoch
from afkak.protocol.messages import FetchRequest, FetchResponse
from afkak.testing._lookup import code

if TYPE_CHECKING:
    from afkak.protocol.messages.fetch_request import FetchTopic

__all__ = ["FakeFetchSession", "open_session"]

_INT32_MAX = 2**31 - 1
#: Partitions of a session by (topic name or id, partition).
_Key = tuple[Any, int]


@attrs.define
class FakeFetchSession:
    """One fetch session: its partitions' fetch state and the next expected epoch."""

    session_id: int
    epoch: int = 1
    #: key -> [topic, topic_id, fetch offset, partition max bytes, last high watermark,
    #: current leader epoch]
    partitions: dict[_Key, list[Any]] = attrs.field(factory=dict)


def open_session(
    sessions: dict[tuple[int, int], FakeFetchSession],
    node: int,
    request: FetchRequest,
    version: int,
) -> tuple[FetchRequest, Callable[[Any], Any]] | Any:
    """The request to read for *request* and how to shape its response, or an error response.

    Sessionless requests come back unchanged, their responses untouched.
    """
    if version < 7 or (request.session_id == 0 and request.session_epoch == -1):
        return request, _unchanged
    by_id = version >= 13
    if request.session_epoch in (0, -1):
        sessions.pop((node, request.session_id), None)
        if request.session_epoch == -1:
            return request, _unchanged
        session_id = max((sid for n, sid in sessions if n == node), default=0) + 1
        created = sessions[(node, session_id)] = FakeFetchSession(session_id)
        _update(created, request, by_id)
        return request, _full(created, by_id)
    session = sessions.get((node, request.session_id))
    if session is None:
        return FetchResponse(error_code=code(FetchSessionIdNotFound), session_id=0)
    if request.session_epoch != session.epoch:
        return FetchResponse(error_code=code(InvalidFetchSessionEpoch), session_id=0)
    session.epoch = session.epoch % _INT32_MAX + 1
    for forgotten in request.forgotten_topics_data:
        topic = forgotten.topic_id if by_id else forgotten.topic
        for partition in forgotten.partitions:
            session.partitions.pop((topic, partition), None)
    _update(session, request, by_id)
    topics: dict[Any, FetchTopic] = {}
    for (topic, partition), state in session.partitions.items():
        name, topic_id, offset, max_bytes, _, epoch = state
        entry = topics.get(topic)
        if entry is None:
            entry = topics[topic] = FetchRequest.FetchTopic(topic=name, topic_id=topic_id)
        entry.partitions.append(
            FetchRequest.FetchPartition(
                partition=partition,
                fetch_offset=offset,
                partition_max_bytes=max_bytes,
                current_leader_epoch=epoch,
            )
        )
    whole = attrs.evolve(request, topics=list(topics.values()), forgotten_topics_data=[])
    return whole, _incremental(session, by_id)


def _update(session: FakeFetchSession, request: FetchRequest, by_id: bool) -> None:
    for t in request.topics:
        topic = t.topic_id if by_id else t.topic
        for p in t.partitions:
            state = session.partitions.get((topic, p.partition))
            hwm = state[4] if state is not None else None
            session.partitions[(topic, p.partition)] = [
                t.topic,
                t.topic_id,
                p.fetch_offset,
                p.partition_max_bytes,
                hwm,
                p.current_leader_epoch,
            ]


def _unchanged(response: Any) -> Any:
    return response


def _full(session: FakeFetchSession, by_id: bool) -> Callable[[Any], Any]:
    def shape(response: Any) -> Any:
        _note_watermarks(session, response, by_id)
        response.session_id = session.session_id
        return response

    return shape


def _incremental(session: FakeFetchSession, by_id: bool) -> Callable[[Any], Any]:
    def shape(response: Any) -> Any:
        for t in response.responses:
            topic = t.topic_id if by_id else t.topic
            t.partitions = [
                p
                for p in t.partitions
                if p.error_code
                or p.records
                or session.partitions[(topic, p.partition_index)][4] != p.high_watermark
            ]
        _note_watermarks(session, response, by_id)
        response.responses = [t for t in response.responses if t.partitions]
        response.session_id = session.session_id
        return response

    return shape


def _note_watermarks(session: FakeFetchSession, response: FetchResponse, by_id: bool) -> None:
    for t in response.responses:
        topic = t.topic_id if by_id else t.topic
        for p in t.partitions:
            state = session.partitions.get((topic, p.partition_index))
            if state is not None:
                state[4] = p.high_watermark

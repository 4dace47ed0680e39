"""KIP-227 fetch sessions: what the next Fetch to a broker names, and what its answer does.

As the Java client's ``FetchSessionHandler``: without a session a request
is full (every partition; epoch 0 asks the broker for a session).  In a
session, a request is incremental: it names only the partitions that joined
it or moved on (offset, size or leader epoch) and those to forget, and each answer moves
the epoch on.  A session error (the broker lost the session, or the epochs
disagree) or a failed request ends the session: the next request is full
and asks for a new one.  A broker that grants none (or speaks Fetch before
v7) gets full requests throughout.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from afkak.common import ErrorCode, TopicAndPartition

__all__ = ["SESSION_ERRORS", "FetchSessionHandler", "SessionRequest"]

#: The session is gone; start a new one.
SESSION_ERRORS = frozenset(
    {
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
    }
)
_INT32_MAX = 2**31 - 1

#: What a partition is fetched with: (offset, max bytes, current leader epoch);
#: a change of any of them sends the partition again.
Position = tuple[int, int, int]


@attrs.frozen
class SessionRequest:
    """One Fetch as the session sees it (:meth:`FetchSessionHandler.build`).

    ``to_send``: the partitions the request names; ``forgotten``: those it
    drops from the session; ``unchanged``: those in the session it fetches
    without naming them; ``partitions``: every partition fetched, with its
    position.  ``session_id`` and ``epoch`` go on the wire as they are.
    """

    to_send: list[TopicAndPartition]
    forgotten: list[TopicAndPartition]
    unchanged: list[TopicAndPartition]
    partitions: Mapping[TopicAndPartition, Position]
    session_id: int
    epoch: int


class FetchSessionHandler:
    """The fetch session with one broker: its id (0: none), next epoch and partitions."""

    def __init__(self) -> None:
        self.session_id = 0
        #: The epoch of the next request (0 with no session: asks for one).
        self.epoch = 0
        # What the broker holds for each partition in the session.
        self._partitions: dict[TopicAndPartition, Position] = {}

    @property
    def partitions(self) -> Mapping[TopicAndPartition, Position]:
        """The partitions in the session, at the positions the broker holds."""
        return self._partitions

    def build(self, wanted: Mapping[TopicAndPartition, Position]) -> SessionRequest:
        """The request that fetches *wanted*: full without a session, else incremental."""
        if not self.session_id:
            return SessionRequest(list(wanted), [], [], wanted, 0, self.epoch)
        held = self._partitions
        to_send = [k for k, position in wanted.items() if held.get(k) != position]
        forgotten = [k for k in held if k not in wanted]
        named = set(to_send)
        unchanged = [k for k in wanted if k not in named]
        return SessionRequest(to_send, forgotten, unchanged, wanted, self.session_id, self.epoch)

    def handle_response(self, request: SessionRequest, error: int, session_id: int) -> bool:
        """Take the answer to *request*: its top-level *error* and *session_id*.

        Returns False for a session error: the response holds no partition
        data, the session is over, and the next (full) request asks again.
        """
        if error in SESSION_ERRORS:
            self.handle_error()
            return False
        if not session_id or (self.session_id and session_id != self.session_id):
            self.handle_error()  # none granted (or before v7), or the broker closed it
            return True
        if not self.session_id:
            self.session_id, self._partitions = session_id, dict(request.partitions)
        else:
            held = self._partitions
            for key in request.forgotten:
                del held[key]
            for key in request.to_send:
                held[key] = request.partitions[key]
        self.epoch = self.epoch % _INT32_MAX + 1
        return True

    def handle_error(self) -> None:
        """End the session (a failed request, an unusable answer): the next request is full."""
        self.session_id, self.epoch, self._partitions = 0, 0, {}

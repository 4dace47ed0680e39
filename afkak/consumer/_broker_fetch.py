"""One Fetch per broker for every Consumer of a KafkaClient, with KIP-227 fetch sessions.

A partition's fetcher asks (:meth:`BrokerFetcher.fetch`) only when its
consumer has room for more records, so a consumer whose processor is busy or
whose buffer is full is simply not in the next request: backpressure stays
per partition.  Each broker has one Fetch in flight.  The next one is sent
as soon as the answer to the previous one has been handed out (the consumers
it fed have asked again by then), with every partition asked for meanwhile;
an idle fetcher waits a reactor turn, so that consumers started together
share their first request.

Where the broker grants a fetch session, a request carries only the
partitions that joined it or moved on, and names those to forget; a session
error starts over with a full fetch.  Brokers without sessions get full
fetches.  Errors, leader moves and offset resets stay per partition: an error
answers that partition's request, and its fetcher retries (or resets) alone.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary, ref

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from afkak.client._interlayer import FetchCall
from afkak.common import BrokerMetadata, ErrorCode, FetchRequest, TopicAndPartition
from afkak.metrics import ConsumerSensors, registry_of
from afkak.records.aborted import READ_UNCOMMITTED

__all__ = ["broker_fetcher", "fetch_requests", "BrokerFetcher", "PartitionAnswer"]

#: What a partition's request gets: the error code and the partition's part of
#: the Fetch response (``records``, ``high_watermark``, ``aborted_transactions``...),
#: None with a top-level error.
PartitionAnswer = tuple[int, Any]

#: The session is gone; start a new one.
_SESSION_ERRORS = frozenset(
    {
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
    }
)
_INT32_MAX = 2**31 - 1
#: The bound of a whole Fetch response: the Java client's ``fetch.max.bytes``
#: default (50 MiB).  Each partition's share is its consumer's ``buffer_size``
#: (``max.partition.fetch.bytes``); the broker returns at least one batch.
FETCH_MAX_BYTES = 50 * 1024 * 1024

_SHARED: WeakKeyDictionary[Any, dict[tuple[int, int], BrokerFetcher]] = WeakKeyDictionary()


def broker_fetcher(
    client: Any, broker: BrokerMetadata, isolation_level: int = READ_UNCOMMITTED
) -> BrokerFetcher:
    """The fetcher that *client*'s consumers of *isolation_level* share for *broker*.

    A Fetch request has one isolation level, so ``read_committed`` consumers
    share their own fetcher (and fetch session).
    """
    fetchers = _SHARED.get(client)
    if fetchers is None:
        fetchers = _SHARED[client] = {}
    fetcher = fetchers.get((broker.node_id, isolation_level))
    if fetcher is None:
        fetcher = fetchers[broker.node_id, isolation_level] = BrokerFetcher(
            client, broker, isolation_level
        )
    return fetcher


def fetch_requests(client: Any) -> int:
    """How many Fetch requests *client*'s consumers have sent (benchmarks and tests count them)."""
    return sum(f.requests for f in _SHARED.get(client, {}).values())


class _Want:
    """One partition fetcher's request for records from *offset* on."""

    __slots__ = ("offset", "max_bytes", "min_bytes", "max_wait_ms", "deferred")

    def __init__(self, offset: int, max_bytes: int, min_bytes: int, max_wait_ms: int) -> None:
        self.offset = offset
        self.max_bytes = max_bytes
        self.min_bytes = min_bytes
        self.max_wait_ms = max_wait_ms
        # Cancelling it fires it: the fetcher then skips it (see BrokerFetcher._live),
        # and an answer already on its way is dropped (Twisted ignores a callback
        # after a cancellation without canceller).
        self.deferred: Deferred[PartitionAnswer] = Deferred()


def _offset_of(want: _Want) -> int:
    return want.offset


class BrokerFetcher:
    """The Fetch requests of one client to one broker, and its fetch session."""

    def __init__(
        self, client: Any, broker: BrokerMetadata, isolation_level: int = READ_UNCOMMITTED
    ) -> None:
        # Weakly: the fetchers are kept per client in a WeakKeyDictionary.
        self._client = ref(client)
        self.broker = broker
        self.isolation_level = isolation_level
        self._sensors = registry_of(client).shared(ConsumerSensors)
        #: Fetch requests sent (for benchmarks and tests).
        self.requests = 0
        self._wants: dict[TopicAndPartition, list[_Want]] = {}
        self._in_flight: Deferred[Any] | None = None
        self._scheduled: Any = None
        self._sending = self._send_again = False
        # The session: its id (0: none), the epoch of the next request, and
        # what the broker holds for each partition in it: (offset, max bytes).
        self._session_id = 0
        self._epoch = 0
        self._session: dict[TopicAndPartition, tuple[int, int]] = {}

    def fetch(
        self,
        broker: BrokerMetadata,
        key: TopicAndPartition,
        offset: int,
        max_bytes: int,
        min_bytes: int,
        max_wait_ms: int,
    ) -> Deferred[PartitionAnswer]:
        """Records of *key* from *offset*: fires once the broker returns some, or an error.

        Answers without records (the broker waited ``max_wait_ms`` for
        nothing) are not passed on: the partition stays in the following
        requests.  Fails with the request's failure (a lost connection, a
        timeout); cancel it to stop asking.
        """
        self.broker = broker
        want = _Want(offset, max_bytes, min_bytes, max_wait_ms)
        self._wants.setdefault(key, []).append(want)
        self._schedule()
        return want.deferred

    def _schedule(self) -> None:
        client = self._client()
        if self._scheduled is None and self._in_flight is None and client is not None:
            self._scheduled = client.reactor.callLater(0, self._send)

    def _live(self) -> dict[TopicAndPartition, _Want]:
        """Each partition's waiting request from the lowest offset.

        A partition appears once per Fetch; consumers of one partition at
        different offsets are served from the lowest until they meet.
        """
        first = {}
        for key, wants in list(self._wants.items()):
            wants[:] = [w for w in wants if not w.deferred.called]
            if wants:
                first[key] = min(wants, key=_offset_of)
            else:
                del self._wants[key]
        return first

    def _send(self) -> None:
        """Send the next request, or more when answers come at once (without recursing)."""
        self._scheduled = None
        if self._sending:
            self._send_again = True
            return
        self._sending = self._send_again = True
        try:
            while self._send_again and self._in_flight is None:
                self._send_again = False
                self._send_one()
        finally:
            self._sending = False

    def _send_one(self) -> None:
        wants = self._live()
        client = self._client()
        if not wants or client is None:
            return
        if self._session_id:
            session = self._session
            changed = [k for k, w in wants.items() if session.get(k) != (w.offset, w.max_bytes)]
            forgotten = [k for k in session if k not in wants]
        else:
            changed, forgotten = list(wants), []
        changed_set = set(changed)
        call = FetchCall(
            [
                FetchRequest(k.topic, k.partition, wants[k].offset, wants[k].max_bytes)
                for k in changed
            ],
            min(w.max_wait_ms for w in wants.values()),
            min(w.min_bytes for w in wants.values()),
            client.topic_ids,
            self.isolation_level,
            max_bytes=FETCH_MAX_BYTES,
            session_id=self._session_id,
            session_epoch=self._epoch,
            forgotten=forgotten,
            unchanged=[k for k in wants if k not in changed_set],
        )
        covered = {k: (w.offset, w.max_bytes) for k, w in wants.items()}
        self.requests += 1
        d = self._in_flight = client.send_request_to_broker(
            self.broker, call, timeout=client.timeout + call.max_wait_ms / 1000
        )
        sent_at = self._sensors.now()
        d.addCallbacks(self._answered, self._failed, (call, covered, sent_at), None, (covered,))

    def _answered(
        self,
        response: Any,
        call: FetchCall,
        covered: dict[TopicAndPartition, tuple[int, int]],
        sent_at: float,
    ) -> None:
        # Still "in flight" while handing out: the consumers fed ask again
        # without scheduling, and all go in the request sent at the end.
        error = response.error_code
        if error in _SESSION_ERRORS:
            self._end_session()
        elif error and not response.responses:
            self._end_session()
            self._answer_all(covered, (error, None))
        else:
            self._update_session(call, response.session_id, covered)
            try:
                size = self._hand_out(response, call, covered)
                self._sensors.fetched(sent_at, size, response.throttle_time_ms)
            except Exception:
                self._end_session()
                self._answer_all(covered, Failure())
        self._next()

    def _failed(self, failure: Failure, covered: dict[TopicAndPartition, tuple[int, int]]) -> None:
        self._end_session()
        self._answer_all(covered, failure)
        self._next()

    def _next(self) -> None:
        self._in_flight = None
        if self._wants:
            self._send()

    def _update_session(
        self, call: FetchCall, session_id: int, covered: dict[TopicAndPartition, tuple[int, int]]
    ) -> None:
        if not session_id or (self._session_id and session_id != self._session_id):
            self._end_session()  # none granted (or before v7), or the broker closed it
            return
        if not self._session_id:
            self._session_id, self._session = session_id, dict(covered)
        else:
            for key in call.forgotten:
                del self._session[key]
            for p in call.payloads:
                self._session[TopicAndPartition(p.topic, p.partition)] = covered[
                    TopicAndPartition(p.topic, p.partition)
                ]
        self._epoch = self._epoch % _INT32_MAX + 1

    def _end_session(self) -> None:
        self._session_id, self._epoch, self._session = 0, 0, {}

    def _hand_out(
        self, response: Any, call: FetchCall, covered: dict[TopicAndPartition, tuple[int, int]]
    ) -> int:
        """Answer the partitions that have records or an error; the others ask again.

        Returns the bytes of records the response held (``fetch-size``).
        """
        by_id = call.version >= 13
        client = self._client()
        answers = []
        size = 0
        sensors = self._sensors
        for topic in response.responses:
            name = call.ids.name_of(topic.topic_id if by_id else topic.topic)
            for data in topic.partitions:
                key = TopicAndPartition(name, data.partition_index)
                sent = covered.get(key)
                if sent is not None and (data.error_code or data.records):
                    if data.error_code and client is not None:  # KIP-951: a new leader
                        client.note_new_leader(key, data.current_leader, response.node_endpoints)
                    answers.append((key, sent[0], (data.error_code, data)))
                    if data.records:
                        size += len(data.records)
                    if data.log_start_offset >= 0:
                        sensors.lead(name, data.partition_index, sent[0], data.log_start_offset)
        for key, offset, answer in answers:
            self._answer(key, offset, answer)
        return size

    def _answer_all(
        self, covered: dict[TopicAndPartition, tuple[int, int]], answer: PartitionAnswer | Failure
    ) -> None:
        for key, (offset, _) in covered.items():
            self._answer(key, offset, answer)

    def _answer(
        self, key: TopicAndPartition, offset: int, answer: PartitionAnswer | Failure
    ) -> None:
        """Fire the waiting requests of *key* from *offset* (the offset the broker read at)."""
        wants = self._wants.get(key)
        if not wants:
            return
        done = [w for w in wants if w.offset == offset and not w.deferred.called]
        if not done:
            return
        rest = [w for w in wants if w not in done and not w.deferred.called]
        if rest:
            self._wants[key] = rest
        else:
            del self._wants[key]
        for want in done:
            if isinstance(answer, Failure):
                want.deferred.errback(answer)
            else:
                want.deferred.callback(answer)

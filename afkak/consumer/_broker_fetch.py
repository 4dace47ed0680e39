"""One Fetch per broker for every Consumer of a KafkaClient, with KIP-227 fetch sessions.

The client owns the fetchers: its :class:`FetchManager` (``client.shared``)
holds one :class:`BrokerFetcher` per broker and isolation level.

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
error starts over with a full fetch (each fetcher's
:class:`~._fetch_session.FetchSessionHandler` keeps the session).  Brokers
without sessions get full fetches.  Errors, leader moves and offset resets
stay per partition: an error answers that partition's request, and its
fetcher retries (or resets) alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from afkak.client import ConsumerClient
from afkak.client._interlayer import FetchCall
from afkak.common import BrokerMetadata, FetchRequest, TopicAndPartition
from afkak.metrics import ConsumerSensors, registry_of
from afkak.records.aborted import READ_UNCOMMITTED

from ._fetch_session import FetchSessionHandler, Position, SessionRequest

__all__ = ["BrokerFetcher", "FetchManager", "PartitionAnswer"]

#: What a partition's request gets: the error code and the partition's part of
#: the Fetch response (``records``, ``high_watermark``, ``aborted_transactions``...),
#: None with a top-level error.
PartitionAnswer = tuple[int, Any]

#: The bound of a whole Fetch response: the Java client's ``fetch.max.bytes``
#: default (50 MiB).  Each partition's share is its consumer's ``buffer_size``
#: (``max.partition.fetch.bytes``); the broker returns at least one batch.
FETCH_MAX_BYTES = 50 * 1024 * 1024


class FetchManager:
    """The Fetch requests of one client's consumers: one :class:`BrokerFetcher` per broker,
    isolation level and rack.

    The client holds it (``client.shared(FetchManager)``), so it lives and
    goes with the client, and the consumers of one client share it.  A Fetch
    request has one isolation level and one rack id, so ``read_committed``
    consumers (and those of each ``client_rack``) share fetchers (and fetch
    sessions) of their own.
    """

    def __init__(self, client: ConsumerClient) -> None:
        self._client = client
        #: ``(node id, isolation level, rack) -> BrokerFetcher``.
        self.fetchers: dict[tuple[int, int, str], BrokerFetcher] = {}

    def fetcher(
        self, broker: BrokerMetadata, isolation_level: int = READ_UNCOMMITTED, rack: str = ""
    ) -> BrokerFetcher:
        """The fetcher for *broker* at *isolation_level* and *rack*, made on first use."""
        fetcher = self.fetchers.get((broker.node_id, isolation_level, rack))
        if fetcher is None:
            fetcher = self.fetchers[broker.node_id, isolation_level, rack] = BrokerFetcher(
                self._client, broker, isolation_level, rack
            )
        return fetcher

    @property
    def requests(self) -> int:
        """How many Fetch requests were sent (benchmarks and tests count them)."""
        return sum(f.requests for f in self.fetchers.values())


class _Want:
    """One partition fetcher's request for records from *offset* on."""

    __slots__ = ("offset", "max_bytes", "min_bytes", "max_wait_ms", "leader_epoch", "deferred")

    def __init__(
        self, offset: int, max_bytes: int, min_bytes: int, max_wait_ms: int, leader_epoch: int
    ) -> None:
        self.offset = offset
        self.max_bytes = max_bytes
        self.min_bytes = min_bytes
        self.max_wait_ms = max_wait_ms
        self.leader_epoch = leader_epoch
        # Cancelling it fires it: the fetcher then skips it (see BrokerFetcher._live),
        # and an answer already on its way is dropped (Twisted ignores a callback
        # after a cancellation without canceller).
        self.deferred: Deferred[PartitionAnswer] = Deferred()


def _offset_of(want: _Want) -> int:
    return want.offset


class BrokerFetcher:
    """The Fetch requests of one client to one broker, and its fetch session."""

    def __init__(
        self,
        client: ConsumerClient,
        broker: BrokerMetadata,
        isolation_level: int = READ_UNCOMMITTED,
        rack: str = "",
    ) -> None:
        self._client = client
        self.broker = broker
        self.isolation_level = isolation_level
        self.rack = rack
        self._sensors = registry_of(client).shared(ConsumerSensors)
        #: Fetch requests sent (for benchmarks and tests).
        self.requests = 0
        self._wants: dict[TopicAndPartition, list[_Want]] = {}
        self._in_flight: Deferred[Any] | None = None
        self._scheduled: Any = None
        self._sending = self._send_again = False
        self.session = FetchSessionHandler()

    def fetch(
        self,
        broker: BrokerMetadata,
        key: TopicAndPartition,
        offset: int,
        max_bytes: int,
        min_bytes: int,
        max_wait_ms: int,
        leader_epoch: int = -1,
    ) -> Deferred[PartitionAnswer]:
        """Records of *key* from *offset*: fires once the broker returns some, or an error.

        Answers without records (the broker waited ``max_wait_ms`` for
        nothing) are not passed on: the partition stays in the following
        requests.  Fails with the request's failure (a lost connection, a
        timeout); cancel it to stop asking.  *leader_epoch* is the partition's
        ``current_leader_epoch`` (KIP-320; -1: unknown).
        """
        self.broker = broker
        want = _Want(offset, max_bytes, min_bytes, max_wait_ms, leader_epoch)
        self._wants.setdefault(key, []).append(want)
        self._schedule()
        return want.deferred

    def _schedule(self) -> None:
        if self._scheduled is None and self._in_flight is None:
            self._scheduled = self._client.reactor.callLater(0, self._send)

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
        if not wants:
            return
        client = self._client
        sent = self.session.build(
            {k: (w.offset, w.max_bytes, w.leader_epoch) for k, w in wants.items()}
        )
        call = FetchCall(
            [
                FetchRequest(k.topic, k.partition, wants[k].offset, wants[k].max_bytes)
                for k in sent.to_send
            ],
            min(w.max_wait_ms for w in wants.values()),
            min(w.min_bytes for w in wants.values()),
            client.topic_ids,
            self.isolation_level,
            max_bytes=FETCH_MAX_BYTES,
            session_id=sent.session_id,
            session_epoch=sent.epoch,
            forgotten=sent.forgotten,
            unchanged=sent.unchanged,
            leader_epochs={k: wants[k].leader_epoch for k in sent.to_send},
            rack_id=self.rack,
        )
        self.requests += 1
        d = self._in_flight = client.send_request_to_broker(
            self.broker, call, timeout=client.timeout + call.max_wait_ms / 1000
        )
        sent_at = self._sensors.now()
        d.addCallbacks(
            self._answered, self._failed, callbackArgs=(call, sent, sent_at), errbackArgs=(sent,)
        )

    def _answered(
        self, response: Any, call: FetchCall, sent: SessionRequest, sent_at: float
    ) -> None:
        # Still "in flight" while handing out: the consumers fed ask again
        # without scheduling, and all go in the request sent at the end.
        # After a session error nothing is answered: the next, full, request asks again.
        error = response.error_code
        if self.session.handle_response(sent, error, response.session_id):
            if error and not response.responses:
                self.session.handle_error()
                self._answer_all(sent.partitions, (error, None))
            else:
                try:
                    size = self._hand_out(response, call, sent.partitions)
                    self._sensors.fetched(sent_at, size, response.throttle_time_ms)
                except Exception:
                    self.session.handle_error()
                    self._answer_all(sent.partitions, Failure())
        self._next()

    def _failed(self, failure: Failure, sent: SessionRequest) -> None:
        self.session.handle_error()
        self._answer_all(sent.partitions, failure)
        self._next()

    def _next(self) -> None:
        self._in_flight = None
        if self._wants:
            self._send()

    def _hand_out(
        self, response: Any, call: FetchCall, covered: Mapping[TopicAndPartition, Position]
    ) -> int:
        """Answer the partitions that have records, an error or a replica to read from.

        The others ask again.

        Returns the bytes of records the response held (``fetch-size``).
        """
        by_id = call.version >= 13
        client = self._client
        answers = []
        size = 0
        sensors = self._sensors
        for topic in response.responses:
            name = call.ids.name_of(topic.topic_id if by_id else topic.topic)
            for data in topic.partitions:
                key = TopicAndPartition(name, data.partition_index)
                sent = covered.get(key)
                if sent is not None and (
                    data.error_code or data.records or data.preferred_read_replica >= 0
                ):
                    if data.error_code:  # KIP-951: the error may name the new leader
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
        self, covered: Mapping[TopicAndPartition, Position], answer: PartitionAnswer | Failure
    ) -> None:
        for key, (offset, _, _) in covered.items():
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

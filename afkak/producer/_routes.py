"""The producer's topic routes, and where the sends that waited are placed.

A topic's route (:class:`~._partition.TopicState`: its partitions and
partitioner) is loaded on the first send to it.  Sends that cannot be
appended at once wait in the accumulator (for buffer space, then for their
topic's metadata); once they may go, :meth:`TopicRoutes.place` gives each its
partition, as the producer's fast path does, and hands it back to the
accumulator.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._broker_errors import BrokerResponseError, ErrorCode
from afkak._errors import CancelledError
from afkak._retry import RetryPolicy, retrying
from afkak.client import ProducerClient

from ._accumulator import ONE, RECORDS, Pending, RecordAccumulator
from ._options import Options
from ._partition import TopicState

log = Logger()


class TopicRoutes:
    """Topic -> its route, loaded on first use; places the sends that waited."""

    def __init__(
        self,
        client: ProducerClient,
        partitioner_class: Any,
        options: Options,
        backoff: RetryPolicy,
        accumulator: RecordAccumulator,
    ) -> None:
        self._client = client
        self._reactor = client.reactor
        self._partitioner_class = partitioner_class
        self._options = options
        self._backoff = backoff
        self._accumulator = accumulator
        #: Topic -> its route (the producer's fast path reads it).
        self.routes: dict[str, TopicState] = {}
        self._loads: dict[str, Deferred[Any]] = {}
        self._stopped = False

    def place(self, pending: Pending, now: float) -> None:
        """Route a send that got buffer space: append it, or wait for its topic's metadata."""
        route = self.routes.get(pending.topic)
        if route is None:
            if self._accumulator.wait_for_route(pending) and pending.topic not in self._loads:
                self._load_topic(pending.topic)
            return
        self._place(route, pending, now)

    def _place(self, route: TopicState, pending: Pending, now: float) -> None:
        """Give *pending* its partition (or each record its own) and append it."""
        try:
            if pending.kind == ONE:
                partition: Any = route.partition_for(pending.key, pending.partition)
            elif pending.kind == RECORDS:
                partition = route.partition_all(pending.key, pending.partition, len(pending.values))
            elif pending.partition is None:
                partition = route.pick(pending.key)
            else:
                partition = pending.partition
        except Exception:
            self._accumulator.refuse(pending.d, pending.size, Failure())
            return
        self._accumulator.place(route, pending, partition, now)

    def stop(self) -> None:
        """Forget the routes and cancel the loads under way."""
        self._stopped = True
        self.routes.clear()
        loads, self._loads = self._loads, {}
        for load in loads.values():  # a cancelled load's callback runs at once
            load.cancel()

    # -- topic metadata ----------------------------------------------------------

    def _load_topic(self, topic: str) -> None:
        """Load *topic*'s partitions, retrying within the delivery timeout."""
        d = Deferred.fromCoroutine(
            retrying(
                self._reactor,
                lambda: self._topic_partitions(topic),
                self._backoff,
                max_attempts=self._options.max_attempts,
                deadline=self._reactor.seconds() + self._options.delivery_timeout,
                what=f"metadata of topic {topic!r}",
            )
        )
        self._loads[topic] = d
        d.addBoth(self._topic_loaded, topic)

    async def _topic_partitions(self, topic: str) -> Any:
        client = self._client
        try:
            loaded = await client.load_metadata_for_topics(topic)
        except Exception:
            if not client.topic_partitions.get(topic):
                raise
        else:
            if loaded is None:  # the load was cancelled: stop() is under way
                raise CancelledError(request_sent=None, message="the producer was stopped")
        partitions = client.topic_partitions.get(topic)
        if not partitions:
            raise BrokerResponseError.from_errno(
                client.metadata_error_for_topic(topic) or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"no partitions for topic {topic!r}",
            )
        return partitions

    def _topic_loaded(self, result: Any, topic: str) -> None:
        self._loads.pop(topic, None)
        if self._stopped:
            return
        if isinstance(result, Failure):
            log.warn(
                "Cannot send to topic {topic}: {error}", topic=topic, error=result.getErrorMessage()
            )
            self._accumulator.refuse_unrouted(topic, result)
            return
        route = self.routes[topic] = TopicState(
            topic, result, self._partitioner_class(topic, result)
        )
        now = self._reactor.seconds()
        for pending in self._accumulator.take_unrouted(topic):
            self._place(route, pending, now)

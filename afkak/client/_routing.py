"""Fan payloads out to brokers and gather the answers back in payload order.

Pure bookkeeping: which payloads go to which broker, which result answers
which payload, and which payloads got no answer.  Sending is the client's job.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, Generic, TypeVar

import attrs
from twisted.python.failure import Failure

from afkak.common import TopicAndPartition

P = TypeVar("P")


def payload_key(payload: Any) -> TopicAndPartition:
    return TopicAndPartition(payload.topic, payload.partition)


def group_by_broker(
    payloads: Iterable[P], broker_of: Callable[[P], Hashable]
) -> dict[Any, list[P]]:
    """Payloads grouped by destination broker, keeping their relative order."""
    grouped: dict[Any, list[P]] = {}
    for payload in payloads:
        grouped.setdefault(broker_of(payload), []).append(payload)
    return grouped


@attrs.define
class Gathered(Generic[P]):
    """Results of one fan-out: responses in payload order and what failed.

    ``failed`` lists ``(payload, Failure)`` pairs: payloads whose broker
    request failed, and payloads the broker's response left out.
    """

    responses: list[Any]
    failed: list[tuple[P, Failure]]


def gather(
    payloads: Sequence[P],
    outcomes: Iterable[tuple[Sequence[P], list[Any] | Failure]],
    missing: Callable[[P], Failure] | None,
) -> Gathered[P]:
    """Order the results of per-broker requests by the original payloads.

    *outcomes* pairs each broker's payloads with its parsed responses (one per
    partition, with ``topic`` and ``partition``) or with the Failure of its
    request.  Responses for partitions that were not asked for are dropped;
    a payload that got no response fails with ``missing(payload)``, unless
    *missing* is ``None`` (requests that get no response, like acks=0 produce).
    """
    answered: dict[TopicAndPartition, Any] = {}
    failed_keys: dict[TopicAndPartition, Failure] = {}
    for sent, result in outcomes:
        if isinstance(result, Failure):
            for payload in sent:
                failed_keys[payload_key(payload)] = result
        else:
            for response in result:
                answered[TopicAndPartition(response.topic, response.partition)] = response
    responses = []
    failed = []
    for payload in payloads:
        key = payload_key(payload)
        if key in answered:
            responses.append(answered[key])
        elif key in failed_keys:
            failed.append((payload, failed_keys[key]))
        elif missing is not None:
            failed.append((payload, missing(payload)))
    return Gathered(responses=responses, failed=failed)

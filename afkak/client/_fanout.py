"""Send one request per broker in parallel and turn the answers into afkak's results.

The ``send_*_request`` methods share these semantics: results come back in
payload order; payloads whose broker request failed (or that the response
left out) raise :exc:`FailedPayloadsError`, whatever *fail_on_error* says;
with *fail_on_error*, a response carrying a broker error raises that error;
*callback* is applied to each response.  Errors that prove metadata stale
make the cache forget it either way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from twisted.internet.defer import Deferred, DeferredList
from twisted.python.failure import Failure

from afkak.common import (
    BrokerMetadata,
    BrokerResponseError,
    CancelledError,
    FailedPayloadsError,
    NoResponseError,
)

from ._call import VersionedCall
from ._cluster import Cluster
from ._routing import gather
from ._stale import forget_for_responses

Outcome = tuple[Sequence[Any], "list[Any] | Failure"]


async def fan_out(
    cluster: Cluster,
    batches: Mapping[BrokerMetadata, Sequence[Any]],
    make_call: Callable[[Sequence[Any]], VersionedCall],
    on_failure: Callable[[Sequence[Any], Failure], None],
    *,
    expect_response: bool = True,
    timeout: float | None = None,
    coordinator: bool = False,
) -> list[Outcome]:
    """Send each broker its batch of payloads at once; pair each batch with its result.

    A batch's result is its parsed responses, or the Failure of its request,
    which is also reported to *on_failure*.  A cancelled request means the
    whole operation was cancelled (or the client closed): that is raised.
    *coordinator* sends over the brokers' group coordinator connections.
    """
    sends: list[Deferred[Any]] = []
    for broker, batch in batches.items():
        call = make_call(batch)
        d = cluster.request(
            broker, call, expect_response=expect_response, timeout=timeout, coordinator=coordinator
        )
        sends.append(d.addCallback(call.parse if expect_response else _nothing))
    results = await DeferredList(sends, consumeErrors=True)
    outcomes: list[Outcome] = []
    for batch, (ok, value) in zip(batches.values(), results, strict=True):
        if not ok:
            if value.check(CancelledError):
                value.raiseException()
            on_failure(batch, value)
        outcomes.append((batch, value))
    return outcomes


def _nothing(_: object) -> list[Any]:
    return []


def finish(
    cluster: Cluster,
    payloads: Sequence[Any],
    outcomes: list[Outcome],
    fail_on_error: bool,
    callback: Callable[[Any], Any] | None,
    *,
    group: str | None = None,
    expect_response: bool = True,
) -> list[Any]:
    """Responses in payload order, after the error and callback rules above."""
    gathered = gather(payloads, outcomes, _no_response if expect_response else None)
    forget_for_responses(cluster.cache, gathered.responses, group)
    if gathered.failed:
        raise FailedPayloadsError(gathered.responses, gathered.failed)
    return checked(gathered.responses, fail_on_error, callback)


def checked(
    responses: list[Any], fail_on_error: bool, callback: Callable[[Any], Any] | None
) -> list[Any]:
    """*responses*, the first with an error raised if *fail_on_error*, through *callback*."""
    if fail_on_error:
        for r in responses:
            if r.error:
                raise BrokerResponseError.from_errno(r.error, r)
    return responses if callback is None else [callback(r) for r in responses]


def _no_response(payload: Any) -> Failure:
    return Failure(NoResponseError(f"the broker's response left out {payload!r}"))

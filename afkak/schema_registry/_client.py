"""An asynchronous Schema Registry client (Confluent's REST API) over treq, with caches.

As confluent-kafka's client, it keeps what does not change: a schema by id,
the id and version of a schema under a subject, a subject's version; a
subject's latest version is kept for ``latest_ttl`` seconds.  Concurrent
look-ups of one thing share one request.  Failures that may pass (no answer,
HTTP 408/429/5xx) are retried with the project's backoff, on the next of the
registry's URLs.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any, Protocol, TypeVar
from urllib.parse import quote, urlsplit, urlunsplit

from twisted.internet.defer import CancelledError, Deferred, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.iweb import IPolicyForHTTPS
from zope.interface import implementer

from afkak._retry import RetryPolicy, retry_backoff, retrying
from afkak.connection import TLS

from ._errors import SchemaRegistryError
from ._schema import RegisteredSchema, Schema

log = Logger()

T = TypeVar("T")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class HTTPResponse(Protocol):
    code: int

    def content(self) -> Deferred[bytes]: ...


class HTTPClient(Protocol):
    """What the client needs of treq (``treq.client.HTTPClient``, ``treq.testing.StubTreq``)."""

    def request(
        self, method: str, url: str, *, data: Any = ..., headers: Any = ..., params: Any = ...
    ) -> Any: ...


def _default_http(reactor: Any, tls: TLS | None) -> HTTPClient:
    from treq.client import HTTPClient as TreqClient
    from twisted.web.client import Agent, BrowserLikePolicyForHTTPS, HTTPConnectionPool

    policy = BrowserLikePolicyForHTTPS() if tls is None else _TLSPolicy(tls)
    pool = HTTPConnectionPool(reactor)
    client: HTTPClient = TreqClient(Agent(reactor, contextFactory=policy, pool=pool))
    return client


@implementer(IPolicyForHTTPS)
class _TLSPolicy:
    """The Agent's ``IPolicyForHTTPS`` from an afkak :class:`~afkak.connection.TLS`."""

    def __init__(self, tls: TLS) -> None:
        self._tls = tls

    def creatorForNetloc(self, hostname: bytes, port: int) -> Any:
        return self._tls.creator(hostname.decode("ascii"))


class SchemaRegistryClient:
    """A Schema Registry at *url* (several, comma-separated, are tried in turn).

    :param reactor: the reactor (timeouts, retry waits, the default HTTP client).
    :param auth: ``(user, password)`` for HTTP basic authentication (or put
        them in the URL: ``https://user:password@host``).
    :param bearer_token: a token (or a function returning one, asked at each
        request) sent as ``Authorization: Bearer``.
    :param tls: for ``https`` URLs, an :class:`afkak.connection.TLS` (the CA
        that signed the registry's certificate, a client certificate for
        mutual TLS, host name verification), as for brokers; None trusts the
        system's CAs.
    :param http: a treq-like client (``treq.testing.StubTreq`` in tests); by
        default treq over a pooled Agent.
    :param retry_policy: waits between attempts (``afkak._retry.backoff_policy``).
    :param max_attempts: attempts per call before failing (0: no limit).
    :param timeout: seconds an attempt may take.
    :param latest_ttl: seconds a subject's latest version is kept (None: until
        :meth:`forget_latest`).
    """

    def __init__(
        self,
        url: str,
        reactor: Any,
        *,
        auth: tuple[str, str] | None = None,
        bearer_token: str | Callable[[], str] | None = None,
        http: HTTPClient | None = None,
        tls: TLS | None = None,
        retry_policy: RetryPolicy | None = None,
        max_attempts: int = 3,
        timeout: float = 30.0,
        latest_ttl: float | None = None,
    ) -> None:
        if not isinstance(url, str) or not url:
            raise TypeError(f"url must be a non-empty str, not {url!r}")
        if auth is not None and bearer_token is not None:
            raise ValueError("give auth or bearer_token, not both")
        if tls is not None and not isinstance(tls, TLS):
            raise TypeError(f"tls must be an afkak.connection.TLS or None, not {tls!r}")
        if tls is not None and http is not None:
            raise ValueError("tls is for the default HTTP client: give tls or http, not both")
        self._urls: list[str] = []
        for one in url.split(","):
            parts = urlsplit(one.strip())
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"not an http(s) URL: {one!r}")
            if parts.username is not None and auth is None and bearer_token is None:
                auth = (parts.username, parts.password or "")
            netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
            self._urls.append(urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", "")))
        self._next_url = 0
        self._auth = auth
        self._bearer_token = bearer_token
        self.reactor = reactor
        self._http = http if http is not None else _default_http(reactor, tls)
        self._retry_policy = retry_policy if retry_policy is not None else retry_backoff()
        self._max_attempts = max_attempts
        self._timeout = timeout
        self._latest_ttl = latest_ttl
        self._by_id: dict[int, Schema] = {}
        self._by_schema: dict[tuple[str, Schema], RegisteredSchema] = {}
        self._ids: dict[tuple[str, Schema], int] = {}
        self._versions: dict[tuple[str, int], RegisteredSchema] = {}
        self._latest: dict[str, tuple[float, RegisteredSchema]] = {}
        self._inflight: dict[Any, tuple[Deferred[Any], list[Deferred[Any]]]] = {}

    def __repr__(self) -> str:
        return f"<SchemaRegistryClient {','.join(self._urls)}>"

    # -- HTTP -------------------------------------------------------------------

    def _headers(self) -> dict[bytes, list[bytes]]:
        headers = {b"Accept": [CONTENT_TYPE.encode()], b"Content-Type": [CONTENT_TYPE.encode()]}
        if self._auth is not None:
            user_info = f"{self._auth[0]}:{self._auth[1]}".encode()
            headers[b"Authorization"] = [b"Basic " + base64.b64encode(user_info)]
        elif self._bearer_token is not None:
            token = (
                self._bearer_token if isinstance(self._bearer_token, str) else self._bearer_token()
            )
            headers[b"Authorization"] = [b"Bearer " + token.encode()]
        return headers

    async def _attempt(self, method: str, path: str, body: Any, params: dict[str, str]) -> Any:
        url = self._urls[self._next_url % len(self._urls)] + path
        data = None if body is None else json.dumps(body).encode()
        try:
            d = self._http.request(
                method, url, data=data, headers=self._headers(), params=params or None
            )
            d.addTimeout(self._timeout, self.reactor)
            response = await d
            d = response.content()
            d.addTimeout(self._timeout, self.reactor)
            content = await d
        except CancelledError:
            raise
        except Exception as e:
            self._next_url += 1
            raise SchemaRegistryError(-1, -1, f"{method} {url}: {e!r}") from e
        status = response.code
        try:
            answer = json.loads(content) if content else None
        except ValueError:
            answer = None
        if HTTPStatus.OK <= status < HTTPStatus.MULTIPLE_CHOICES:
            if answer is None:
                raise SchemaRegistryError(
                    status, -1, f"{method} {url}: not JSON: {content[:200]!r}"
                )
            return answer
        if isinstance(answer, dict) and "error_code" in answer:
            error = SchemaRegistryError(
                status, int(answer["error_code"]), str(answer.get("message"))
            )
        else:
            error = SchemaRegistryError(status, -1, f"{method} {url}: {content[:200]!r}")
        if error.retriable:
            self._next_url += 1
        raise error

    def _call(
        self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None
    ) -> Deferred[Any]:
        return Deferred.fromCoroutine(
            retrying(
                self.reactor,
                lambda: self._attempt(method, path, body, params or {}),
                self._retry_policy,
                max_attempts=self._max_attempts,
                what=f"Schema Registry {method} {path}",
            )
        )

    def _shared(self, key: Any, fetch: Callable[[], Awaitable[T]]) -> Deferred[T]:
        """One request for *key* however many ask; cancelling one asker leaves the others."""
        mine: Deferred[T] = Deferred(lambda w: self._cancel_waiter(key, w))
        entry = self._inflight.get(key)
        if entry is not None:
            entry[1].append(mine)
            return mine
        waiters: list[Deferred[Any]] = [mine]
        self._inflight[key] = (Deferred(), waiters)

        async def run() -> T:
            return await fetch()

        def settle(result: object) -> None:
            del self._inflight[key]
            for w in waiters:
                if isinstance(result, Failure):
                    w.errback(result)
                else:
                    w.callback(result)

        fetching: Deferred[T] = Deferred.fromCoroutine(run())
        if key in self._inflight:
            self._inflight[key] = (fetching, waiters)
        fetching.addBoth(settle)
        return mine

    def _cancel_waiter(self, key: Any, waiter: Deferred[Any]) -> None:
        entry = self._inflight.get(key)
        if entry is None:
            return
        fetching, waiters = entry
        waiters.remove(waiter)
        if not waiters:
            fetching.cancel()

    # -- the calls --------------------------------------------------------------

    def register(self, subject: str, schema: Schema, normalize: bool = False) -> Deferred[int]:
        """Register *schema* under *subject* (or find it there): its global id.

        Fails with :class:`SchemaRegistryError` ``409`` when the subject's
        compatibility rule refuses it, ``42201`` when it is not a valid schema.
        """
        _check_subject(subject)
        _check_schema(schema)
        cached = self._ids.get((subject, schema))
        if cached is not None:
            return succeed(cached)

        async def fetch() -> int:
            params = {"normalize": "true"} if normalize else {}
            answer = await self._call(
                "POST", _subject_path(subject, "versions"), schema.to_json(), params
            )
            schema_id = int(answer["id"])
            self._ids[(subject, schema)] = schema_id
            self._by_id.setdefault(schema_id, schema)
            return schema_id

        return self._shared(("register", subject, schema), fetch)

    def get_schema(self, schema_id: int, subject: str | None = None) -> Deferred[Schema]:
        """The schema with global id *schema_id* (``40403`` if there is none)."""
        if not isinstance(schema_id, int) or isinstance(schema_id, bool):
            raise TypeError(f"schema_id must be an int, not {schema_id!r}")
        cached = self._by_id.get(schema_id)
        if cached is not None:
            return succeed(cached)

        async def fetch() -> Schema:
            params = {"subject": subject} if subject else {}
            answer = await self._call("GET", f"/schemas/ids/{schema_id}", None, params)
            schema = Schema.from_json(answer)
            self._by_id[schema_id] = schema
            return schema

        return self._shared(("id", schema_id), fetch)

    def lookup_schema(
        self, subject: str, schema: Schema, normalize: bool = False
    ) -> Deferred[RegisteredSchema]:
        """*schema* as registered under *subject* (``40403`` if it is not there)."""
        _check_subject(subject)
        _check_schema(schema)
        cached = self._by_schema.get((subject, schema))
        if cached is not None:
            return succeed(cached)

        async def fetch() -> RegisteredSchema:
            params = {"normalize": "true"} if normalize else {}
            answer = await self._call("POST", _subject_path(subject), schema.to_json(), params)
            answer.setdefault("subject", subject)
            registered = RegisteredSchema.from_json({**schema.to_json(), **answer})
            self._remember(registered)
            return registered

        return self._shared(("lookup", subject, schema), fetch)

    def get_version(self, subject: str, version: int) -> Deferred[RegisteredSchema]:
        """Version *version* of *subject* (``40401`` no subject, ``40402`` no version)."""
        _check_subject(subject)
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ValueError(f"version must be an int >= 1, not {version!r}")
        cached = self._versions.get((subject, version))
        if cached is not None:
            return succeed(cached)

        async def fetch() -> RegisteredSchema:
            answer = await self._call("GET", _subject_path(subject, "versions", str(version)))
            registered = RegisteredSchema.from_json(answer)
            self._remember(registered)
            return registered

        return self._shared(("version", subject, version), fetch)

    def get_latest_version(self, subject: str) -> Deferred[RegisteredSchema]:
        """The latest version of *subject*, kept for ``latest_ttl`` seconds."""
        _check_subject(subject)
        cached = self._latest.get(subject)
        if cached is not None and (
            self._latest_ttl is None or self.reactor.seconds() < cached[0] + self._latest_ttl
        ):
            return succeed(cached[1])

        async def fetch() -> RegisteredSchema:
            answer = await self._call("GET", _subject_path(subject, "versions", "latest"))
            registered = RegisteredSchema.from_json(answer)
            self._remember(registered)
            self._latest[subject] = (self.reactor.seconds(), registered)
            return registered

        return self._shared(("latest", subject), fetch)

    def forget_latest(self, subject: str) -> None:
        """Ask the registry again for *subject*'s latest version next time."""
        self._latest.pop(subject, None)

    def test_compatibility(
        self, subject: str, schema: Schema, version: int | str = "latest"
    ) -> Deferred[tuple[bool, list[str]]]:
        """Whether *schema* is compatible with *version* of *subject* under the
        subject's rule, and the registry's reasons when it is not."""
        _check_subject(subject)
        _check_schema(schema)

        async def check() -> tuple[bool, list[str]]:
            path = _subject_path(subject, "versions", str(version))
            answer = await self._call(
                "POST", "/compatibility" + path, schema.to_json(), {"verbose": "true"}
            )
            return bool(answer["is_compatible"]), [str(m) for m in answer.get("messages") or ()]

        return Deferred.fromCoroutine(check())

    def get_subjects(self) -> Deferred[list[str]]:
        """Every subject."""
        return self._call("GET", "/subjects")

    def get_versions(self, subject: str) -> Deferred[list[int]]:
        """The versions of *subject*."""
        _check_subject(subject)
        return self._call("GET", _subject_path(subject, "versions"))

    def delete_subject(self, subject: str, permanent: bool = False) -> Deferred[list[int]]:
        """Delete *subject* (soft, or *permanent* after a soft delete): its versions."""
        _check_subject(subject)
        for cache in (self._by_schema, self._ids):
            for key in [k for k in cache if k[0] == subject]:
                del cache[key]
        for version_key in [k for k in self._versions if k[0] == subject]:
            del self._versions[version_key]
        self._latest.pop(subject, None)
        params = {"permanent": "true"} if permanent else {}
        return self._call("DELETE", _subject_path(subject), None, params)

    def set_compatibility(self, level: str, subject: str | None = None) -> Deferred[str]:
        """Set the compatibility rule (``BACKWARD``, ``FULL``, ``NONE`` ...) of *subject*,
        or the registry's default."""
        path = "/config" if subject is None else "/config/" + quote(subject, safe="")

        async def put() -> str:
            answer = await self._call("PUT", path, {"compatibility": level})
            return str(answer["compatibility"])

        return Deferred.fromCoroutine(put())

    def _remember(self, registered: RegisteredSchema) -> None:
        self._by_id.setdefault(registered.schema_id, registered.schema)
        self._ids[(registered.subject, registered.schema)] = registered.schema_id
        self._by_schema[(registered.subject, registered.schema)] = registered
        self._versions[(registered.subject, registered.version)] = registered


def _subject_path(subject: str, *more: str) -> str:
    return "/subjects/" + "/".join([quote(subject, safe=""), *more])


def _check_subject(subject: object) -> None:
    if not isinstance(subject, str) or not subject:
        raise TypeError(f"subject must be a non-empty str, not {subject!r}")


def _check_schema(schema: object) -> None:
    if not isinstance(schema, Schema):
        raise TypeError(f"schema must be a Schema, not {schema!r}")

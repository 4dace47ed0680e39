"""The Schema Registry client and the in-memory registry (afkak.testing.schema_registry)."""

from __future__ import annotations

import json
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.resource import Resource
from twisted.web.server import Request

from afkak.schema_registry import (
    INCOMPATIBLE_SCHEMA,
    INVALID_SCHEMA,
    SCHEMA_NOT_FOUND,
    SUBJECT_NOT_FOUND,
    VERSION_NOT_FOUND,
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    SchemaRegistryError,
)
from afkak.testing.schema_registry import InMemorySchemaRegistry

USER = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "example",
        "fields": [{"name": "name", "type": "string"}],
    }
)
USER_V2 = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "example",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "age", "type": "int", "default": 0},
        ],
    }
)
USER_BAD = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "example",
        "fields": [{"name": "name", "type": "string"}, {"name": "email", "type": "string"}],
    }
)

ADDRESS = json.dumps(
    {
        "type": "record",
        "name": "Address",
        "namespace": "example",
        "fields": [{"name": "city", "type": "string"}],
    }
)
#: A record referencing ADDRESS, registered under subject "address".
PERSON = json.dumps(
    {
        "type": "record",
        "name": "Person",
        "namespace": "example",
        "fields": [{"name": "home", "type": "example.Address"}],
    }
)


class RegistryTestCase(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.registry = InMemorySchemaRegistry()
        self.client = self.registry.client(self.clock, retry_policy=lambda failures: 0.5)

    def result(self, d: Deferred[Any]) -> Any:
        return self.successResultOf(d)

    def refused(self, d: Deferred[Any]) -> SchemaRegistryError:
        for _ in range(10):
            self.clock.advance(1)
        return self.failureResultOf(d, SchemaRegistryError).value


class ClientTests(RegistryTestCase):
    def test_register_then_look_up_by_id_subject_and_version(self) -> None:
        schema_id = self.result(self.client.register("users-value", Schema(USER)))
        self.assertEqual(schema_id, 1)
        other = self.registry.client(self.clock)
        self.assertEqual(self.result(other.get_schema(1)), Schema(USER))
        latest = self.result(other.get_latest_version("users-value"))
        self.assertEqual((latest.schema_id, latest.version, latest.subject), (1, 1, "users-value"))
        self.assertEqual(self.result(other.get_version("users-value", 1)), latest)
        found = self.result(other.lookup_schema("users-value", Schema(USER)))
        self.assertEqual(found, latest)
        self.assertEqual(self.result(other.get_subjects()), ["users-value"])
        self.assertEqual(self.result(other.get_versions("users-value")), [1])

    def test_one_schema_has_one_id_across_subjects(self) -> None:
        a = self.result(self.client.register("a-value", Schema(USER)))
        b = self.result(self.client.register("b-value", Schema(USER)))
        self.assertEqual(a, b)

    def test_what_does_not_change_is_asked_once(self) -> None:
        self.result(self.client.register("s", Schema(USER)))
        other = self.registry.client(self.clock)
        before = len(self.registry.requests)
        for _ in range(3):
            self.result(other.get_schema(1))
            self.result(other.get_version("s", 1))
            self.result(self.client.register("s", Schema(USER)))
        self.assertEqual(
            self.registry.requests[before:],
            [("GET", "/schemas/ids/1"), ("GET", "/subjects/s/versions/1")],
        )

    def test_concurrent_look_ups_share_one_request(self) -> None:
        self.result(self.client.register("s", Schema(USER)))
        stalled = _Stalled(self.registry.resource)
        other = SchemaRegistryClient("http://r", self.clock, http=stalled)
        first, second = other.get_schema(1), other.get_schema(1)
        self.assertEqual(len(stalled.requests), 1)
        second.cancel()
        self.failureResultOf(second)
        stalled.release()
        self.assertEqual(self.result(first), Schema(USER))

    def test_the_latest_version_is_kept_for_its_ttl(self) -> None:
        client = self.registry.client(self.clock, latest_ttl=10)
        self.result(client.register("s", Schema(USER)))
        self.assertEqual(self.result(client.get_latest_version("s")).version, 1)
        self.result(self.registry.client(self.clock).register("s", Schema(USER_V2)))
        self.assertEqual(self.result(client.get_latest_version("s")).version, 1)
        self.clock.advance(10)
        self.assertEqual(self.result(client.get_latest_version("s")).version, 2)

    def test_errors_carry_the_registrys_code_and_message(self) -> None:
        e = self.refused(self.client.get_latest_version("nope"))
        self.assertEqual((e.http_status, e.error_code), (404, SUBJECT_NOT_FOUND))
        self.assertIn("Subject 'nope' not found", str(e))
        self.assertFalse(e.retriable)
        self.result(self.client.register("s", Schema(USER)))
        e = self.refused(self.client.get_version("s", 7))
        self.assertEqual(e.error_code, VERSION_NOT_FOUND)
        e = self.refused(self.client.get_schema(99))
        self.assertEqual(e.error_code, SCHEMA_NOT_FOUND)
        e = self.refused(self.client.lookup_schema("s", Schema(USER_V2)))
        self.assertEqual(e.error_code, SCHEMA_NOT_FOUND)
        e = self.refused(self.client.register("s", Schema("{not json")))
        self.assertEqual((e.http_status, e.error_code), (422, INVALID_SCHEMA))

    def test_an_incompatible_schema_is_refused_with_the_registrys_reasons(self) -> None:
        self.result(self.client.register("s", Schema(USER)))
        compatible, why = self.result(self.client.test_compatibility("s", Schema(USER_BAD)))
        self.assertFalse(compatible)
        self.assertIn("email", why[0])
        e = self.refused(self.client.register("s", Schema(USER_BAD)))
        self.assertEqual((e.http_status, e.error_code), (409, INCOMPATIBLE_SCHEMA))
        self.assertIn("incompatible", e.message)
        self.assertEqual(
            self.result(self.client.test_compatibility("s", Schema(USER_V2))), (True, [])
        )
        self.assertEqual(self.result(self.client.register("s", Schema(USER_V2))), 2)
        self.assertEqual(self.result(self.client.set_compatibility("NONE", "s")), "NONE")
        self.assertEqual(self.result(self.client.register("s", Schema(USER_BAD))), 3)

    def test_a_registry_down_is_retried_then_reported(self) -> None:
        self.registry.unavailable = True
        d = self.client.get_schema(1)
        self.clock.advance(0.5)
        self.registry.unavailable = False
        self.result(self.registry.client(self.clock).register("s", Schema(USER)))
        self.clock.advance(0.5)
        self.assertEqual(self.result(d), Schema(USER))
        self.registry.unavailable = True
        e = self.refused(self.client.get_version("s", 1))
        self.assertEqual((e.http_status, e.error_code, e.retriable), (503, 50003, True))
        self.assertEqual(self.registry.requests.count(("GET", "/subjects/s/versions/1")), 3)

    def test_no_answer_is_retried_on_the_next_url(self) -> None:
        seen: list[str] = []
        registry = self.registry

        class Refusing:
            def request(self, method: str, url: str, **kwargs: Any) -> Deferred[Any]:
                seen.append(url)
                if url.startswith("http://down"):
                    from twisted.internet.error import ConnectionRefusedError

                    return _failed(ConnectionRefusedError())
                return registry.client(Clock())._http.request(method, url, **kwargs)

        self.result(self.client.register("s", Schema(USER)))
        client = SchemaRegistryClient(
            "http://down:8081,http://up:8081", self.clock, http=Refusing(), retry_policy=lambda n: 1
        )
        d = client.get_schema(1)
        self.clock.advance(1)
        self.assertEqual(self.result(d), Schema(USER))
        self.assertEqual(seen, ["http://down:8081/schemas/ids/1", "http://up:8081/schemas/ids/1"])

    def test_basic_and_bearer_authentication(self) -> None:
        auth = _Authorizing(self.registry.resource)
        from treq.testing import StubTreq

        for options, header in [
            ({"auth": ("u", "p")}, b"Basic dTpw"),
            ({"bearer_token": "tok"}, b"Bearer tok"),
            ({"bearer_token": lambda: "fresh"}, b"Bearer fresh"),
        ]:
            client = SchemaRegistryClient("http://r", self.clock, http=StubTreq(auth), **options)
            self.result(client.get_subjects())
            self.assertEqual(auth.seen[-1], header)
        client = SchemaRegistryClient("https://u:p@r:8081/", self.clock, http=StubTreq(auth))
        self.result(client.get_subjects())
        self.assertEqual(auth.seen[-1], b"Basic dTpw")
        auth.token = b"Basic other"
        e = self.refused(client.get_subjects())
        self.assertEqual((e.http_status, e.error_code), (401, 40101))

    def test_bad_arguments(self) -> None:
        with self.assertRaises(TypeError):
            SchemaRegistryClient(None, self.clock)  # type: ignore[arg-type]
        with self.assertRaises(ValueError):
            SchemaRegistryClient("ftp://x", self.clock)
        with self.assertRaises(ValueError):
            SchemaRegistryClient("http://x", self.clock, auth=("a", "b"), bearer_token="t")
        with self.assertRaises(TypeError):
            self.client.register("s", USER)  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            self.client.get_schema("1")  # type: ignore[arg-type]
        with self.assertRaises(ValueError):
            self.client.get_version("s", 0)
        with self.assertRaises(ValueError):
            Schema(USER, "XML")

    def test_a_malformed_answer_fails_the_call(self) -> None:
        class Garbage(Resource):
            isLeaf = True

            def render(self, request: Request) -> bytes:
                return b"<html>proxy</html>"

        from treq.testing import StubTreq

        client = SchemaRegistryClient("http://r", self.clock, http=StubTreq(Garbage()))
        e = self.refused(client.get_schema(1))
        self.assertEqual((e.http_status, e.error_code), (200, -1))
        self.assertIn("not JSON", str(e))


class InMemoryRegistryTests(RegistryTestCase):
    def test_references_must_exist_and_resolve(self) -> None:
        ref = SchemaReference("example.Address", "address", 1)
        e = self.refused(self.client.register("p", Schema(PERSON, references=(ref,))))
        self.assertEqual(e.error_code, INVALID_SCHEMA)
        self.result(self.client.register("address", Schema(ADDRESS)))
        self.assertEqual(
            self.result(self.client.register("p", Schema(PERSON, references=(ref,)))), 2
        )
        e = self.refused(self.client.register("q", Schema(PERSON)))
        self.assertEqual(e.error_code, INVALID_SCHEMA)

    def test_deleted_subjects_are_gone(self) -> None:
        self.result(self.client.register("s", Schema(USER)))
        self.assertEqual(self.result(self.client.delete_subject("s")), [1])
        self.assertEqual(self.result(self.client.get_subjects()), [])
        e = self.refused(self.client.get_latest_version("s"))
        self.assertEqual(e.error_code, SUBJECT_NOT_FOUND)
        self.assertEqual(self.result(self.client.get_schema(1)), Schema(USER))

    def test_transitive_and_forward_rules(self) -> None:
        no_default = json.dumps(
            {
                "type": "record",
                "name": "User",
                "namespace": "example",
                "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "long"}],
            }
        )
        self.result(self.client.set_compatibility("FORWARD"))
        self.result(self.client.register("s", Schema(USER)))
        self.assertEqual(self.result(self.client.register("s", Schema(no_default))), 2)
        self.result(self.client.set_compatibility("FULL", "s"))
        e = self.refused(self.client.register("s", Schema(USER_BAD)))
        self.assertEqual(e.error_code, INCOMPATIBLE_SCHEMA)


class _Stalled:
    """An HTTP client whose requests wait for release()."""

    def __init__(self, resource: Resource) -> None:
        from treq.testing import StubTreq

        self.http = StubTreq(resource)
        self.requests: list[Deferred[Any]] = []
        self._calls: list[tuple[str, str, dict[str, Any]]] = []

    def request(self, method: str, url: str, **kwargs: Any) -> Deferred[Any]:
        d: Deferred[Any] = Deferred()
        self.requests.append(d)
        self._calls.append((method, url, kwargs))
        return d

    def release(self) -> None:
        for d, (method, url, kwargs) in zip(self.requests, self._calls, strict=True):
            self.http.request(method, url, **kwargs).chainDeferred(d)


class _Authorizing(Resource):
    isLeaf = True

    def __init__(self, inner: Resource) -> None:
        super().__init__()
        self.inner = inner
        self.seen: list[bytes] = []
        self.token: bytes | None = None

    def render(self, request: Request) -> bytes:
        got = request.getHeader(b"Authorization") or b""
        self.seen.append(got)
        if self.token is not None and got != self.token:
            request.setResponseCode(401)
            return json.dumps({"error_code": 40101, "message": "Unauthorized"}).encode()
        return self.inner.render(request)


def _failed(error: Exception) -> Deferred[Any]:
    from twisted.internet.defer import fail

    return fail(error)

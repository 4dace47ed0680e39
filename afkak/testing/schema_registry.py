"""An in-memory Schema Registry for tests: Confluent's REST API, no server.

:class:`InMemorySchemaRegistry` answers the calls afkak's
:class:`~afkak.schema_registry.SchemaRegistryClient` makes (and
confluent-kafka's): register and look up schemas, versions and ids,
compatibility checks and rules, subject deletion.  :meth:`~InMemorySchemaRegistry.client`
gives a client that reaches it through ``treq.testing.StubTreq`` (synchronous:
no reactor turn, no socket), so a trial test with a ``Clock`` runs the real
client and serdes against it; :meth:`~InMemorySchemaRegistry.listen` serves it
on a local port for other processes (confluent-kafka, a CLI).

Ids are global and given per distinct schema, as Confluent's registry does.
Compatibility (``BACKWARD`` by default, ``FORWARD``, ``FULL``, their
``_TRANSITIVE`` forms, ``NONE``) is checked for Avro by Avro's schema
resolution rules; JSON Schema and Protobuf schemas are only checked to parse.
Setting :attr:`~InMemorySchemaRegistry.unavailable` makes every call answer
HTTP 503, as a registry that is down behind a proxy.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

import attrs
from twisted.web.resource import Resource
from twisted.web.server import Request, Site

from afkak.schema_registry import (
    AVRO,
    INCOMPATIBLE_SCHEMA,
    INVALID_SCHEMA,
    INVALID_VERSION,
    JSON,
    SCHEMA_NOT_FOUND,
    SUBJECT_NOT_FOUND,
    VERSION_NOT_FOUND,
    Schema,
    SchemaRegistryClient,
)

__all__ = ["InMemorySchemaRegistry"]

LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
_PROMOTIONS = {
    "int": {"long", "float", "double"},
    "long": {"float", "double"},
    "float": {"double"},
    "string": {"bytes"},
    "bytes": {"string"},
}
_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


class _Refused(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@attrs.define
class _Version:
    version: int
    schema_id: int
    deleted: bool = False


def _avro_names(schema: Any, namespace: str, names: dict[str, Any]) -> None:
    """Every named type defined in *schema*, by full name."""
    if isinstance(schema, list):
        for branch in schema:
            _avro_names(branch, namespace, names)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            name = schema["name"]
            namespace = (
                schema.get("namespace", namespace) if "." not in name else name.rpartition(".")[0]
            )
            full = name if "." in name else f"{namespace}.{name}" if namespace else name
            names[full] = (schema, namespace)
            for field in schema.get("fields", ()):
                _avro_names(field["type"], namespace, names)
        elif kind == "array":
            _avro_names(schema["items"], namespace, names)
        elif kind == "map":
            _avro_names(schema["values"], namespace, names)
        elif isinstance(kind, (dict, list)):
            _avro_names(kind, namespace, names)


class _AvroResolution:
    """Whether data written with one Avro schema can be read with another (Avro's rules)."""

    def __init__(self, names: dict[str, Any]) -> None:
        self.names = names
        self.seen: set[tuple[str, str]] = set()

    def resolve(self, schema: Any, namespace: str) -> tuple[Any, str]:
        if isinstance(schema, dict) and not isinstance(schema.get("type"), str):
            return self.resolve(schema["type"], namespace)
        if isinstance(schema, dict) and schema["type"] in _PRIMITIVES:
            return schema["type"], namespace
        if isinstance(schema, str) and schema not in _PRIMITIVES:
            full = schema if "." in schema or not namespace else f"{namespace}.{schema}"
            found = self.names.get(full) or self.names.get(schema)
            if found is None:
                raise ValueError(f"unknown Avro type {schema!r}")
            return found
        return schema, namespace

    def problems(self, reader: Any, writer: Any, rns: str, wns: str, path: str) -> list[str]:
        reader, rns = self.resolve(reader, rns)
        writer, wns = self.resolve(writer, wns)
        if isinstance(writer, list):
            return [p for w in writer for p in self.problems(reader, w, rns, wns, path)]
        if isinstance(reader, list):
            if any(not self.problems(r, writer, rns, wns, path) for r in reader):
                return []
            return [f"{path}: no branch of the reader's union reads the writer's {_kind(writer)}"]
        rk, wk = _kind(reader), _kind(writer)
        if rk == wk:
            return self._same_kind_problems(rk, reader, writer, rns, wns, path)
        if (
            isinstance(reader, str)
            and isinstance(writer, str)
            and reader in _PROMOTIONS.get(writer, ())
        ):
            return []
        return [f"{path}: the reader's {rk} cannot read the writer's {wk}"]

    def _same_kind_problems(
        self, kind: str, reader: Any, writer: Any, rns: str, wns: str, path: str
    ) -> list[str]:
        """What stops *reader* reading *writer*, both of *kind* (a primitive: nothing)."""
        if kind == "record":
            return self._record_problems(reader, writer, rns, wns, path)
        if kind == "enum":
            missing = set(writer["symbols"]) - set(reader["symbols"])
            if missing and "default" not in reader:
                return [f"{path}: the reader's enum lacks {sorted(missing)}"]
        elif kind == "fixed" and reader["size"] != writer["size"]:
            return [f"{path}: fixed sizes {reader['size']} and {writer['size']} differ"]
        elif kind == "array":
            return self.problems(reader["items"], writer["items"], rns, wns, path + "[]")
        elif kind == "map":
            return self.problems(reader["values"], writer["values"], rns, wns, path + "{}")
        return []

    def _record_problems(
        self, reader: Any, writer: Any, rns: str, wns: str, path: str
    ) -> list[str]:
        """Each reader's field read from the writer's field of its name, or its default
        (a pair of records already being compared, in a recursive schema, is not again)."""
        key = (reader["name"], writer["name"])
        if key in self.seen:
            return []
        self.seen.add(key)
        written = {f["name"]: f for f in writer["fields"]}
        out = []
        for field in reader["fields"]:
            w = written.get(field["name"])
            where = f"{path}.{field['name']}"
            if w is not None:
                out += self.problems(field["type"], w["type"], rns, wns, where)
            elif "default" not in field:
                out.append(
                    f"{where}: the reader's field has no default and the writer has no such field"
                )
        return out


def _kind(schema: Any) -> str:
    return schema if isinstance(schema, str) else str(schema["type"])


class InMemorySchemaRegistry:
    """A Schema Registry in the test's memory (see the module's docstring).

    :param compatibility: the default compatibility rule.
    """

    def __init__(self, compatibility: str = "BACKWARD") -> None:
        if compatibility not in LEVELS:
            raise ValueError(f"compatibility must be one of {LEVELS}, not {compatibility!r}")
        self.compatibility = compatibility
        #: Every call answers HTTP 503 while true.
        self.unavailable = False
        #: Requests answered, as ``(method, path)`` (a test counts the look-ups).
        self.requests: list[tuple[str, str]] = []
        self._schemas: list[Schema] = []
        self._ids: dict[Schema, int] = {}
        self._subjects: dict[str, list[_Version]] = {}
        self._levels: dict[str, str] = {}
        self.resource = _RegistryResource(self)

    def client(self, reactor: Any, **options: Any) -> SchemaRegistryClient:
        """A client that reaches this registry in memory (``treq.testing.StubTreq``)."""
        from treq.testing import StubTreq

        http: Any = StubTreq(self.resource)  # its methods are set at run time
        return SchemaRegistryClient(
            "http://in-memory-schema-registry", reactor, http=http, **options
        )

    def listen(self, reactor: Any, port: int = 0, interface: str = "127.0.0.1") -> Any:
        """Serve over HTTP on *interface*:*port*: a Deferred of the listening port."""
        from twisted.internet.endpoints import TCP4ServerEndpoint

        return TCP4ServerEndpoint(reactor, port, interface=interface).listen(Site(self.resource))

    # -- the REST calls -----------------------------------------------------------

    def _versions(self, subject: str) -> list[_Version]:
        versions = [v for v in self._subjects.get(subject, ()) if not v.deleted]
        if not versions:
            raise _Refused(404, SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")
        return versions

    def _version(self, subject: str, version: str) -> _Version:
        versions = self._versions(subject)
        if version == "latest" or version == "-1":
            return versions[-1]
        try:
            number = int(version)
        except ValueError:
            raise _Refused(
                422,
                INVALID_VERSION,
                f"The specified version '{version}' is not a valid version id.",
            ) from None
        for v in versions:
            if v.version == number:
                return v
        raise _Refused(404, VERSION_NOT_FOUND, f"Version {version} not found.")

    def _schema_from(self, body: Any) -> Schema:
        try:
            schema = Schema.from_json(body)
        except (KeyError, TypeError, ValueError) as e:
            raise _Refused(422, INVALID_SCHEMA, f"Invalid schema: {e}") from e
        for ref in schema.references:
            try:
                self._version(ref.subject, str(ref.version))
            except _Refused as e:
                raise _Refused(
                    422, INVALID_SCHEMA, f"Invalid schema reference {ref.name}: {e.message}"
                ) from None
        self._parsed(schema)
        return schema

    def _parsed(self, schema: Schema) -> Any:
        """*schema*'s JSON (Avro, JSON Schema) and its references' named types."""
        if schema.schema_type not in (AVRO, JSON):
            return None, {}
        try:
            text = schema.schema_str.strip()
            loaded = json.loads(
                text if schema.schema_type == JSON or text[:1] in "{[" else '{"type":' + text + "}"
            )
            if schema.schema_type == JSON:
                return loaded, {}
            from fastavro import parse_schema

            names: dict[str, Any] = {}
            named: dict[str, Any] = {}
            for ref in schema.references:
                referenced = self._schemas[
                    self._version(ref.subject, str(ref.version)).schema_id - 1
                ]
                ref_loaded, ref_names = self._parsed(referenced)
                names.update(ref_names)
                _avro_names(ref_loaded, "", names)
                parse_schema(ref_loaded, named_schemas=named)
            parse_schema(loaded, named_schemas=named)
            _avro_names(loaded, "", names)
            return loaded, names
        except _Refused:
            raise
        except Exception as e:
            raise _Refused(422, INVALID_SCHEMA, f"Invalid schema: {e}") from e

    def _incompatibilities(
        self, subject: str, schema: Schema, against: list[_Version]
    ) -> list[str]:
        level = self._levels.get(subject, self.compatibility)
        if level == "NONE" or schema.schema_type != AVRO:
            return []
        if not level.endswith("_TRANSITIVE"):
            against = against[-1:]
        new, new_names = self._parsed(schema)
        out = []
        for v in against:
            old_schema = self._schemas[v.schema_id - 1]
            if old_schema.schema_type != AVRO:
                continue
            old, old_names = self._parsed(old_schema)
            if level.startswith(("BACKWARD", "FULL")):
                out += _AvroResolution({**old_names, **new_names}).problems(
                    new, old, "", "", "reader"
                )
            if level.startswith(("FORWARD", "FULL")):
                out += _AvroResolution({**new_names, **old_names}).problems(
                    old, new, "", "", "reader"
                )
        return out

    def register(self, subject: str, body: Any) -> dict[str, Any]:
        schema = self._schema_from(body)
        versions = [v for v in self._subjects.get(subject, ()) if not v.deleted]
        schema_id = self._ids.get(schema)
        for v in versions:
            if v.schema_id == schema_id:
                return {"id": schema_id}
        problems = self._incompatibilities(subject, schema, versions)
        if problems:
            raise _Refused(
                409,
                INCOMPATIBLE_SCHEMA,
                "Schema being registered is incompatible with an earlier schema for subject"
                f' "{subject}", details: {problems}',
            )
        if schema_id is None:
            self._schemas.append(schema)
            schema_id = self._ids[schema] = len(self._schemas)
        every = self._subjects.setdefault(subject, [])
        every.append(_Version(max((v.version for v in every), default=0) + 1, schema_id))
        return {"id": schema_id}

    def _registered(self, subject: str, v: _Version) -> dict[str, Any]:
        return {
            "subject": subject,
            "version": v.version,
            "id": v.schema_id,
            **self._schemas[v.schema_id - 1].to_json(),
        }

    def lookup(self, subject: str, body: Any) -> dict[str, Any]:
        versions = self._versions(subject)
        schema_id = self._ids.get(self._schema_from(body))
        for v in versions:
            if v.schema_id == schema_id:
                return self._registered(subject, v)
        raise _Refused(404, SCHEMA_NOT_FOUND, "Schema not found")

    def schema_by_id(self, schema_id: str) -> dict[str, Any]:
        if not schema_id.isdigit() or not 0 < int(schema_id) <= len(self._schemas):
            raise _Refused(404, SCHEMA_NOT_FOUND, f"Schema {schema_id} not found")
        return self._schemas[int(schema_id) - 1].to_json()

    def compatibility_check(self, subject: str, version: str, body: Any) -> dict[str, Any]:
        schema = self._schema_from(body)
        against = (
            self._versions(subject) if version == "latest" else [self._version(subject, version)]
        )
        problems = self._incompatibilities(subject, schema, against)
        return {"is_compatible": not problems, "messages": problems}

    def delete(self, subject: str, permanent: bool) -> list[int]:
        versions = self._subjects.get(subject, [])
        if not versions:
            raise _Refused(404, SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")
        deleted = [v.version for v in versions if permanent or not v.deleted]
        if permanent:
            del self._subjects[subject]
        else:
            for v in versions:
                v.deleted = True
        return deleted

    def set_level(self, subject: str | None, body: Any) -> dict[str, Any]:
        level = body.get("compatibility") if isinstance(body, dict) else None
        if level not in LEVELS:
            raise _Refused(422, 42203, f"Invalid compatibility level {level!r}")
        if subject is None:
            self.compatibility = level
        else:
            self._levels[subject] = level
        return {"compatibility": level}

    def answer(self, method: str, parts: list[str], params: dict[str, str], body: Any) -> Any:
        """The answer to one REST call (raises _Refused for the registry's errors)."""
        match method, parts:
            case "GET", ["subjects"]:
                return sorted(
                    s for s in self._subjects if any(not v.deleted for v in self._subjects[s])
                )
            case "POST", ["subjects", subject, "versions"]:
                return self.register(subject, body)
            case "POST", ["subjects", subject]:
                return self.lookup(subject, body)
            case "GET", ["subjects", subject, "versions"]:
                return [v.version for v in self._versions(subject)]
            case "GET", ["subjects", subject, "versions", version]:
                return self._registered(subject, self._version(subject, version))
            case "DELETE", ["subjects", subject]:
                return self.delete(subject, params.get("permanent") == "true")
            case "GET", ["schemas", "ids", schema_id]:
                return self.schema_by_id(schema_id)
            case "POST", ["compatibility", "subjects", subject, "versions", version]:
                return self.compatibility_check(subject, version, body)
            case "GET", ["config"]:
                return {"compatibilityLevel": self.compatibility}
            case "GET", ["config", subject]:
                return {"compatibilityLevel": self._levels.get(subject, self.compatibility)}
            case "PUT", ["config"]:
                return self.set_level(None, body)
            case "PUT", ["config", subject]:
                return self.set_level(subject, body)
        raise _Refused(404, 404, f"HTTP 404 Not Found: {method} /{'/'.join(parts)}")


class _RegistryResource(Resource):
    isLeaf = True

    def __init__(self, registry: InMemorySchemaRegistry) -> None:
        super().__init__()
        self.registry = registry

    def render(self, request: Request) -> bytes:
        method = request.method.decode()
        path = request.path.decode()
        self.registry.requests.append((method, path))
        parts = [unquote(p) for p in path.strip("/").split("/") if p]
        args: dict[bytes, list[bytes]] = request.args or {}
        params = {k.decode(): v[-1].decode() for k, v in args.items()}
        request.setHeader(b"Content-Type", b"application/vnd.schemaregistry.v1+json")
        try:
            if self.registry.unavailable:
                raise _Refused(503, 50003, "Error while forwarding the request to the leader")
            raw = request.content.read() if request.content is not None else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError as e:
                raise _Refused(400, 400, f"Unrecognized JSON: {e}") from e
            answer = self.registry.answer(method, parts, params, body)
        except _Refused as e:
            request.setResponseCode(e.status)
            return json.dumps({"error_code": e.code, "message": e.message}).encode()
        return json.dumps(answer).encode()

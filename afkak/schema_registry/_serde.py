"""What the three formats' serializers and deserializers share: the subject, the
schema id (registered, looked up or the latest), the frame, and per-record errors.

afkak's ``key_serializer``/``value_serializer`` seams are synchronous callables,
so a serializer is bound to its subject and resolves its schema id once, in
:meth:`RegistrySerializer.prepare`, before the first record.  A deserializer
learns of schema ids from the records: the consumers call its ``prepare``
with a fetched batch's bytes before decoding it, and it fetches the ids it
does not know (once each, without blocking the reactor); decoding is then
synchronous.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from twisted.internet.defer import CancelledError, Deferred
from twisted.logger import Logger

from ._client import SchemaRegistryClient
from ._errors import DeserializationError, SerializationError
from ._schema import Schema
from ._strategies import SubjectNameStrategy, topic_subject_name_strategy
from ._wire import HEADER_SIZE, MAGIC, frame, schema_id_of

log = Logger()

ON_ERROR = ("deliver", "raise")


async def referenced_schemas(
    client: SchemaRegistryClient, schema: Schema
) -> list[tuple[str, Schema]]:
    """The schemas *schema* references, with their names, each after those it references."""
    found: list[tuple[str, Schema]] = []
    seen: set[tuple[str, int]] = set()

    async def visit(s: Schema) -> None:
        for ref in s.references:
            if (ref.subject, ref.version) in seen:
                continue
            seen.add((ref.subject, ref.version))
            registered = await client.get_version(ref.subject, ref.version)
            await visit(registered.schema)
            found.append((ref.name, registered.schema))

    await visit(schema)
    return found


def typed_schema(schema: str | Schema, schema_type: str) -> Schema:
    """*schema* (its text, or a :class:`Schema` of *schema_type*) as a Schema."""
    if isinstance(schema, str):
        return Schema(schema, schema_type)
    if not isinstance(schema, Schema) or schema.schema_type != schema_type:
        raise TypeError(f"schema must be a {schema_type} schema (str or Schema), not {schema!r}")
    return schema


def _check_client(client: object) -> None:
    if not isinstance(client, SchemaRegistryClient):
        raise TypeError(f"client must be a SchemaRegistryClient, not {client!r}")


class RegistrySerializer(ABC):
    """Turns an object into its schema's encoding in the Confluent wire format.

    :param client: the :class:`SchemaRegistryClient`.
    :param topic: the topic it writes to (the topic and topic-record
        strategies need it).
    :param is_key: whether it serializes keys (``<topic>-key`` subjects).
    :param subject_name_strategy: ``(topic, is_key, record_name) -> subject``.
    :param auto_register: register the schema under the subject if it is not
        there (else look it up: it must have been registered).
    :param use_latest_version: write with the subject's latest schema and id
        instead of this one's.
    :param normalize: ask the registry to normalize the schema.

    Call :meth:`prepare` (and wait for it) before giving it records.
    """

    def __init__(
        self,
        client: SchemaRegistryClient,
        schema: Schema,
        record_name: str | None,
        *,
        topic: str | None = None,
        is_key: bool = False,
        subject_name_strategy: SubjectNameStrategy = topic_subject_name_strategy,
        auto_register: bool = True,
        use_latest_version: bool = False,
        normalize: bool = False,
    ) -> None:
        _check_client(client)
        if topic is not None and not isinstance(topic, str):
            raise TypeError(f"topic must be a str or None, not {topic!r}")
        if not callable(subject_name_strategy):
            raise TypeError(
                f"subject_name_strategy must be callable, not {subject_name_strategy!r}"
            )
        self.client = client
        self.schema = schema
        self.subject = subject_name_strategy(topic, is_key, record_name)
        self._auto_register = auto_register
        self._use_latest_version = use_latest_version
        self._normalize = normalize
        self.schema_id: int | None = None
        self._header: bytes | None = None

    def prepare(self) -> Deferred[int]:
        """Register or look up the schema (or the latest version): the schema id it writes."""
        return Deferred.fromCoroutine(self._prepare())

    async def _prepare(self) -> int:
        client, subject = self.client, self.subject
        if self._use_latest_version:
            latest = await client.get_latest_version(subject)
            schema, schema_id = latest.schema, latest.schema_id
        else:
            schema = await self._registered_schema()
            if self._auto_register:
                schema_id = await client.register(subject, schema, self._normalize)
            else:
                schema_id = (await client.lookup_schema(subject, schema, self._normalize)).schema_id
        await self._use_schema(schema, await referenced_schemas(client, schema))
        self.schema_id = schema_id
        self._header = frame(schema_id, b"")
        return schema_id

    async def _registered_schema(self) -> Schema:
        """The schema to register (the Protobuf serializer registers its imports first)."""
        return self.schema

    @abstractmethod
    async def _use_schema(self, schema: Schema, references: list[tuple[str, Schema]]) -> None:
        """Write with *schema* from now on (the latest version may not be this one's)."""

    @abstractmethod
    def _encode(self, obj: Any) -> bytes:
        """*obj*'s payload (without the frame's header)."""

    def __call__(self, obj: Any) -> bytes:
        header = self._header
        if header is None:
            raise SerializationError(
                f"{self!r} has no schema id yet: wait for its prepare() before serializing"
            )
        try:
            return header + self._encode(obj)
        except SerializationError:
            raise
        except Exception as e:
            raise SerializationError(
                f"{obj!r:.200} does not match the schema of {self.subject!r}: {e}"
            ) from e

    def __repr__(self) -> str:
        return f"<{type(self).__name__} subject={self.subject!r} id={self.schema_id}>"


Decoder = Callable[[bytes], Any]
"""Decodes a whole frame (its header included) with one schema."""


def decoded(decoder: Decoder, data: bytes, schema_id: int) -> Any:
    """``decoder(data)``; a payload it cannot decode is a :class:`DeserializationError`."""
    try:
        return decoder(data)
    except Exception as e:
        raise DeserializationError(
            f"the payload does not match schema id {schema_id}: {e!r}", data, schema_id
        ) from e


class RegistryDeserializer(ABC):
    """Turns the Confluent wire format back into objects, fetching unknown schemas.

    :param client: the :class:`SchemaRegistryClient`.
    :param on_error: ``"deliver"`` (the default): a record that cannot be
        decoded (not the wire format, an unknown or unreachable schema, a
        payload not matching it) becomes a :class:`DeserializationError`
        holding its bytes, in place of the key or value, and the partition
        goes on; ``"raise"``: the error is raised (a consumer stops, as for
        any deserializer's error).
    """

    def __init__(self, client: SchemaRegistryClient, *, on_error: str = "deliver") -> None:
        _check_client(client)
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, not {on_error!r}")
        self.client = client
        self._raise = on_error == "raise"
        self._decoders: dict[int, Decoder] = {}
        self._failures: dict[int, str] = {}

    def prepare(self, data: Sequence[bytes]) -> Deferred[None] | None:
        """Fetch the schemas of *data* (records' bytes) not known yet: None if none.

        The Deferred fires once each is fetched or failed (a failure is kept
        for the records' errors, and the id asked again at the next batch);
        it never fails.
        """
        decoders = self._decoders
        unknown = set()
        for d in data:
            if len(d) >= HEADER_SIZE and d[0] == MAGIC:
                schema_id = int.from_bytes(d[1:HEADER_SIZE], "big")
                if schema_id not in decoders:
                    unknown.add(schema_id)
        if not unknown:
            return None
        return Deferred.fromCoroutine(self._fetch_all(sorted(unknown)))

    async def _fetch_all(self, schema_ids: list[int]) -> None:
        for schema_id in schema_ids:
            try:
                schema = await self.client.get_schema(schema_id)
                references = await referenced_schemas(self.client, schema)
                self._decoders[schema_id] = self._decoder(schema, references)
            except CancelledError:
                raise
            except Exception as e:
                log.warn("schema id {schema_id}: {error}", schema_id=schema_id, error=str(e))
                self._failures[schema_id] = str(e)
            else:
                self._failures.pop(schema_id, None)

    def deserialize(self, data: bytes) -> Deferred[Any]:
        """*data* decoded, its schema fetched first if need be (outside a consumer)."""
        prepared = self.prepare([data])

        async def decode() -> Any:
            if prepared is not None:
                await prepared
            return self(data)

        return Deferred.fromCoroutine(decode())

    @abstractmethod
    def _decoder(self, schema: Schema, references: list[tuple[str, Schema]]) -> Decoder:
        """How to decode frames written with *schema* (errors: it cannot be used)."""

    def __call__(self, data: bytes) -> Any:
        try:
            schema_id = schema_id_of(data)
            decoder = self._decoders.get(schema_id)
            if decoder is None:
                why = self._failures.get(
                    schema_id, "not fetched (outside a consumer, use deserialize())"
                )
                raise DeserializationError(
                    f"schema id {schema_id} is unknown: {why}", data, schema_id
                )
            return decoded(decoder, data, schema_id)
        except DeserializationError as e:
            if self._raise:
                raise
            return e

"""``--key-format`` / ``--value-format`` (``avro``, ``protobuf``, ``json-schema``) and
``--schema-registry URL``: records in the Confluent wire format, as JSON lines.

``consume`` decodes keys and values with the registry's schemas and prints them as
JSON (kafka-avro-console-consumer's output); a record that cannot be decoded is
printed as it is, with the reason on stderr.  ``produce`` reads each line as JSON
and writes it with the subject's latest schema (Protobuf: its first message), or
registers ``--value-schema FILE`` first (Avro and JSON Schema).
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

from afkak.common import Message, SourcedMessage
from afkak.schema_registry import (
    AVRO,
    JSON,
    AvroDeserializer,
    AvroSerializer,
    DeserializationError,
    JSONSchemaDeserializer,
    JSONSchemaSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
    RegistryDeserializer,
    Schema,
    SchemaRegistryClient,
    SerializationError,
    registered_message_class,
)

from ._output import USAGE, CommandError
from ._session import Session

_DESERIALIZERS: dict[str, type[RegistryDeserializer]] = {
    "avro": AvroDeserializer,
    "json-schema": JSONSchemaDeserializer,
    "protobuf": ProtobufDeserializer,
}


def registry_of(s: Session) -> SchemaRegistryClient:
    """The session's registry client (``--schema-registry``), made once."""
    if s.schema_registry is None:
        if not s.args.schema_registry:
            raise CommandError("--key-format/--value-format need --schema-registry URL", USAGE)
        s.schema_registry = SchemaRegistryClient(s.args.schema_registry, s.reactor)
    return s.schema_registry


def deserializers(s: Session) -> tuple[RegistryDeserializer | None, RegistryDeserializer | None]:
    """The key's and the value's deserializers (None: bytes as they are)."""
    a = s.args
    made = []
    for fmt in (a.key_format, a.value_format):
        made.append(None if fmt is None else _DESERIALIZERS[fmt](registry_of(s)))
    return made[0], made[1]


async def prepared(
    key: RegistryDeserializer | None, value: RegistryDeserializer | None, messages: list[Any]
) -> None:
    """Fetch the schemas *messages* need (what a consumer does before decoding a batch)."""
    for deserializer, field in ((key, 2), (value, 3)):
        if deserializer is not None:
            wait = deserializer.prepare([m.message[field] for m in messages if m.message[field]])
            if wait is not None:
                await wait


def jsonable(value: Any) -> Any:
    """A decoded key or value as JSON values (Avro bytes as Latin-1 text, as Avro's JSON
    encoding has them; Protobuf messages as their JSON mapping)."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if hasattr(value, "DESCRIPTOR") and hasattr(value, "SerializeToString"):
        from google.protobuf.json_format import MessageToDict

        return MessageToDict(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def printable(
    message: SourcedMessage, key: Any = None, value: Any = None
) -> tuple[SourcedMessage, dict[str, Any]]:
    """*message* with its key and value decoded (by *key* and *value*, unless a consumer
    did) as JSON text (to print), and as JSON values (for ``--json``); an undecodable
    one keeps its bytes and is told on stderr."""
    out: dict[str, Any] = {}
    fields: list[bytes | None] = []
    for name, deserializer, field in (
        ("key", key, message.message.key),
        ("value", value, message.message.value),
    ):
        if deserializer is not None and field is not None:
            field = deserializer(field)
        if isinstance(field, DeserializationError):
            sys.stderr.write(
                f"afkak: {message.topic}:{message.partition}@{message.offset} {name}: {field}\n"
            )
            fields.append(field.data)
            out[name] = base64.b64encode(field.data).decode()
        elif field is None or isinstance(field, bytes):
            fields.append(field)
            out[name] = None if field is None else field.decode("utf-8", "replace")
        else:
            out[name] = jsonable(field)
            fields.append(json.dumps(out[name], ensure_ascii=False).encode())
    old = message.message
    new = Message(old.magic, old.attributes, fields[0], fields[1])
    new.timestamp, new.headers = old.timestamp, old.headers
    return SourcedMessage(message.topic, message.partition, message.offset, new), out


async def serializer(s: Session, fmt: str | None, is_key: bool) -> Any:
    """The prepared serializer of keys or values, from the line's JSON (None: bytes)."""
    if fmt is None:
        return None
    a = s.args
    path = a.key_schema if is_key else a.value_schema
    registry = registry_of(s)
    subject = f"{a.topic}-{'key' if is_key else 'value'}"
    options = {"topic": a.topic, "is_key": is_key, "use_latest_version": path is None}
    if fmt == "protobuf":
        if path is not None:
            raise CommandError("--key-schema/--value-schema take Avro or JSON Schema", USAGE)
        message_class = await registered_message_class(registry, subject)
        made: Any = ProtobufSerializer(registry, message_class, **options)
        await made.prepare()
        return _ProtobufLines(made, message_class)
    schema_type = AVRO if fmt == "avro" else JSON
    if path is None:
        schema = (await registry.get_latest_version(subject)).schema
    else:
        with open(path, encoding="utf-8") as f:
            schema = Schema(f.read(), schema_type)
    if schema.schema_type != schema_type:
        raise CommandError(f"the subject's latest schema is {schema.schema_type}, not {fmt}", USAGE)
    cls = AvroSerializer if fmt == "avro" else JSONSchemaSerializer
    made = cls(registry, schema, **options)
    await made.prepare()
    return made


class _ProtobufLines:
    """A Protobuf serializer of JSON values (the message's JSON mapping)."""

    def __init__(self, serialize: Any, message_class: Any) -> None:
        self.serialize = serialize
        self.message_class = message_class

    def __call__(self, value: Any) -> bytes:
        from google.protobuf.json_format import ParseDict, ParseError

        try:
            message = ParseDict(value, self.message_class())
        except ParseError as e:
            raise SerializationError(str(e)) from e
        return bytes(self.serialize(message))


def from_json_line(serialize: Any, data: bytes) -> Any:
    """One line's key or value: bytes as they are, or JSON turned into the schema's encoding."""
    if serialize is None:
        return data
    try:
        return serialize(json.loads(data))
    except ValueError as e:
        raise CommandError(f"{data[:80]!r}: {e}", USAGE) from e

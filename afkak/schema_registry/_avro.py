"""Avro in the Confluent wire format, through fastavro.

As confluent-kafka's serializer, a schema that is just ``"bytes"`` writes the
bytes as they are (no length prefix), so that payloads are byte-identical.
"""

from __future__ import annotations

import json
from io import BytesIO
from typing import Any

from fastavro import parse_schema, schemaless_reader, schemaless_writer

from ._client import SchemaRegistryClient
from ._schema import AVRO, Schema
from ._serde import Decoder, RegistryDeserializer, RegistrySerializer, decoded, typed_schema
from ._wire import HEADER_SIZE, schema_id_of


def _loads(schema_str: str) -> Any:
    text = schema_str.strip()
    return json.loads(text if text[:1] in ("{", "[") else '{"type":' + text + "}")


def parsed_avro(schema: Schema, references: list[tuple[str, Schema]]) -> Any:
    """*schema* parsed by fastavro, its references' named types known."""
    named: dict[str, Any] = {}
    for _, ref in references:
        parse_schema(_loads(ref.schema_str), named_schemas=named)
    return parse_schema(_loads(schema.schema_str), named_schemas=named)


def _is_bytes(parsed: Any) -> bool:
    return parsed == "bytes" or (isinstance(parsed, dict) and parsed.get("type") == "bytes")


class AvroSerializer(RegistrySerializer):
    """Avro records (dicts, as fastavro takes them) in the Confluent wire format.

    :param schema: the Avro schema (JSON text, or a :class:`Schema` with
        references); the record strategies use its full name.

    The other options are :class:`RegistrySerializer`'s.
    """

    def __init__(self, client: SchemaRegistryClient, schema: str | Schema, **options: Any) -> None:
        schema = typed_schema(schema, AVRO)
        try:
            loaded = _loads(schema.schema_str)
        except ValueError as e:
            raise ValueError(f"not an Avro schema: {e}") from e
        name = loaded.get("name") if isinstance(loaded, dict) else None
        if name and "." not in name and loaded.get("namespace"):
            name = f"{loaded['namespace']}.{name}"
        super().__init__(client, schema, name, **options)
        self._parsed: Any = None
        self._raw_bytes = False

    async def _use_schema(self, schema: Schema, references: list[tuple[str, Schema]]) -> None:
        self._parsed = parsed_avro(schema, references)
        self._raw_bytes = _is_bytes(self._parsed)

    def _encode(self, obj: Any) -> bytes:
        if self._raw_bytes:
            return obj if isinstance(obj, bytes) else obj.encode()
        out = BytesIO()
        schemaless_writer(out, self._parsed, obj)
        return out.getvalue()


class AvroDeserializer(RegistryDeserializer):
    """Avro records from the Confluent wire format, as dicts.

    :param reader_schema: the schema to read as (schema evolution: records
        written with a compatible newer or older schema come out in this
        one's shape); None: each record as its writer's schema has it.

    The other options are :class:`RegistryDeserializer`'s.
    """

    def __init__(
        self,
        client: SchemaRegistryClient,
        reader_schema: str | Schema | None = None,
        **options: Any,
    ) -> None:
        super().__init__(client, **options)
        self._reader = None if reader_schema is None else typed_schema(reader_schema, AVRO)
        self._parsed_reader: Any = None

    def _decoder(self, schema: Schema, references: list[tuple[str, Schema]]) -> Decoder:
        writer = parsed_avro(schema, references)
        if self._reader is not None and self._parsed_reader is None:
            self._parsed_reader = parsed_avro(self._reader, references)
        reader = self._parsed_reader
        return frame_decoder(writer, reader)


def frame_decoder(writer: Any, reader: Any = None) -> Decoder:
    """Decodes whole frames (their header skipped, not checked) written with the
    parsed *writer* schema, as the parsed *reader* (None: as written)."""
    if _is_bytes(writer):
        return lambda data: data[HEADER_SIZE:]

    def decode(data: bytes) -> Any:
        payload = BytesIO(data)
        payload.seek(HEADER_SIZE)
        record = schemaless_reader(payload, writer, reader)
        if payload.tell() != len(data):
            raise ValueError(f"{len(data) - payload.tell()} bytes left after the record")
        return record

    return decode


def single_schema_avro_decoder(schema: str | Schema) -> Decoder:
    """Decodes frames all with *schema*, whatever their schema id: no registry, as
    Spark's ``from_avro`` reads the payload.  A record that is not the wire format or
    does not match raises :class:`DeserializationError`."""
    decode = frame_decoder(parsed_avro(typed_schema(schema, AVRO), []))
    return lambda data: decoded(decode, data, schema_id_of(data))

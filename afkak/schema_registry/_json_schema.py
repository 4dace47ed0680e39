"""JSON Schema in the Confluent wire format: the payload is the JSON text, validated
with ``jsonschema`` (references resolved by their ``$ref`` names through ``referencing``).

As confluent-kafka, the JSON is written compact (``","`` and ``":"``, no
ASCII escaping), so that payloads are byte-identical.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema.validators import validator_for
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from ._client import SchemaRegistryClient
from ._schema import JSON, Schema
from ._serde import Decoder, RegistryDeserializer, RegistrySerializer, typed_schema
from ._wire import HEADER_SIZE


def _validator(schema: Schema, references: list[tuple[str, Schema]]) -> Any:
    contents = json.loads(schema.schema_str)
    registry: Registry[Any] = Registry().with_resources(
        (name, Resource.from_contents(json.loads(ref.schema_str), DRAFT202012))
        for name, ref in references
    )
    cls = validator_for(contents)
    cls.check_schema(contents)
    return cls(contents, registry=registry)


class JSONSchemaSerializer(RegistrySerializer):
    """JSON values, validated against a JSON Schema, in the Confluent wire format.

    :param schema: the JSON Schema (text, or a :class:`Schema` with
        references); the record strategies use its ``title``.
    :param validate: check each value against the schema first.
    """

    def __init__(
        self,
        client: SchemaRegistryClient,
        schema: str | Schema,
        *,
        validate: bool = True,
        **options: Any,
    ) -> None:
        schema = typed_schema(schema, JSON)
        try:
            loaded = json.loads(schema.schema_str)
        except ValueError as e:
            raise ValueError(f"not a JSON Schema: {e}") from e
        title = loaded.get("title") if isinstance(loaded, dict) else None
        super().__init__(client, schema, title, **options)
        self._validate = validate
        self._validator: Any = None

    async def _use_schema(self, schema: Schema, references: list[tuple[str, Schema]]) -> None:
        self._validator = _validator(schema, references)

    def _encode(self, obj: Any) -> bytes:
        if self._validate:
            self._validator.validate(obj)
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


class JSONSchemaDeserializer(RegistryDeserializer):
    """JSON values from the Confluent wire format, validated against their writer's schema
    (unless *validate* is false)."""

    def __init__(
        self, client: SchemaRegistryClient, *, validate: bool = True, **options: Any
    ) -> None:
        super().__init__(client, **options)
        self._validate = validate

    def _decoder(self, schema: Schema, references: list[tuple[str, Schema]]) -> Decoder:
        validator = _validator(schema, references)
        loads = json.loads

        def decode(data: bytes) -> Any:
            value = loads(data[HEADER_SIZE:])
            if self._validate:
                validator.validate(value)
            return value

        return decode

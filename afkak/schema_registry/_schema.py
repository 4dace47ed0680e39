"""Schemas as the registry holds them: text, type, references, and where they are registered."""

from __future__ import annotations

from typing import Any

import attrs

#: The registry's schema types (``schemaType``; absent means Avro).
AVRO = "AVRO"
PROTOBUF = "PROTOBUF"
JSON = "JSON"
SCHEMA_TYPES = (AVRO, PROTOBUF, JSON)


@attrs.frozen
class SchemaReference:
    """A schema that another one imports: its *name* in the importing schema (an Avro
    full name, a ``.proto`` file name, a JSON Schema ``$ref`` URL), and where it is
    registered."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> SchemaReference:
        return cls(str(obj["name"]), str(obj["subject"]), int(obj["version"]))


def _references(value: Any) -> tuple[SchemaReference, ...]:
    return tuple(value)


def _schema_type(value: str) -> str:
    if value not in SCHEMA_TYPES:
        raise ValueError(f"schema_type must be one of {SCHEMA_TYPES}, not {value!r}")
    return value


@attrs.frozen
class Schema:
    """A schema's text (Avro or JSON Schema JSON, ``.proto`` source or a base64
    ``FileDescriptorProto``), its type, and the schemas it references."""

    schema_str: str
    schema_type: str = attrs.field(default=AVRO, converter=_schema_type)
    references: tuple[SchemaReference, ...] = attrs.field(default=(), converter=_references)

    def to_json(self) -> dict[str, Any]:
        """The request body that registers or looks up this schema."""
        body: dict[str, Any] = {"schema": self.schema_str}
        if self.schema_type != AVRO:
            body["schemaType"] = self.schema_type
        if self.references:
            body["references"] = [r.to_json() for r in self.references]
        return body

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Schema:
        return cls(
            str(obj["schema"]),
            obj.get("schemaType") or AVRO,
            tuple(SchemaReference.from_json(r) for r in obj.get("references") or ()),
        )


@attrs.frozen
class RegisteredSchema:
    """A schema as registered under a subject: its global id and version there."""

    schema_id: int
    schema: Schema
    subject: str
    version: int

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> RegisteredSchema:
        return cls(int(obj["id"]), Schema.from_json(obj), str(obj["subject"]), int(obj["version"]))

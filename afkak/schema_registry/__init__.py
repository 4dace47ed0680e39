"""Schema'd records: a Schema Registry client and Avro, Protobuf and JSON Schema
serializers and deserializers in the Confluent wire format.

Needs the ``schema-registry`` extra (treq, fastavro, protobuf, jsonschema).
The serializers plug into a producer's ``key_serializer``/``value_serializer``
(after their :meth:`~RegistrySerializer.prepare`), the deserializers into the
consumers' ``key_deserializer``/``value_deserializer``.  See
:doc:`/schema-registry`.
"""

from typing import TYPE_CHECKING

from ._client import SchemaRegistryClient
from ._errors import (
    INCOMPATIBLE_SCHEMA,
    INVALID_SCHEMA,
    INVALID_VERSION,
    SCHEMA_NOT_FOUND,
    SUBJECT_NOT_FOUND,
    VERSION_NOT_FOUND,
    DeserializationError,
    SchemaRegistryError,
    SerializationError,
)
from ._schema import AVRO, JSON, PROTOBUF, RegisteredSchema, Schema, SchemaReference
from ._serde import RegistryDeserializer, RegistrySerializer
from ._strategies import (
    SubjectNameStrategy,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
    topic_subject_name_strategy,
)
from ._wire import frame, schema_id_of

if TYPE_CHECKING:
    from ._avro import AvroDeserializer, AvroSerializer, single_schema_avro_decoder
    from ._json_schema import JSONSchemaDeserializer, JSONSchemaSerializer
    from ._protobuf import ProtobufDeserializer, ProtobufSerializer, registered_message_class

__all__ = [
    "AVRO",
    "INCOMPATIBLE_SCHEMA",
    "INVALID_SCHEMA",
    "INVALID_VERSION",
    "JSON",
    "PROTOBUF",
    "SCHEMA_NOT_FOUND",
    "SUBJECT_NOT_FOUND",
    "VERSION_NOT_FOUND",
    "AvroDeserializer",
    "AvroSerializer",
    "DeserializationError",
    "JSONSchemaDeserializer",
    "JSONSchemaSerializer",
    "ProtobufDeserializer",
    "ProtobufSerializer",
    "RegisteredSchema",
    "RegistryDeserializer",
    "RegistrySerializer",
    "Schema",
    "SchemaReference",
    "SchemaRegistryClient",
    "SchemaRegistryError",
    "SerializationError",
    "SubjectNameStrategy",
    "frame",
    "record_subject_name_strategy",
    "registered_message_class",
    "schema_id_of",
    "single_schema_avro_decoder",
    "topic_record_subject_name_strategy",
    "topic_subject_name_strategy",
]


def __getattr__(name: str) -> object:
    """The format modules import their libraries only when used."""
    modules = {
        "AvroSerializer": "_avro",
        "AvroDeserializer": "_avro",
        "single_schema_avro_decoder": "_avro",
        "JSONSchemaSerializer": "_json_schema",
        "JSONSchemaDeserializer": "_json_schema",
        "ProtobufSerializer": "_protobuf",
        "ProtobufDeserializer": "_protobuf",
        "registered_message_class": "_protobuf",
    }
    if name not in modules:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{modules[name]}"), name)

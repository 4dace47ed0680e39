"""Protobuf in the Confluent wire format: message indexes, then the message.

As confluent-kafka's serializer, the schema registered is the message's file
as a base64 ``FileDescriptorProto``, and each file it imports (but Google's
well-known types) is registered first under its file name and referenced.
A deserializer given the message class decodes with it; without one it
builds the classes from the registered descriptors (``.proto`` text schemas,
as Java clients register them, need the class).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import google.protobuf.message
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FileDescriptor

from ._client import SchemaRegistryClient
from ._schema import PROTOBUF, Schema, SchemaReference
from ._serde import Decoder, RegistryDeserializer, RegistrySerializer, referenced_schemas
from ._wire import HEADER_SIZE, message_indexes, read_message_indexes


def _is_well_known(file_name: str) -> bool:
    return file_name.startswith("google/protobuf/")


def file_schema(file: FileDescriptor, references: tuple[SchemaReference, ...] = ()) -> Schema:
    """*file* as the registry holds it (a base64 ``FileDescriptorProto``)."""
    text = base64.standard_b64encode(file.serialized_pb).decode("ascii")
    return Schema(text, PROTOBUF, references)


def index_path(descriptor: Descriptor) -> list[int]:
    """Where *descriptor* is among its file's messages (nested ones through their parents)."""
    path = []
    while descriptor.containing_type is not None:
        parent = descriptor.containing_type
        path.append(parent.nested_types.index(descriptor))
        descriptor = parent
    path.append(list(descriptor.file.message_types_by_name.values()).index(descriptor))
    return path[::-1]


class ProtobufSerializer(RegistrySerializer):
    """Protobuf messages of *message_type* (a generated class) in the Confluent wire format.

    The record strategies use the message's full name; imports are
    registered (or looked up) under their file names first.
    """

    def __init__(
        self,
        client: SchemaRegistryClient,
        message_type: type[google.protobuf.message.Message],
        **options: Any,
    ) -> None:
        if not (
            isinstance(message_type, type)
            and issubclass(message_type, google.protobuf.message.Message)
        ):
            raise TypeError(f"message_type must be a protobuf Message class, not {message_type!r}")
        descriptor = message_type.DESCRIPTOR
        super().__init__(client, file_schema(descriptor.file), descriptor.full_name, **options)
        self._message_type = message_type
        self._indexes = message_indexes(index_path(descriptor))

    async def _registered_schema(self) -> Schema:
        return await self._with_imports(self._message_type.DESCRIPTOR.file)

    async def _with_imports(self, file: FileDescriptor) -> Schema:
        references = []
        for dependency in file.dependencies:
            if _is_well_known(dependency.name):
                continue
            schema = await self._with_imports(dependency)
            if self._auto_register:
                await self.client.register(dependency.name, schema, self._normalize)
            registered = await self.client.lookup_schema(dependency.name, schema, self._normalize)
            references.append(SchemaReference(dependency.name, dependency.name, registered.version))
        return file_schema(file, tuple(references))

    async def _use_schema(self, schema: Schema, references: list[tuple[str, Schema]]) -> None:
        """The class writes the message: only its indexes depend on the schema."""

    def _encode(self, obj: Any) -> bytes:
        if not isinstance(obj, self._message_type):
            raise TypeError(f"expected a {self._message_type.__name__}, not {type(obj).__name__}")
        return self._indexes + obj.SerializeToString()


def _file_proto(schema: Schema) -> descriptor_pb2.FileDescriptorProto:
    try:
        raw = base64.b64decode(schema.schema_str, validate=True)
    except binascii.Error as e:
        raise ValueError(
            "a .proto text schema: give the deserializer the message class (message_type)"
        ) from e
    return descriptor_pb2.FileDescriptorProto.FromString(raw)


def _file_of(schema: Schema, references: list[tuple[str, Schema]]) -> FileDescriptor:
    pool = descriptor_pool.DescriptorPool()
    needed = {d for _, ref in references for d in _file_proto(ref).dependency}
    needed.update(_file_proto(schema).dependency)
    for name in sorted(n for n in needed if _is_well_known(n)):
        proto = descriptor_pb2.FileDescriptorProto()
        descriptor_pool.Default().FindFileByName(name).CopyToProto(proto)
        pool.Add(proto)
    for _, ref in references:
        pool.Add(_file_proto(ref))
    proto = _file_proto(schema)
    pool.Add(proto)
    return pool.FindFileByName(proto.name)


async def registered_message_class(
    client: SchemaRegistryClient, subject: str
) -> type[google.protobuf.message.Message]:
    """The first message of *subject*'s latest schema, as a class built from its
    registered descriptor (to write records without the generated code)."""
    latest = await client.get_latest_version(subject)
    file = _file_of(latest.schema, await referenced_schemas(client, latest.schema))
    first = next(iter(file.message_types_by_name.values()), None)
    if first is None:
        raise ValueError(f"the latest schema of {subject!r} has no message")
    return message_factory.GetMessageClass(first)


class ProtobufDeserializer(RegistryDeserializer):
    """Protobuf messages from the Confluent wire format.

    :param message_type: the generated class to decode as (as confluent-kafka
        requires); None: the class is built from the registered descriptor
        and the record's message indexes.
    """

    def __init__(
        self,
        client: SchemaRegistryClient,
        message_type: type[google.protobuf.message.Message] | None = None,
        **options: Any,
    ) -> None:
        if message_type is not None and not (
            isinstance(message_type, type)
            and issubclass(message_type, google.protobuf.message.Message)
        ):
            raise TypeError(
                f"message_type must be a protobuf Message class or None, not {message_type!r}"
            )
        super().__init__(client, **options)
        self._message_type = message_type

    def _decoder(self, schema: Schema, references: list[tuple[str, Schema]]) -> Decoder:
        message_type = self._message_type
        if message_type is not None:
            fixed = message_type

            def decode_as(data: bytes) -> Any:
                _, offset = read_message_indexes(data, HEADER_SIZE)
                return fixed.FromString(data[offset:])

            return decode_as
        file = _file_of(schema, references)
        classes: dict[tuple[int, ...], type[google.protobuf.message.Message]] = {}

        def message_class(indexes: list[int]) -> type[google.protobuf.message.Message]:
            key = tuple(indexes)
            found = classes.get(key)
            if found is None:
                descriptor = list(file.message_types_by_name.values())[indexes[0]]
                for i in indexes[1:]:
                    descriptor = descriptor.nested_types[i]
                found = classes[key] = message_factory.GetMessageClass(descriptor)
            return found

        def decode(data: bytes) -> Any:
            indexes, offset = read_message_indexes(data, HEADER_SIZE)
            return message_class(indexes).FromString(data[offset:])

        return decode

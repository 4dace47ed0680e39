"""Decoding a column of Avro records in the Confluent wire format to a struct column.

Spark's ``from_avro`` reads bare Avro: on Confluent frames it needs the
5-byte header cut off, and it reads every record with the one schema it is
given.  :func:`from_confluent_avro` takes the frames as they are and gives
the same rows; with a Schema Registry it reads each record with its writer's
schema (fetched by the frame's id) into the given one, as a consumer with a
reader schema does.  It runs as an Arrow UDF: one registry look-up per batch
for the ids not seen yet, through the worker's reactor (:mod:`._bridge`).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from pyspark.sql.column import Column
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from afkak.spark import _bridge

MODES = ("FAILFAST", "PERMISSIVE")
_PRIMITIVES: dict[str, DataType] = {
    "null": NullType(),
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "bytes": BinaryType(),
    "string": StringType(),
}
_LOGICAL: dict[tuple[str, str], DataType] = {
    ("int", "date"): DateType(),
    ("long", "timestamp-millis"): TimestampType(),
    ("long", "timestamp-micros"): TimestampType(),
    ("long", "local-timestamp-millis"): TimestampNTZType(),
    ("long", "local-timestamp-micros"): TimestampNTZType(),
}


def spark_type(schema: Any) -> DataType:
    """The Spark type of the Avro *schema* (parsed JSON), as Spark's ``from_avro`` makes it.

    Unions of several non-null types and decimals are not supported (ValueError).
    """
    return _spark_type(schema, "", {})[0]


def _spark_type(schema: Any, namespace: str, named: dict[str, DataType]) -> tuple[DataType, bool]:
    """*schema*'s Spark type, and whether it may be null."""
    if isinstance(schema, str):
        return _named_type(schema, namespace, named)
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        if len(branches) != 1:
            raise ValueError(f"unions of several non-null types are not supported: {schema!r}")
        return _spark_type(branches[0], namespace, named)[0], len(branches) < len(schema)
    kind = schema.get("type")
    logical = _LOGICAL.get((kind, schema.get("logicalType")))
    if logical is not None:
        return logical, False
    if schema.get("logicalType") == "decimal":
        raise ValueError("Avro decimals are not supported")
    if kind in ("record", "enum", "fixed"):
        return _defined_type(schema, kind, namespace, named), False
    if kind == "array":
        items, nullable = _spark_type(schema["items"], namespace, named)
        return ArrayType(items, nullable), False
    if kind == "map":
        values, nullable = _spark_type(schema["values"], namespace, named)
        return MapType(StringType(), values, nullable), False
    return _spark_type(kind, namespace, named)


def _named_type(name: str, namespace: str, named: dict[str, DataType]) -> tuple[DataType, bool]:
    """A primitive type, or a type defined earlier, by *name*."""
    if name in _PRIMITIVES:
        return _PRIMITIVES[name], name == "null"
    full = name if "." in name or not namespace else f"{namespace}.{name}"
    for candidate in (full, name):
        if candidate in named:
            return named[candidate], False
    raise ValueError(f"unknown Avro type {name!r}")


def _defined_type(schema: Any, kind: str, namespace: str, named: dict[str, DataType]) -> DataType:
    """A record's, enum's or fixed's type, remembered under its full name."""
    name = schema["name"]
    space = schema.get("namespace", namespace) if "." not in name else name.rpartition(".")[0]
    full = name if "." in name or not space else f"{space}.{name}"
    if kind == "record":
        fields = []
        for field in schema["fields"]:
            ftype, nullable = _spark_type(field["type"], space, named)
            fields.append(StructField(field["name"], ftype, nullable))
        named[full] = StructType(fields)
    else:
        named[full] = StringType() if kind == "enum" else BinaryType()
    return named[full]


class _Decode:
    """The UDF: Confluent frames in, the struct's Arrow array out.  Pickled to the
    workers with its settings only; each task makes its decoder on first use."""

    def __init__(self, schema: str, registry_url: str | None, mode: str, timeout: float) -> None:
        self.schema = schema
        self.registry_url = registry_url
        self.failfast = mode == "FAILFAST"
        self.timeout = timeout
        self.arrow_type = to_arrow_type(spark_type(json.loads(schema)), timezone="UTC")
        self._deserializer: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_deserializer": None}

    def _decoder(self) -> Any:
        from afkak.schema_registry import (
            AvroDeserializer,
            SchemaRegistryClient,
            single_schema_avro_decoder,
        )

        url = self.registry_url
        if self._deserializer is None:
            if url is None:
                self._deserializer = single_schema_avro_decoder(self.schema)
            else:

                def make() -> Any:
                    from twisted.internet import reactor

                    client = SchemaRegistryClient(url, reactor, timeout=self.timeout)
                    return AvroDeserializer(client, self.schema, on_error="raise")

                self._deserializer = _bridge.call(self.timeout, make)
        return self._deserializer

    def __call__(self, values: pa.Array) -> pa.Array:
        from afkak.schema_registry import DeserializationError

        data = values.to_pylist()
        decode = self._decoder()
        if self.registry_url is not None:
            # Wait for the schemas of ids not seen yet: per batch, not per record;
            # the client's three attempts and their backoff fit in four timeouts.
            _bridge.call(self.timeout * 4, decode.prepare, [d for d in data if d is not None])
        out: list[Any] = []
        for d in data:
            if d is None:
                out.append(None)
                continue
            try:
                out.append(decode(d))
            except DeserializationError:
                if self.failfast:
                    raise
                out.append(None)
        return pa.array(out, type=self.arrow_type)


def from_confluent_avro(
    column: Column | str,
    schema: str,
    schema_registry_url: str | None = None,
    *,
    mode: str = "FAILFAST",
    timeout: float = 30.0,
) -> Column:
    """*column* (binary: Avro records in the Confluent wire format) as a struct column.

    :param schema: the Avro schema (JSON) of the result, as ``from_avro``'s
        ``jsonFormatSchema``.
    :param schema_registry_url: without it, every record is read with
        *schema*, as ``from_avro(expr("substring(value, 6)"), schema)``;
        with it, each record is read with its writer's schema (fetched once
        per id and task) into *schema*.
    :param mode: ``FAILFAST`` (the default, as ``from_avro``'s): a record
        that cannot be decoded fails the query; ``PERMISSIVE``: it is null.
    :param timeout: seconds a registry request may take.
    """
    from pyspark.sql.functions import arrow_udf

    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if not isinstance(schema, str):
        raise TypeError(f"schema must be the Avro schema's JSON text, not {schema!r}")
    decode = _Decode(schema, schema_registry_url, mode, timeout)

    def decode_batch(values: pa.Array) -> pa.Array:  # its hints make it a scalar Arrow UDF
        return decode(values)

    untyped: Any = arrow_udf  # PySpark's stubs lack the form that reads the hints
    udf: Any = untyped(decode_batch, spark_type(json.loads(schema)))
    result: Column = udf(column)
    return result

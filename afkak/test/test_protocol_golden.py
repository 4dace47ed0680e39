"""Golden tests: our codecs against kafka-python 3.0's protocol classes.

For random values (drawn from our schema metadata) at each (message, version):
our bytes decode with kafka-python to the same field values, and a
kafka-python object built from the same values encodes to bytes that decode
with ours to the original object (and are byte-identical to ours).
"""

from __future__ import annotations

import unittest
from typing import Any

from hypothesis import HealthCheck, given, settings

from afkak.protocol import ZERO_UUID, messages
from afkak.protocol._message import Message, Struct
from afkak.test.helpers import FULL_PROPERTY_RUNS, property_examples
from afkak.test.test_protocol_roundtrip import struct_strategy

try:
    import kafka.protocol.admin as kp_admin
    import kafka.protocol.consumer as kp_consumer
    import kafka.protocol.metadata as kp_metadata
    import kafka.protocol.producer as kp_producer
    from kafka.protocol.data_container import DataContainer

    THEIR_MODULES = (kp_metadata, kp_consumer, kp_producer, kp_admin)
except ImportError:  # pragma: no cover - kafka-python is a test dependency
    THEIR_MODULES = ()

CASES = [
    ("ApiVersionsRequest", [0, 3]),
    ("ApiVersionsResponse", [0, 3]),
    ("MetadataRequest", [1, 9, 12]),
    ("MetadataResponse", [1, 9, 12]),
    ("ProduceRequest", [3, 9]),
    ("ProduceResponse", [3, 9]),
    ("FetchRequest", [4, 12]),
    ("FetchResponse", [4, 12]),
    ("ListOffsetsRequest", [1, 6]),
    ("ListOffsetsResponse", [1, 6]),
    ("OffsetCommitRequest", [2, 8]),
    ("OffsetCommitResponse", [2, 8]),
    ("OffsetFetchRequest", [1, 6]),
    ("OffsetFetchResponse", [1, 6]),
    ("FindCoordinatorRequest", [1, 3, 4]),
    ("FindCoordinatorResponse", [1, 3, 4]),
    ("JoinGroupRequest", [2, 6]),
    ("JoinGroupResponse", [2, 6]),
    ("SyncGroupRequest", [2, 4]),
    ("SyncGroupResponse", [2, 4]),
]


def their_class(name: str) -> Any:
    for mod in THEIR_MODULES:
        if hasattr(mod, name):
            return getattr(mod, name)
    return None


def _bits_to_int(bits: set[int] | None) -> int:
    """kafka-python's "bitfield" (a set of bit numbers, None for -2**31) as our int32."""
    if bits is None:
        return -(2**31)
    n = sum(1 << b for b in bits)
    return n - 2**32 if n >= 2**31 else n


def _int_to_bits(n: int) -> set[int] | None:
    bits = {b for b in range(32) if (n & 0xFFFFFFFF) >> b & 1}
    return None if bits == {31} else bits


def _our_name(specs: dict[str, Any], fld: Any) -> str:
    """Our schema name for a kafka-python field (they rename *AuthorizedOperations)."""
    name = fld._json["name"]
    if name == "authorized_operations":
        (name,) = [n for n in specs if n.endswith("AuthorizedOperations")]
    return name


def _data_class(fld: Any) -> Any:
    """kafka-python creates nested value classes lazily; force creation."""
    if fld.data_class is None:
        fld.set_data_class(type(fld.type_str, (DataContainer,), {"_struct": fld}))
    return fld.data_class


def _norm(value: Any) -> Any:
    """kafka-python's spelling of a value, normalised to ours (zero UUID as None)."""
    if value is None:
        return None
    if value == ZERO_UUID:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return value


def ours_to_dict(obj: Struct, version: int) -> dict[str, Any]:
    """Fields present at ``version``, keyed by schema name, structs as dicts."""
    out: dict[str, Any] = {}
    for spec in obj.SCHEMA:
        if not spec.present(version):
            continue
        value = getattr(obj, spec.name)
        if spec.type == "struct" and value is not None:
            value = ours_to_dict(value, version)
        elif spec.type == "[]struct" and value is not None:
            value = [ours_to_dict(v, version) for v in value]
        elif spec.type.startswith("[]") and value is not None:
            value = [_norm(v) for v in value]
        else:
            value = _norm(value)
        out[spec.schema_name] = value
    return out


def theirs_to_dict(struct_field: Any, obj: Any, version: int, ours: type[Struct]) -> dict:
    """Like :func:`ours_to_dict`, for a kafka-python object (``ours`` names the fields)."""
    specs = {spec.schema_name: spec for spec in ours.SCHEMA}
    out: dict[str, Any] = {}
    for fld in struct_field._fields:
        if not fld.for_version_q(version):
            continue
        name = _our_name(specs, fld)
        value = getattr(obj, fld.name)
        if fld.type_str == "bitfield":
            value = _bits_to_int(value)
        elif fld.is_struct() and value is None and not specs[name].nullable(version):
            # kafka-python leaves an absent tagged struct as None; it is the default
            value = ours_to_dict(specs[name].struct(), version)
        elif fld.is_struct() and value is not None:
            value = theirs_to_dict(fld, value, version, specs[name].struct)
        elif fld.is_struct_array() and value is not None:
            value = [theirs_to_dict(fld, v, version, specs[name].struct) for v in value]
        elif isinstance(value, list):
            value = [_norm(v) for v in value]
        else:
            value = _norm(value)
        out[name] = value
    return out


def to_theirs(cls: Any, struct_field: Any, obj: Struct, version: int, top: bool) -> Any:
    """Build a kafka-python object holding the same values as ours."""
    specs = {spec.schema_name: spec for spec in obj.SCHEMA}
    kwargs: dict[str, Any] = {}
    for fld in struct_field._fields:
        if not fld.for_version_q(version):
            continue
        spec = specs[_our_name(specs, fld)]
        value = getattr(obj, spec.name)
        if spec.tagged(version) and spec.is_default(value):
            continue  # kafka-python writes every tagged field it is given
        if fld.type_str == "bitfield":
            value = _int_to_bits(value)
        elif fld.is_struct() and value is not None:
            value = to_theirs(_data_class(fld), fld, value, version, False)
        elif fld.is_struct_array() and value is not None:
            value = [to_theirs(_data_class(fld), fld, v, version, False) for v in value]
        kwargs[fld.name] = value
    return cls(version=version, **kwargs) if top else cls(**kwargs)


_SETTINGS = settings(
    max_examples=property_examples(25),
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@unittest.skipIf(not THEIR_MODULES, "kafka-python is not installed")
class GoldenTests(unittest.TestCase):
    def check(self, name: str, version: int, examples: int = 25) -> None:
        examples = property_examples(examples)
        ours_cls: type[Message] = getattr(messages, name)
        theirs_cls = their_class(name)

        @settings(_SETTINGS, max_examples=examples)
        @given(struct_strategy(ours_cls, version))
        def compare(obj: Message) -> None:
            if name == "ApiVersionsResponse":
                # kafka-python (like Kafka's client) reads an error response as v0
                obj.error_code = 0
            data = obj.encode(version)
            theirs = theirs_cls.decode(data, version=version)
            self.assertEqual(
                theirs_to_dict(theirs_cls._struct, theirs, version, ours_cls),
                ours_to_dict(obj, version),
            )
            their_data = bytes(
                to_theirs(theirs_cls, theirs_cls._struct, obj, version, True).encode(version)
            )
            self.assertEqual(ours_cls.decode(their_data, version), obj)
            self.assertEqual(their_data, data)

        compare()

    def test_every_message_kafka_python_knows(self) -> None:
        """A couple of examples for every (message, version) both libraries support (the
        "quick" hypothesis profile: for the lowest and highest version of each)."""
        checked = 0
        for name in sorted(messages._MODULES):
            theirs_cls = their_class(name)
            if theirs_cls is None or theirs_cls.json["type"] not in ("request", "response"):
                continue  # their ConsumerProtocol* classes wrap a version prefix
            ours_cls = getattr(messages, name)
            low = max(ours_cls.MIN_VERSION, theirs_cls.valid_versions[0])
            high = min(ours_cls.MAX_VERSION, theirs_cls.valid_versions[1])
            versions = range(low, high + 1) if FULL_PROPERTY_RUNS else sorted({low, high})
            for version in versions:
                self.check(name, version, examples=2)
                checked += 1
        self.assertGreater(checked, 400 if FULL_PROPERTY_RUNS else 100)


def _make_test(name: str, version: int) -> Any:
    def test(self: GoldenTests) -> None:
        self.check(name, version)

    return test


for _name, _versions in CASES:
    for _v in _versions:
        setattr(GoldenTests, f"test_{_name}_v{_v}", _make_test(_name, _v))

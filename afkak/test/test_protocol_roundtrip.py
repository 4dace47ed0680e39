"""Hypothesis round trips of every generated message class at every valid version.

Values are drawn from strategies built from each class's ``SCHEMA`` metadata:
only fields present in the version get values, ``None`` only where nullable.
"""

from __future__ import annotations

import unittest
from typing import Any
from uuid import UUID

from hypothesis import HealthCheck, given, settings, strategies as st

from afkak.protocol import ZERO_UUID, messages
from afkak.protocol._message import FieldSpec, Message, Struct
from afkak.protocol.messages import FetchResponse as F, MetadataResponse as M
from afkak.test.helpers import FULL_PROPERTY_RUNS, UTF8_CHARACTERS, property_examples

_INTS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def primitive(ftype: str) -> st.SearchStrategy[Any]:
    if ftype in _INTS:
        lo, hi = _INTS[ftype]
        return st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]) | st.integers(lo, hi)
    if ftype == "bool":
        return st.booleans()
    if ftype == "float64":
        return st.floats(allow_nan=False)
    if ftype == "string":
        return st.text(UTF8_CHARACTERS, max_size=8)
    if ftype in ("bytes", "records"):
        return st.binary(max_size=8)
    if ftype == "uuid":
        return st.just(ZERO_UUID) | st.uuids().map(lambda u: UUID(int=u.int))
    raise AssertionError(ftype)


def field_strategy(spec: FieldSpec, version: int) -> st.SearchStrategy[Any]:
    if spec.type == "struct":
        s = struct_strategy(spec.struct, version)  # type: ignore[arg-type]
    elif spec.type == "[]struct":
        s = st.lists(struct_strategy(spec.struct, version), max_size=2)  # type: ignore[arg-type]
    elif spec.type.startswith("[]"):
        s = st.lists(primitive(spec.type[2:]), max_size=3)
    else:
        s = primitive(spec.type)
    return st.none() | s if spec.nullable(version) else s


def struct_strategy(cls: type[Struct], version: int) -> st.SearchStrategy[Any]:
    """Instances of ``cls`` valid at ``version`` (absent fields keep defaults)."""
    kwargs = {
        spec.name: st.deferred(lambda spec=spec: field_strategy(spec, version))
        for spec in cls.SCHEMA
        if spec.present(version)
    }
    return st.builds(cls, **kwargs)


def all_message_classes() -> list[type[Message]]:
    return [getattr(messages, name) for name in sorted(messages._MODULES)]


#: Per class and version: 12 under the "ci" profile, fewer in the quick suite.
_SETTINGS = settings(
    max_examples=property_examples(12),
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
#: The quick suite's examples at a version between a class's lowest and highest (which
#: get ``_SETTINGS``'s): every version still round-trips, and drawing examples was
#: nine-tenths of this module's time, a seventh of the whole quick suite's.
_BETWEEN = _SETTINGS if FULL_PROPERTY_RUNS else settings(_SETTINGS, max_examples=2)


class RoundTripTests(unittest.TestCase):
    """Every class at every version: decode(encode(x)) == x, and re-encoding is stable."""

    def check_class(self, cls: type[Message]) -> None:
        for version in range(cls.MIN_VERSION, cls.MAX_VERSION + 1):
            edge = version in (cls.MIN_VERSION, cls.MAX_VERSION)
            self.check_version(cls, version, _SETTINGS if edge else _BETWEEN)

    def check_version(self, cls: type[Message], version: int, examples: settings) -> None:
        @examples
        @given(struct_strategy(cls, version))
        def roundtrip(obj: Message) -> None:
            data = obj.encode(version)
            back = cls.decode(data, version)
            self.assertEqual(back, obj)
            self.assertEqual(back.encode(version), data)

        roundtrip()

    def test_covers_every_schema(self) -> None:
        self.assertEqual(len(messages.REQUESTS), len(messages.RESPONSES))
        self.assertEqual(set(messages.REQUESTS), set(messages.RESPONSES))
        self.assertGreaterEqual(len(messages.REQUESTS), 50)
        for key, cls in messages.REQUESTS.items():
            self.assertEqual(cls.API_KEY, key)
            self.assertEqual(messages.RESPONSES[key].API_NAME, cls.API_NAME)


def _make_test(name: str) -> Any:
    def test(self: RoundTripTests) -> None:
        self.check_class(getattr(messages, name))

    test.__name__ = f"test_{messages._MODULES[name]}"
    return test


for _name in messages._MODULES:
    setattr(RoundTripTests, f"test_{messages._MODULES[_name]}", _make_test(_name))


class LargeValueTests(unittest.TestCase):
    """Lengths past the inline fast paths (>= 127 items, multi-byte varints)."""

    def test_long_arrays_and_strings(self) -> None:
        partition = M.MetadataResponsePartition(
            partition_index=1, replica_nodes=list(range(300)), isr_nodes=[], offline_replicas=[7]
        )
        msg = M(
            cluster_id="c" * 200,
            topics=[
                M.MetadataResponseTopic(name=f"t{i}" * 70, partitions=[partition])
                for i in range(150)
            ],
        )
        for version in (8, 9, 12):
            data = msg.encode(version)
            self.assertEqual(M.decode(data, version), msg)
            self.assertEqual(M.decode(memoryview(bytearray(data)), version), msg)

    def test_long_bytes(self) -> None:
        part = F.PartitionData(
            partition_index=3, aborted_transactions=None, records=bytes(range(256)) * 300
        )
        msg = F(responses=[F.FetchableTopicResponse(topic="t", partitions=[part] * 130)])
        for version in (11, 12):
            self.assertEqual(F.decode(msg.encode(version), version), msg)

"""Types of the compiled twins in ``_crecords.pyx`` (built only when Cython is there)."""

from collections.abc import Callable, Sequence
from typing import Any

from afkak.records.record import Record, TimestampType

_BytesLike = bytes | bytearray | memoryview

def decode_records(
    data: _BytesLike, pos: int, count: int, base_offset: int, base_ts: int, tt: TimestampType
) -> list[Record] | None: ...
def wrap_records(
    records: list[Record],
    magic: int,
    prefix: tuple[Any, ...],
    cls: type[tuple[Any, ...]],
    message_cls: type[tuple[Any, ...]],
) -> list[Any]: ...
def encode_records(
    values: Sequence[_BytesLike | None],
    keys: Sequence[_BytesLike | None] | None,
    timestamps: Sequence[int] | None,
    base: int,
    headers: Sequence[Sequence[tuple[str, _BytesLike | None]]] | None = None,
) -> bytes | None: ...
def record_runs(
    partitions: Sequence[int],
    keys: Sequence[_BytesLike | None] | None,
    values: Sequence[_BytesLike | None],
    headers: Sequence[Sequence[tuple[str, _BytesLike | None]]] | None,
    timestamps: Sequence[int | None] | None,
    default_timestamp: int,
    limit: int,
) -> tuple[
    int, int, list[tuple[int, list[Any] | None, list[Any], list[Any] | None, list[int], int]]
]: ...
def untrack(obj: object) -> None: ...
def track_all(objs: list[Any]) -> None: ...
def reachable(objs: list[Any], cls: type, attr: str) -> list[int]: ...

class RecordColumns:
    rows: int
    key_nulls: int
    value_nulls: int
    key_size: int
    value_size: int
    offsets: bytearray
    timestamps: bytearray
    types: bytearray
    key_valid: bytearray
    key_offsets: bytearray
    key_data: bytearray
    value_valid: bytearray
    value_offsets: bytearray
    value_data: bytearray
    headers: bool
    header_count: int
    header_key_size: int
    header_value_size: int
    header_value_nulls: int
    header_offsets: bytearray
    header_key_offsets: bytearray
    header_key_data: bytearray
    header_value_valid: bytearray
    header_value_offsets: bytearray
    header_value_data: bytearray
    def __init__(
        self, rows_hint: int = 1024, bytes_hint: int = 65536, headers: bool = False
    ) -> None: ...
    def add(
        self,
        data: _BytesLike,
        count: int,
        base_offset: int,
        base_ts: int,
        tt: int,
        fixed_ts: int | None,
        min_offset: int,
        end_offset: int,
    ) -> bool: ...

def murmur2(data: _BytesLike, seed: int = ...) -> int: ...
def key_partitions(
    keys: Sequence[Any], partitions: Sequence[int], other: Callable[[Any], int]
) -> list[int]: ...
def plain_headers(headers: list[Any]) -> bool: ...

"""Types of the compiled twins in ``_crecords.pyx`` (built only when Cython is there)."""

from collections.abc import Sequence
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
) -> bytes | None: ...
def untrack(obj: object) -> None: ...
def track_all(objs: list[Any]) -> None: ...
def reachable(objs: list[Any], cls: type, attr: str) -> list[int]: ...

"""Base classes and schema metadata for the generated message classes.

The generated modules in :mod:`afkak.protocol.messages` hold straight-line
per-version encoder/decoder functions; this module holds what is shared: the
``encode``/``decode`` entry points that look those functions up, the
:class:`FieldSpec` metadata describing every field, and the slow validation
path that runs only after the fast encoder failed, to name the bad field.
"""

from __future__ import annotations

import builtins
import struct
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar
from uuid import UUID

import attrs

from afkak._errors import DecodeError, EncodeError

ALL = (0, 0x7FFF)
"""Version range meaning "every version" (the schema's ``0+``)."""


def in_range(vrange: tuple[int, int] | None, version: int) -> bool:
    return vrange is not None and vrange[0] <= version <= vrange[1]


@attrs.frozen
class FieldSpec:
    """One field of a schema struct, as data.

    ``type`` is a primitive name (``int32``, ``string``, ``uuid``, ...), ``struct``,
    ``[]<primitive>`` or ``[]struct``; ``struct`` is the value class for the last two.
    Version ranges are inclusive ``(low, high)`` pairs or ``None`` for "never".
    ``default`` is the schema default (``None`` for a ``"null"`` default); for
    arrays it is ``()`` (empty) or ``None``, for ``struct`` fields ``True`` (a
    default-constructed instance) or ``None``.  ``flexible`` is the versions in
    which this field uses compact encodings (the request header's ClientId never does).
    """

    name: str
    schema_name: str
    type: str
    versions: tuple[int, int]
    nullable_versions: tuple[int, int] | None = None
    tag: int | None = None
    tagged_versions: tuple[int, int] | None = None
    ignorable: bool = False
    default: Any = None
    struct: builtins.type[Struct] | None = None
    flexible: tuple[int, int] | None = ALL

    def present(self, version: int) -> bool:
        return in_range(self.versions, version)

    def nullable(self, version: int) -> bool:
        return in_range(self.nullable_versions, version)

    def tagged(self, version: int) -> bool:
        return in_range(self.tagged_versions, version)

    def is_default(self, value: Any) -> bool:
        if self.type.startswith("[]") and self.default is not None:
            return value is not None and len(value) == 0
        return bool(value == self.default_value())

    def default_value(self) -> Any:
        if self.type.startswith("[]"):
            return None if self.default is None else []
        if self.type == "struct" and self.default is not None:
            return self.struct()  # type: ignore[misc]
        return self.default


_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def _type_problem(ftype: str, value: Any, flexible: bool) -> str | None:
    """Why ``value`` cannot be encoded as primitive ``ftype`` (None if it can)."""
    if ftype in _INT_RANGES:
        if not isinstance(value, int):
            return f"expected int, got {type(value).__name__}"
        lo, hi = _INT_RANGES[ftype]
        if not lo <= value <= hi:
            return f"{value} out of range for {ftype}"
    elif ftype == "bool":
        if not isinstance(value, bool):
            return f"expected bool, got {type(value).__name__}"
    elif ftype == "float64":
        if not isinstance(value, (int, float)):
            return f"expected float, got {type(value).__name__}"
    elif ftype == "string":
        if not isinstance(value, str):
            return f"expected str, got {type(value).__name__}"
        try:
            n = len(value.encode())
        except UnicodeEncodeError as e:
            return f"not encodable as UTF-8: {e}"
        if not flexible and n > 0x7FFF:
            return f"string of {n} bytes is too long"
    elif ftype in ("bytes", "records"):
        if not isinstance(value, (bytes, bytearray, memoryview)):
            return f"expected bytes, got {type(value).__name__}"
    elif ftype == "uuid":
        if not isinstance(value, UUID):
            return f"expected uuid.UUID, got {type(value).__name__}"
    return None


class Struct:
    """Base of every generated value class (top-level and nested)."""

    __slots__ = ()
    SCHEMA: ClassVar[tuple[FieldSpec, ...]] = ()

    def _validate(self, version: int, top: str) -> None:
        """Raise EncodeError naming the first field that cannot be encoded."""
        for spec in self.SCHEMA:
            value = getattr(self, spec.name)
            where = f"{top}: {type(self).__name__}.{spec.name}"
            at = f" at version {version}"
            if not spec.present(version):
                if not spec.ignorable and not spec.is_default(value):
                    raise EncodeError(
                        f"{where}{at}: field not supported by this version, but set to {value!r}"
                    )
                continue
            if value is None:
                if spec.nullable(version):
                    continue
                raise EncodeError(f"{where}{at}: None in a non-nullable field")
            flexible = in_range(spec.flexible, version)
            if spec.type == "struct":
                if not isinstance(value, spec.struct):  # type: ignore[arg-type]
                    raise EncodeError(f"{where}{at}: expected {spec.struct.__name__}")  # type: ignore[union-attr]
                value._validate(version, top)
            elif spec.type.startswith("[]"):
                if not isinstance(value, (list, tuple)):
                    raise EncodeError(f"{where}{at}: expected a list, got {type(value).__name__}")
                for i, item in enumerate(value):
                    if spec.struct is not None:
                        if not isinstance(item, spec.struct):
                            raise EncodeError(f"{where}[{i}]{at}: expected {spec.struct.__name__}")
                        item._validate(version, top)
                        continue
                    problem = (
                        "None in a list"
                        if item is None
                        else _type_problem(spec.type[2:], item, flexible)
                    )
                    if problem:
                        raise EncodeError(f"{where}[{i}]{at}: {problem}")
            else:
                problem = _type_problem(spec.type, value, flexible)
                if problem:
                    raise EncodeError(f"{where}{at}: {problem}")


_SIZE = struct.Struct(">i")
_M = TypeVar("_M", bound="Message")
_ENCODE_FAILURES = (struct.error, TypeError, AttributeError, ValueError, OverflowError)


class Message(Struct):
    """Base of the generated top-level classes: requests, responses, headers, data."""

    __slots__ = ()
    API_KEY: ClassVar[int | None] = None
    API_NAME: ClassVar[str] = ""
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 0
    FLEXIBLE_VERSION: ClassVar[int | None] = None
    _ENCODERS: ClassVar[dict[int, Callable[[Callable[[bytes], Any], Any], None]]] = {}
    _DECODERS: ClassVar[dict[int, Callable[[memoryview, int], tuple[Any, int]]]] = {}

    def encode(self, version: int) -> bytes:
        """Encode the message body (no header, no size prefix) at ``version``."""
        return self._encode(version, [], False)

    def _encode(self, version: int, parts: list[bytes], framed: bool) -> bytes:
        """Append the body to ``parts`` and join them into one buffer.

        With ``framed``, ``parts[0]`` is a placeholder replaced by the int32 size
        of the rest, so that a whole frame is built with a single copy.
        """
        try:
            encoder = self._ENCODERS[version]
        except KeyError:
            raise EncodeError(
                f"{type(self).__name__} has no version {version} "
                f"(valid: {self.MIN_VERSION}-{self.MAX_VERSION})"
            ) from None
        try:
            encoder(parts.append, self)
            if framed:
                parts[0] = _SIZE.pack(sum(map(len, parts)))
            return b"".join(parts)  # a str in a bytes field fails only here
        except AbsentField as e:
            cls_name, field, value = e.args
            raise EncodeError(
                f"{type(self).__name__}: {cls_name}.{field} is not supported at version "
                f"{version} and is not ignorable, but is set to {value!r}"
            ) from None
        except _ENCODE_FAILURES as e:
            self._validate(version, type(self).__name__)
            raise EncodeError(
                f"{type(self).__name__} at version {version} cannot be encoded: {e}"
            ) from e

    @classmethod
    def decode(cls: type[_M], data: bytes | bytearray | memoryview, version: int) -> _M:
        """Decode a whole message body; trailing bytes are an error."""
        mv = memoryview(data)
        obj, pos = cls._decode_from(mv, 0, version)
        if pos != len(mv):
            raise DecodeError(
                f"{len(mv) - pos} trailing bytes after {cls.__name__}",
                api_key=cls.API_KEY,
                version=version,
                offset=pos,
            )
        return obj

    @classmethod
    def _decode_from(cls: type[_M], mv: memoryview, pos: int, version: int) -> tuple[_M, int]:
        """Decode one message starting at ``pos``; return it and the end offset."""
        try:
            decoder = cls._DECODERS[version]
        except KeyError:
            raise DecodeError(
                f"{cls.__name__} has no version {version}", api_key=cls.API_KEY, version=version
            ) from None
        try:
            return decoder(mv, pos)
        except DecodeError as e:
            raise DecodeError(
                f"{cls.__name__}: {e.reason}", api_key=cls.API_KEY, version=version, offset=e.offset
            ) from None


class AbsentField(Exception):
    """Raised by generated encoders: a non-ignorable field the version lacks is set.

    Internal: :meth:`Message.encode` turns it into an EncodeError naming the version
    (the encoders do not know it, so that versions with one layout share one).
    """

    def __init__(self, obj: Struct, name: str) -> None:
        super().__init__(type(obj).__name__, name, getattr(obj, name))

"""Client quotas: DescribeClientQuotas (48) and AlterClientQuotas (49), at any broker
(which forwards the change to the controller, KRaft), as ``kafka-configs --entity-type
users|clients|ips`` reads and sets them."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from afkak.client._interlayer import VersionedCall
from afkak.common import BrokerResponseError
from afkak.protocol.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest

from ._types import ItemResult, _error_or_none, left_out

#: The entity types Kafka's quotas apply to.
ENTITY_TYPES = frozenset({"user", "client-id", "ip"})


def _parts(value: Mapping[str, str | None]) -> tuple[tuple[str, str | None], ...]:
    return tuple(sorted(dict(value).items()))


@attrs.frozen
class QuotaEntity:
    """Who a quota applies to: ``{"user": "alice", "client-id": "app"}``, a name of
    ``None`` being that type's default entity (``<default>`` in Kafka's tools)."""

    parts: tuple[tuple[str, str | None], ...] = attrs.field(converter=_parts)

    @property
    def as_dict(self) -> dict[str, str | None]:
        return dict(self.parts)


class QuotaMatch(enum.IntEnum):
    """How a filter component matches an entity's name of its type."""

    EXACT = 0
    DEFAULT = 1
    SPECIFIED = 2  # any name, not the default


@attrs.frozen
class QuotaFilter:
    """One component of a quota lookup: an entity type and how its name must match."""

    entity_type: str
    match_type: QuotaMatch = QuotaMatch.SPECIFIED
    match: str | None = None

    @classmethod
    def exact(cls, entity_type: str, name: str) -> QuotaFilter:
        return cls(entity_type, QuotaMatch.EXACT, name)

    @classmethod
    def default(cls, entity_type: str) -> QuotaFilter:
        return cls(entity_type, QuotaMatch.DEFAULT)


class DescribeQuotasCall(VersionedCall):
    request_class = DescribeClientQuotasRequest

    def __init__(self, filters: Sequence[QuotaFilter], strict: bool) -> None:
        self.filters = filters
        self.strict = strict

    def build(self, version: int) -> Any:
        R = DescribeClientQuotasRequest
        return R(
            components=[
                R.ComponentData(f.entity_type, int(f.match_type), f.match) for f in self.filters
            ],
            strict=self.strict,
        )

    def parse(self, response: Any) -> list[Any]:
        BrokerResponseError.raise_for_errno(
            response.error_code, *([response.error_message] if response.error_message else [])
        )
        return [
            {
                QuotaEntity({e.entity_type: e.entity_name for e in entry.entity}): {
                    v.key: v.value for v in entry.values
                }
                for entry in response.entries or ()
            }
        ]


class AlterQuotasCall(VersionedCall):
    """Set (a float) or remove (``None``) quota values, per entity."""

    request_class = AlterClientQuotasRequest

    def __init__(
        self, changes: Mapping[QuotaEntity, Mapping[str, float | None]], validate_only: bool
    ) -> None:
        self.changes = changes
        self.validate_only = validate_only

    def build(self, version: int) -> Any:
        R = AlterClientQuotasRequest
        return R(
            entries=[
                R.EntryData(
                    [R.EntityData(t, n) for t, n in entity.parts],
                    [
                        R.OpData(key, 0.0 if value is None else value, value is None)
                        for key, value in ops.items()
                    ],
                )
                for entity, ops in self.changes.items()
            ],
            validate_only=self.validate_only,
        )

    def parse(self, response: Any) -> list[Any]:
        answered = {
            QuotaEntity({e.entity_type: e.entity_name for e in entry.entity}): ItemResult(
                _error_or_none(entry.error_code, entry.error_message)
            )
            for entry in response.entries
        }
        return [{e: answered.get(e, ItemResult(left_out(e))) for e in self.changes}]

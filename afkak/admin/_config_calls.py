"""DescribeConfigs (32), IncrementalAlterConfigs (44) and ListConfigResources (74).

A broker's own configs must be asked of that broker; topic configs of any.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from afkak.client._interlayer import VersionedCall
from afkak.protocol.messages import (
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    ListConfigResourcesRequest,
)

from ._types import (
    ConfigChange,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
    ItemResult,
    ResourceConfig,
    _error_or_none,
    left_out,
)


def _source(value: int) -> ConfigSource:
    try:
        return ConfigSource(value)
    except ValueError:
        return ConfigSource.UNKNOWN


class DescribeConfigsCall(VersionedCall):
    request_class = DescribeConfigsRequest

    def __init__(
        self,
        resources: Sequence[ConfigResource],
        keys: Sequence[str] | None,
        include_synonyms: bool,
    ) -> None:
        self.resources = resources
        self.keys = None if keys is None else list(keys)
        self.include_synonyms = include_synonyms

    def build(self, version: int) -> Any:
        R = DescribeConfigsRequest
        return R(
            resources=[
                R.DescribeConfigsResource(int(r.type), r.name, self.keys) for r in self.resources
            ],
            include_synonyms=self.include_synonyms,
        )

    def failed(self, error: Any) -> dict[ConfigResource, ResourceConfig]:
        return {r: ResourceConfig(r, {}, error) for r in self.resources}

    def parse(self, response: Any) -> list[Any]:
        results = self.failed(left_out("the resource"))
        for r in response.results:
            resource = ConfigResource(r.resource_type, r.resource_name)
            entries = {
                c.name: ConfigEntry(
                    name=c.name,
                    value=c.value,
                    source=_source(c.config_source),
                    read_only=c.read_only,
                    sensitive=c.is_sensitive,
                    synonyms=tuple(
                        ConfigSynonym(s.name, s.value, _source(s.source)) for s in c.synonyms or ()
                    ),
                )
                for c in r.configs or ()
            }
            results[resource] = ResourceConfig(
                resource, entries, _error_or_none(r.error_code, r.error_message)
            )
        return [results]


class IncrementalAlterConfigsCall(VersionedCall):
    request_class = IncrementalAlterConfigsRequest

    def __init__(
        self, changes: Mapping[ConfigResource, Sequence[ConfigChange]], validate_only: bool
    ) -> None:
        self.changes = changes
        self.validate_only = validate_only

    def build(self, version: int) -> Any:
        R = IncrementalAlterConfigsRequest
        return R(
            resources=[
                R.AlterConfigsResource(
                    int(resource.type),
                    resource.name,
                    [R.AlterableConfig(c.name, int(c.op), c.value) for c in changes],
                )
                for resource, changes in self.changes.items()
            ],
            validate_only=self.validate_only,
        )

    def failed(self, error: Any) -> dict[ConfigResource, ItemResult]:
        return {r: ItemResult(error) for r in self.changes}

    def parse(self, response: Any) -> list[Any]:
        return [
            {
                **self.failed(left_out("the resource")),
                **{
                    ConfigResource(r.resource_type, r.resource_name): ItemResult(
                        _error_or_none(r.error_code, r.error_message)
                    )
                    for r in response.responses
                },
            }
        ]


class ListConfigResourcesCall(VersionedCall):
    """KIP-1142's ListConfigResources (Kafka 4.1+); its v0 was KIP-714's
    ListClientMetricsResources (Kafka 3.7+), which lists client metrics resources only."""

    request_class = ListConfigResourcesRequest

    def __init__(self, types: Sequence[ConfigResourceType]) -> None:
        self.types = list(types)
        if set(self.types) - {ConfigResourceType.CLIENT_METRICS}:
            self.min_version = 1

    def build(self, version: int) -> Any:
        # v0 asks for client metrics by sending no types at all.
        types = [] if version == 0 else [int(t) for t in self.types]
        return ListConfigResourcesRequest(resource_types=types)

    def parse(self, response: Any) -> list[Any]:
        error = _error_or_none(response.error_code)
        if error is not None:
            raise error
        return [
            [ConfigResource(r.resource_type, r.resource_name) for r in response.config_resources]
        ]

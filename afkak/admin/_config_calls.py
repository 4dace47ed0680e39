"""DescribeConfigs (32), IncrementalAlterConfigs (44), AlterConfigs (33, its fallback
for Kafka before 2.3) and ListConfigResources (74).

A broker's own configs must be asked of that broker; topic configs of any.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from afkak.client._interlayer import VersionedCall
from afkak.common import InvalidRequest
from afkak.protocol.messages import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    ListConfigResourcesRequest,
)

from ._types import (
    AlterOp,
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
        R = self.request_class
        return R(
            resources=[
                R.AlterConfigsResource(int(r.type), r.name, self.entries(r)) for r in self.changes
            ],
            validate_only=self.validate_only,
        )

    def entries(self, resource: ConfigResource) -> list[Any]:
        """The request's ``AlterableConfig`` entries for ``resource``."""
        R = IncrementalAlterConfigsRequest
        return [R.AlterableConfig(c.name, int(c.op), c.value) for c in self.changes[resource]]

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


class AlterConfigsCall(IncrementalAlterConfigsCall):
    """AlterConfigs: each resource's whole set of dynamic configs (those left out go
    back to their defaults), what Kafka before 2.3 offers instead of
    IncrementalAlterConfigs; its answer has the same shape."""

    request_class = AlterConfigsRequest  # type: ignore[assignment]  # the same answer shape

    def __init__(
        self, configs: Mapping[ConfigResource, Mapping[str, str | None]], validate_only: bool
    ) -> None:
        super().__init__({}, validate_only)
        self.configs = configs
        self.changes = {r: () for r in configs}  # the resources, for failed() and parse()

    def entries(self, resource: ConfigResource) -> list[Any]:
        R = AlterConfigsRequest
        return [R.AlterableConfig(name, value) for name, value in self.configs[resource].items()]


#: The source of the configs AlterConfigs replaces, by resource type (a broker's own,
#: or the cluster-wide default broker configs for the broker named "").
_DYNAMIC_SOURCES = {
    (ConfigResourceType.TOPIC, False): ConfigSource.DYNAMIC_TOPIC_CONFIG,
    (ConfigResourceType.BROKER, False): ConfigSource.DYNAMIC_BROKER_CONFIG,
    (ConfigResourceType.BROKER, True): ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
}


def replaced_configs(
    described: ResourceConfig, changes: Sequence[ConfigChange]
) -> dict[str, str | None]:
    """The whole set of dynamic configs that AlterConfigs must send for ``changes``
    to a resource described as ``described``, as Kafka's ``kafka-configs`` did before
    IncrementalAlterConfigs: its dynamic configs with the changes applied (APPEND and
    SUBTRACT to the current value's comma-separated items).

    :raises InvalidRequest: a resource type AlterConfigs cannot set, or a dynamic
        config whose value DescribeConfigs hides (a password) and would be lost.
    """
    configs = _dynamic_configs(described)
    for change in changes:
        if change.op == AlterOp.SET:
            configs[change.name] = change.value
        elif change.op == AlterOp.DELETE:
            configs.pop(change.name, None)
        else:
            configs[change.name] = _list_changed(described, change)
    return configs


def _dynamic_configs(described: ResourceConfig) -> dict[str, str | None]:
    """The resource's dynamic configs, all of them with their values (see above)."""
    resource = described.resource
    source = _DYNAMIC_SOURCES.get((resource.type, resource.name == ""))
    if source is None:
        raise InvalidRequest(f"the broker has no IncrementalAlterConfigs to alter {resource}")
    dynamic = {n: e for n, e in described.entries.items() if e.source == source}
    hidden = sorted(n for n, e in dynamic.items() if e.sensitive and e.value is None)
    if hidden:
        raise InvalidRequest(
            f"the broker has no IncrementalAlterConfigs, and AlterConfigs would reset "
            f"{resource}'s sensitive configs {hidden}"
        )
    return {n: e.value for n, e in dynamic.items()}


def _list_changed(described: ResourceConfig, change: ConfigChange) -> str:
    """The current value's comma-separated items, with *change*'s APPENDed or SUBTRACTed."""
    entry = described.entries.get(change.name)
    items = [v for v in ((entry.value if entry else None) or "").split(",") if v]
    values = [v for v in (change.value or "").split(",") if v]
    if change.op == AlterOp.APPEND:
        items += [v for v in values if v not in items]
    else:
        items = [v for v in items if v not in values]
    return ",".join(items)


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

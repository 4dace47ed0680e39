"""The data source's options, parsed once on the driver into picklable values.

Option names follow Spark's Kafka connector (``subscribe``, ``startingOffsets``,
``kafka.bootstrap.servers``...).  Spark lower-cases option keys, so matching is
case-insensitive; values arrive as strings.  Client settings take Kafka's
names, with or without the ``kafka.`` prefix; an unknown ``kafka.*`` option is
an error rather than silently ignored (think ``kafka.security.protocol``).
Options of Spark's Kafka connector that afkak does not implement are refused
by name (:data:`UNSUPPORTED`), so that a query switched from ``format("kafka")``
never silently reads something else.  Other unknown options are ignored, as
Spark adds its own (``path``, ``checkpointLocation``...).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from afkak._retry import (
    RECONNECT_BACKOFF_MAX_MS,
    RECONNECT_BACKOFF_MS,
    RETRY_BACKOFF_MAX_MS,
    RETRY_BACKOFF_MS,
    RetryPolicy,
    backoff_policy,
)
from afkak.codec import CODEC_NAMES
from afkak.common import OFFSET_EARLIEST, OFFSET_LATEST, TopicAndPartition

from ._security import SECURITY_SETTINGS, SecurityConfig, SecurityOptionError, security_config

#: A whole-topic offset spec (-2 earliest, -1 latest) or an offset per partition,
#: where -2 and -1 mean the same per partition, as in Spark's JSON.
OffsetSpec = int | Mapping[TopicAndPartition, int]


@attrs.frozen
class ByTimestamp:
    """Offsets looked up by record time: each partition's first record at or after it.

    *timestamps* is one time for every partition (``startingTimestamp``) or one per
    partition (``startingOffsetsByTimestamp``), in milliseconds.  Where no record is
    that late, *strategy* ``"error"`` fails the query and ``"latest"`` takes the
    latest offset (ending offsets always do).
    """

    timestamps: int | Mapping[TopicAndPartition, int]
    strategy: str = "error"


#: A read's start or end: offsets, or record times to look offsets up by.
Bound = OffsetSpec | ByTimestamp

_CODECS = {name: codec for codec, name in CODEC_NAMES.items()}
_ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1}

#: Client settings, by Kafka's names: security's, and those :func:`client_config` maps.
_CLIENT_SETTINGS = frozenset(
    {
        "bootstrap.servers",
        "client.id",
        "request.timeout.ms",
        "metadata.max.age.ms",
        "default.api.timeout.ms",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "retry.backoff.ms",
        "retry.backoff.max.ms",
        "metadata.recovery.strategy",
        "metadata.recovery.rebootstrap.trigger.ms",
        "enable.metrics.push",
        *SECURITY_SETTINGS,
    }
)
#: Consumer settings of kafka-clients that reads map (:func:`parse_read_options`).
_READ_SETTINGS = frozenset(
    {
        "max.partition.fetch.bytes",
        "fetch.max.bytes",
        "fetch.min.bytes",
        "fetch.max.wait.ms",
        "max.poll.records",
        "isolation.level",
    }
)
#: kafka-clients settings the source sets itself, refused as Spark's connector refuses
#: them, with what to do instead.
_OWN_SETTINGS = {
    "group.id": "reads use no consumer group: Spark's checkpoint keeps their offsets",
    "auto.offset.reset": "set the source option startingOffsets instead",
    "enable.auto.commit": "the source commits no offsets: Spark's checkpoint keeps them",
    "key.deserializer": "keys are read as bytes: cast or decode the key column",
    "value.deserializer": "values are read as bytes: cast or decode the value column",
    "key.serializer": "keys are written from a binary or string key column",
    "value.serializer": "values are written from a binary or string value column",
    "interceptor.classes": "Java interceptors do not run in afkak",
}
#: Options of reads only; a write given one is refused (others are Spark's own).
_READ_OPTIONS = frozenset(
    {
        "subscribe",
        "subscribepattern",
        "assign",
        "startingoffsets",
        "endingoffsets",
        "maxoffsetspertrigger",
        "minoffsetspertrigger",
        "maxtriggerdelay",
        "minpartitions",
        "maxrecordsperpartition",
        "failondataloss",
        "includeheaders",
        "kafkaconsumer.polltimeoutms",
    }
)

#: Options of Spark's Kafka source not implemented here, lower-cased; given one, a
#: query fails with an error naming it.
UNSUPPORTED = frozenset(
    {
        "groupidprefix",
        "fetchoffset.numretries",
        "fetchoffset.retryintervalms",
    }
)


class OptionError(ValueError):
    """An option is missing, unknown or malformed."""


#: Spark's spelling of the source's options (Spark hands them over lower-cased).
_SPELLING = {
    name.lower(): name
    for name in (
        "subscribe subscribePattern assign startingOffsets endingOffsets maxOffsetsPerTrigger"
        " minOffsetsPerTrigger maxTriggerDelay minPartitions maxRecordsPerPartition"
        " failOnDataLoss includeHeaders kafkaConsumer.pollTimeoutMs startingTimestamp"
        " startingOffsetsByTimestamp startingOffsetsByTimestampStrategy endingTimestamp"
        " endingOffsetsByTimestamp groupIdPrefix fetchOffset.numRetries"
        " fetchOffset.retryIntervalMs topic exactlyOnce transactionalIdPrefix"
    ).split()
}


def spelled(name: str) -> str:
    """*name* as the user wrote it: Spark's spelling of a source option, else as given."""
    return _SPELLING.get(name.lower(), name)


@attrs.frozen
class ClientConfig:
    """How to build a worker's KafkaClient; hashable, the key of the per-process cache."""

    bootstrap: str
    client_id: str = "afkak-spark"
    request_timeout_ms: int = 30000
    metadata_max_age_ms: int = 300000
    security: SecurityConfig = SecurityConfig()
    #: ``default.api.timeout.ms``: how long a lookup or produce call may take, retries
    #: included (None: four request timeouts).
    api_timeout_ms: int | None = None
    #: ``reconnect.backoff.ms`` / ``.max.ms``: the client's reconnect backoff.
    reconnect_backoff_ms: int = RECONNECT_BACKOFF_MS
    reconnect_backoff_max_ms: int = RECONNECT_BACKOFF_MAX_MS
    #: ``retry.backoff.ms`` / ``.max.ms``: between retries of a lookup, fetch or produce.
    retry_backoff_ms: int = RETRY_BACKOFF_MS
    retry_backoff_max_ms: int = RETRY_BACKOFF_MAX_MS
    metadata_recovery_strategy: str = "rebootstrap"
    metadata_recovery_rebootstrap_trigger_ms: int = 300_000
    enable_metrics_push: bool = True

    def retry_policy(self, uniform: Callable[[float, float], float]) -> RetryPolicy:
        """The backoff between retries (``retry.backoff.ms`` growing to ``.max.ms``),
        jittered by *uniform* (the client's random source)."""
        return backoff_policy(
            self.retry_backoff_ms / 1000, self.retry_backoff_max_ms / 1000, uniform=uniform
        )

    def reconnect_policy(self, uniform: Callable[[float, float], float]) -> RetryPolicy:
        """The client's reconnect backoff (``reconnect.backoff.ms`` growing to ``.max.ms``)."""
        return backoff_policy(
            self.reconnect_backoff_ms / 1000, self.reconnect_backoff_max_ms / 1000, uniform=uniform
        )


@attrs.frozen
class ReadOptions:
    """A read's parsed options (batch or streaming)."""

    client: ClientConfig
    #: Subscribed topics; None when partitions are assigned or a pattern is subscribed.
    topics: tuple[str, ...] | None
    #: Assigned partitions; None when topics are subscribed.
    assigned: tuple[TopicAndPartition, ...] | None
    starting: Bound
    ending: Bound
    #: subscribePattern: a regular expression that whole topic names match.
    pattern: str | None = None
    max_offsets_per_trigger: int | None = None
    #: Streaming: wait for this many new records before a micro-batch, unless
    #: ``max_trigger_delay_ms`` passed since the last one (Spark's options).
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    min_partitions: int | None = None
    #: Split offset ranges so that no task reads more records than this.
    max_records_per_partition: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    max_partition_fetch_bytes: int = 8 * 1024 * 1024
    #: ``fetch.max.bytes``: a fetch asks for at most this (and the partition's limit).
    fetch_max_bytes: int = 50 * 1024 * 1024
    #: ``fetch.min.bytes``: the broker holds a fetch until it has this much (or the wait).
    fetch_min_bytes: int = 1
    fetch_max_wait_ms: int = 500
    #: ``max.poll.records``: rows in one Arrow batch handed to Spark, at most.
    max_poll_records: int | None = None
    #: Fetch and ListOffsets isolation level: 0 read_uncommitted, 1 read_committed.
    isolation_level: int = 0
    #: Seconds one fetch may take before the task fails (Spark's pollTimeoutMs).
    poll_timeout: float = 120.0


@attrs.frozen
class WriteOptions:
    """A write's parsed options; unset producer settings keep the Producer's defaults."""

    client: ClientConfig
    #: Topic of rows without a ``topic`` column (or with a null one).
    topic: str | None = None
    #: The Producer's keyword arguments from kafka-clients settings, sorted by name.
    producer: tuple[tuple[str, Any], ...] = ()
    #: ``exactlyOnce``: each task of a micro-batch writes in one Kafka transaction (see
    #: :mod:`._transactional`).
    exactly_once: bool = False
    #: ``transactionalIdPrefix``: the start of each task's transactional id.
    transactional_id_prefix: str = "afkak-spark-"

    @property
    def chunk_bytes(self) -> int:
        """Bytes of values sent as one batch when rows go by key (batch.size, else 256 KiB)."""
        return int(dict(self.producer).get("batch_size", 256 * 1024))

    def producer_settings(self) -> dict[str, Any]:
        """Keyword arguments of :class:`afkak.producer.Producer`: uncompressed unless
        ``compression.type`` says otherwise, and the retry backoff of the client options."""
        client = self.client
        settings: dict[str, Any] = {"codec": 0}
        if (client.retry_backoff_ms, client.retry_backoff_max_ms) != (
            RETRY_BACKOFF_MS,
            RETRY_BACKOFF_MAX_MS,
        ):
            settings["retry_interval"] = client.retry_backoff_ms / 1000
            settings["retry_backoff_max_ms"] = client.retry_backoff_max_ms
        settings.update(self.producer)
        return settings


def _split_settings(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Lower-cased (other options, kafka-clients settings), the ``kafka.`` prefix dropped."""
    source: dict[str, str] = {}
    settings: dict[str, str] = {}
    for key, value in options.items():
        name = key.lower()
        bare = name.removeprefix("kafka.")
        if bare in KAFKA_SETTINGS:
            settings[bare] = value
        elif bare in _OWN_SETTINGS:
            raise OptionError(f"Kafka option {key!r} is not supported: {_OWN_SETTINGS[bare]}")
        elif name.startswith("kafka."):
            raise OptionError(
                f"unsupported client option {key!r}; afkak's Spark source supports "
                + ", ".join(f"kafka.{s}" for s in sorted(KAFKA_SETTINGS))
            )
        elif name in UNSUPPORTED:
            raise OptionError(
                f"option {spelled(name)!r} of Spark's Kafka connector is not supported by afkak"
            )
        else:
            source[name] = value
    return source, settings


def _int(name: str, value: str, minimum: int) -> int:
    try:
        number = int(value)
    except ValueError:
        raise OptionError(f"{name} must be an integer, not {value!r}") from None
    if number < minimum:
        raise OptionError(f"{name} must be at least {minimum}, not {number}")
    return number


#: Spark's time-string units (``JavaUtils.timeStringAsMs``), in milliseconds.
_UNITS_MS = {
    "us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000,
}  # fmt: skip
_DURATION = re.compile(r"\s*(\d+)\s*([a-z]*)\s*")


def _duration_ms(name: str, value: str) -> int:
    """A Spark duration ("15m", "30s", "500ms"; a bare number is milliseconds)."""
    match = _DURATION.fullmatch(value.lower())
    if match is None or match.group(2) not in (*_UNITS_MS, ""):
        raise OptionError(f"{name} must be a duration such as 30s or 15m, not {value!r}")
    return int(int(match.group(1)) * _UNITS_MS.get(match.group(2), 1))


def _bool(name: str, value: str) -> bool:
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise OptionError(f"{name} must be true or false, not {value!r}")
    return text == "true"


def _json(name: str, value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError as e:
        raise OptionError(f"{name} is not valid JSON: {e}") from None


#: Numeric client settings: the ClientConfig field, and the least value allowed.
_CLIENT_NUMBERS = {
    "request.timeout.ms": ("request_timeout_ms", 1),
    "metadata.max.age.ms": ("metadata_max_age_ms", 1),
    "default.api.timeout.ms": ("api_timeout_ms", 1),
    "reconnect.backoff.ms": ("reconnect_backoff_ms", 0),
    "reconnect.backoff.max.ms": ("reconnect_backoff_max_ms", 0),
    "retry.backoff.ms": ("retry_backoff_ms", 0),
    "retry.backoff.max.ms": ("retry_backoff_max_ms", 0),
    "metadata.recovery.rebootstrap.trigger.ms": ("metadata_recovery_rebootstrap_trigger_ms", 0),
}


def client_config(settings: Mapping[str, str]) -> ClientConfig:
    """The client part of the options; ``bootstrap.servers`` is required."""
    bootstrap = settings.get("bootstrap.servers", "").strip()
    if not bootstrap:
        raise OptionError("option kafka.bootstrap.servers (or bootstrap.servers) is required")
    try:
        config = ClientConfig(bootstrap, security=security_config(settings))
    except SecurityOptionError as e:
        raise OptionError(str(e)) from None
    changes: dict[str, Any] = {}
    if "client.id" in settings:
        changes["client_id"] = settings["client.id"]
    for name, (field, minimum) in _CLIENT_NUMBERS.items():
        if name in settings:
            changes[field] = _int(name, settings[name], minimum)
    if "metadata.recovery.strategy" in settings:
        strategy = settings["metadata.recovery.strategy"].strip().lower()
        if strategy not in ("none", "rebootstrap"):
            raise OptionError(
                f"metadata.recovery.strategy must be none or rebootstrap, not {strategy!r}"
            )
        changes["metadata_recovery_strategy"] = strategy
    if "enable.metrics.push" in settings:
        changes["enable_metrics_push"] = _bool(
            "enable.metrics.push", settings["enable.metrics.push"]
        )
    return attrs.evolve(config, **changes)


def parse_offsets(name: str, value: str, *, allowed: tuple[int, ...]) -> OffsetSpec:
    """``earliest``, ``latest`` or Spark's JSON ``{"topic": {"0": 23, "1": -1}}``.

    *allowed* lists the whole-topic specs accepted (batch reads refuse
    ``latest`` as a start and ``earliest`` as an end), which also bounds the
    per-partition -2/-1 values.
    """
    text = value.strip()
    words = {"earliest": OFFSET_EARLIEST, "latest": OFFSET_LATEST}
    if text.lower() in words:
        spec = words[text.lower()]
        if spec not in allowed:
            raise OptionError(f"{name} cannot be {text!r} here")
        return spec
    parsed = _json(name, text)
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError(f"{name} must be earliest, latest or a JSON object, not {value!r}")
    offsets: dict[TopicAndPartition, int] = {}
    for topic, partitions in parsed.items():
        if not isinstance(partitions, dict):
            raise OptionError(f"{name}: offsets of topic {topic!r} must be a JSON object")
        for partition, offset in partitions.items():
            try:
                key = TopicAndPartition(topic, int(partition))
            except ValueError:
                raise OptionError(f"{name}: {partition!r} is not a partition number") from None
            if isinstance(offset, bool) or not isinstance(offset, int):
                raise OptionError(f"{name}: offset of {topic}/{partition} must be an integer")
            if offset < 0 and offset not in allowed:
                raise OptionError(f"{name}: offset {offset} of {topic}/{partition} not allowed")
            offsets[key] = offset
    return offsets


def _parse_assign(value: str) -> tuple[TopicAndPartition, ...]:
    parsed = _json("assign", value)
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError(f'assign must be JSON like {{"topic": [0, 1]}}, not {value!r}')
    assigned: list[TopicAndPartition] = []
    for topic, partitions in parsed.items():
        if not isinstance(partitions, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in partitions
        ):
            raise OptionError(f"assign: partitions of {topic!r} must be a list of numbers")
        assigned.extend(TopicAndPartition(topic, p) for p in partitions)
    return tuple(sorted(set(assigned)))


def _by_timestamp(source: Mapping[str, str], side: str, strategy: str) -> ByTimestamp | None:
    """``<side>Timestamp``, else ``<side>OffsetsByTimestamp`` (Spark's order), else None."""
    if f"{side}timestamp" in source:
        return ByTimestamp(_int(f"{side}Timestamp", source[f"{side}timestamp"], 0), strategy)
    if f"{side}offsetsbytimestamp" in source:
        name = f"{side}OffsetsByTimestamp"
        stamps = parse_offsets(name, source[f"{side}offsetsbytimestamp"], allowed=())
        if isinstance(stamps, int):
            raise OptionError(f"{name} must be JSON timestamps per partition")
        return ByTimestamp(stamps, strategy)
    return None


#: Numeric consumer settings: the ReadOptions field, and the least value allowed.
_READ_NUMBERS = {
    "max.partition.fetch.bytes": ("max_partition_fetch_bytes", 1),
    "fetch.max.bytes": ("fetch_max_bytes", 1),
    "fetch.min.bytes": ("fetch_min_bytes", 0),
    "fetch.max.wait.ms": ("fetch_max_wait_ms", 0),
    "max.poll.records": ("max_poll_records", 1),
}


def parse_read_options(options: Mapping[str, str], *, streaming: bool | None) -> ReadOptions:
    """Parse a batch (``streaming=False``) or streaming read's options.

    ``streaming=None`` checks what a read of either kind must get right, as
    ``load()`` does before Spark says which kind it is.
    """
    source, settings = _split_settings(options)
    client = client_config(settings)
    topics, pattern, assigned = _subscription(source)
    starting, ending = _bounds(source, streaming)
    read = ReadOptions(client, topics, assigned, starting, ending, pattern=pattern)
    changes: dict[str, Any] = {
        field: parse(name, source[key])
        for key, (field, name, parse) in _READ_SOURCE.items()
        if key in source
    }
    for name, (field, minimum) in _READ_NUMBERS.items():
        if name in settings:
            changes[field] = _int(name, settings[name], minimum)
    if "isolation.level" in settings:
        # Imported here: the record codecs are a task's, not a planner's, imports.
        from afkak.records.aborted import isolation_level as isolation_level_of

        try:
            changes["isolation_level"] = isolation_level_of(settings["isolation.level"])
        except ValueError as e:
            raise OptionError(f"kafka.isolation.level: {e}") from None
    return attrs.evolve(read, **changes)


def _subscription(
    source: Mapping[str, str],
) -> tuple[tuple[str, ...] | None, str | None, tuple[TopicAndPartition, ...] | None]:
    """The topics (``subscribe``), the pattern (``subscribePattern``) or the partitions
    (``assign``) read: exactly one of them."""
    subscribe, pattern, assign = (
        source.get(k) for k in ("subscribe", "subscribepattern", "assign")
    )
    if [subscribe, pattern, assign].count(None) != 2:
        raise OptionError(
            "exactly one of the options subscribe, subscribePattern and assign is required"
        )
    if subscribe is not None:
        topics = tuple(dict.fromkeys(t.strip() for t in subscribe.split(",") if t.strip()))
        if not topics:
            raise OptionError("subscribe names no topic")
        return topics, None, None
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as e:
            raise OptionError(
                f"subscribePattern {pattern!r} is not a regular expression: {e}"
            ) from None
        return None, pattern, None
    return None, None, _parse_assign(assign or "")


def _bounds(source: Mapping[str, str], streaming: bool | None) -> tuple[Bound, Bound]:
    """Where the read starts and (a batch read) ends: offsets or timestamps."""
    starting: Bound = parse_offsets(
        "startingOffsets",
        source.get("startingoffsets", "latest" if streaming else "earliest"),
        allowed=(OFFSET_EARLIEST,) if streaming is False else (OFFSET_EARLIEST, OFFSET_LATEST),
    )
    if streaming and "endingoffsets" in source:
        raise OptionError("endingOffsets is for batch queries only")
    ending: Bound = parse_offsets(
        "endingOffsets", source.get("endingoffsets", "latest"), allowed=(OFFSET_LATEST,)
    )
    strategy = source.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError(
            f"startingOffsetsByTimestampStrategy must be error or latest, not {strategy!r}"
        )
    starting = _by_timestamp(source, "starting", strategy) or starting
    if streaming and {"endingtimestamp", "endingoffsetsbytimestamp"} & set(source):
        raise OptionError("endingTimestamp and endingOffsetsByTimestamp are for batch queries only")
    ending = _by_timestamp(source, "ending", "latest") or ending
    return starting, ending


def _positive(name: str, value: str) -> int:
    return _int(name, value, 1)


#: The source's own read options (lower-cased, as PySpark passes them): the
#: ReadOptions field each sets, its name as Spark spells it, and how it is read.
_READ_SOURCE: dict[str, tuple[str, str, Callable[[str, str], Any]]] = {
    "maxoffsetspertrigger": ("max_offsets_per_trigger", "maxOffsetsPerTrigger", _positive),
    "minoffsetspertrigger": ("min_offsets_per_trigger", "minOffsetsPerTrigger", _positive),
    "maxtriggerdelay": ("max_trigger_delay_ms", "maxTriggerDelay", _duration_ms),
    "minpartitions": ("min_partitions", "minPartitions", _positive),
    "maxrecordsperpartition": ("max_records_per_partition", "maxRecordsPerPartition", _positive),
    "failondataloss": ("fail_on_data_loss", "failOnDataLoss", _bool),
    "includeheaders": ("include_headers", "includeHeaders", _bool),
    "kafkaconsumer.polltimeoutms": (
        "poll_timeout",
        "kafkaConsumer.pollTimeoutMs",
        lambda name, value: _positive(name, value) / 1000.0,
    ),
}


def _acks(name: str, value: str) -> int:
    text = value.strip().lower()
    if text not in _ACKS:
        raise OptionError(f"{name} must be all, -1, 0 or 1, not {value!r}")
    return _ACKS[text]


def _codec(name: str, value: str) -> int:
    text = value.strip().lower()
    if text not in _CODECS:
        raise OptionError(f"{name} must be one of {sorted(_CODECS)}, not {text!r}")
    return _CODECS[text]


def _attempts(name: str, value: str) -> int:
    """Java's ``retries`` (retries after the first try) as the Producer's attempts."""
    return min(_int(name, value, 0), 2**31 - 2) + 1


def _at_least(minimum: int) -> Callable[[str, str], int]:
    return lambda name, value: _int(name, value, minimum)


#: Producer settings of kafka-clients: the :class:`afkak.producer.Producer` keyword
#: each sets, and how its value is read.
_PRODUCER_SETTINGS: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "acks": ("req_acks", _acks),
    "compression.type": ("codec", _codec),
    "compression.level": ("compression_level", _at_least(-(2**31))),
    "batch.size": ("batch_size", _at_least(1)),
    "linger.ms": ("linger_ms", _at_least(0)),
    "enable.idempotence": ("enable_idempotence", _bool),
    "max.request.size": ("max_request_size", _at_least(1)),
    "buffer.memory": ("buffer_memory", _at_least(1)),
    "delivery.timeout.ms": ("delivery_timeout_ms", _at_least(1)),
    "retries": ("max_req_attempts", _attempts),
    "max.in.flight.requests.per.connection": ("max_in_flight_per_partition", _at_least(1)),
    "max.block.ms": ("max_block_ms", _at_least(0)),
    "transaction.timeout.ms": ("transaction_timeout_ms", _at_least(1)),
}
#: Every kafka-clients setting accepted, with or without the ``kafka.`` prefix.
KAFKA_SETTINGS = _CLIENT_SETTINGS | _READ_SETTINGS | frozenset(_PRODUCER_SETTINGS)


def producer_settings(settings: Mapping[str, str]) -> dict[str, Any]:
    """The Producer's keyword arguments from the kafka-clients *settings* it has one for."""
    return {
        keyword: parse(name, settings[name])
        for name, (keyword, parse) in _PRODUCER_SETTINGS.items()
        if name in settings
    }


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    """Parse a write's options (batch or streaming)."""
    source, settings = _split_settings(options)
    extra = set(source) & _READ_OPTIONS
    if extra:
        raise OptionError(f"options {sorted(extra)} are for reads only")
    write = WriteOptions(client_config(settings), topic=source.get("topic"))
    producer = producer_settings(settings)
    changes: dict[str, Any] = {"producer": tuple(sorted(producer.items()))}
    if "transactionalidprefix" in source:
        changes["transactional_id_prefix"] = source["transactionalidprefix"]
    if "exactlyonce" in source and _bool("exactlyOnce", source["exactlyonce"]):
        changes["exactly_once"] = True
        if write.topic is None:
            raise OptionError("exactlyOnce needs the topic option (its progress is kept there)")
        if producer.get("req_acks", -1) != -1 or producer.get("enable_idempotence") is False:
            raise OptionError("exactlyOnce writes in transactions: acks=all, idempotence on")
    return attrs.evolve(write, **changes)

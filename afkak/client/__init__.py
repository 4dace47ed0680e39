"""The cluster-aware client: metadata, routing and afkak's request API.

:class:`KafkaClient` is the public class, with :exc:`NoBrokerListening` (the
error of a bootstrap that reached no broker at all) and
:exc:`AuthenticationRefused` (brokers refused the client's credentials); the roles
(typing.Protocols) name the parts of it each layer above uses, for code that
types its own client (a test double, say).  What afkak's own layers share
beyond that is in :mod:`afkak.client._interlayer`, not part of the public API.
"""

from afkak.client._client import KafkaClient
from afkak.client._cluster import AuthenticationRefused, NoBrokerListening
from afkak.client._roles import (
    AdminClient,
    BrokerRequests,
    ClusterMetadata,
    ConsumerClient,
    GroupRequests,
    ProducerClient,
)

__all__ = [
    "AdminClient",
    "AuthenticationRefused",
    "BrokerRequests",
    "ClusterMetadata",
    "ConsumerClient",
    "GroupRequests",
    "KafkaClient",
    "NoBrokerListening",
    "ProducerClient",
]

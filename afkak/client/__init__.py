"""The cluster-aware client: metadata, routing and afkak's request API.

:class:`KafkaClient` is the public class, with :exc:`NoBrokerListening` (the
error of a bootstrap that reached no broker at all).  The other names are for afkak's own
layers above the client (producer, consumer, groups): the error classes that
mean stale metadata, the argument checks, the Fetch, FindCoordinator,
ListOffsets and Produce request builders and their base,
:class:`VersionedCall` (which the admin layer's builders extend), and the
roles (typing.Protocols) the layers above type their ``client`` with.
"""

from afkak.client._call import VersionedCall
from afkak.client._client import KafkaClient
from afkak.client._cluster import NoBrokerListening
from afkak.client._coordinator_call import TRANSACTION_KEY_TYPE, FindCoordinatorCall
from afkak.client._fetch_call import FetchCall
from afkak.client._list_offsets_call import ListOffsetsCall
from afkak.client._produce_call import ProduceCall
from afkak.client._roles import (
    AdminClient,
    BrokerRequests,
    ClusterMetadata,
    ConsumerClient,
    GroupRequests,
    ProducerClient,
)
from afkak.client._stale import COORDINATOR_MOVED, LEADER_MOVED, TOPIC_GONE
from afkak.client._validate import (
    INT32_MAX,
    group_name,
    integer,
    kafka_client,
    number,
    topic_list,
    topic_name,
)

__all__ = [
    "COORDINATOR_MOVED",
    "INT32_MAX",
    "LEADER_MOVED",
    "TOPIC_GONE",
    "TRANSACTION_KEY_TYPE",
    "AdminClient",
    "BrokerRequests",
    "ClusterMetadata",
    "ConsumerClient",
    "FetchCall",
    "FindCoordinatorCall",
    "GroupRequests",
    "KafkaClient",
    "ListOffsetsCall",
    "NoBrokerListening",
    "ProduceCall",
    "ProducerClient",
    "VersionedCall",
    "group_name",
    "integer",
    "kafka_client",
    "number",
    "topic_list",
    "topic_name",
]

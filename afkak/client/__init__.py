"""The cluster-aware client: metadata, routing and afkak's request API.

:class:`KafkaClient` is the public class.  The other names are for afkak's own
layers above the client (producer, consumer, groups): the error classes that
mean stale metadata, the topic-name check, and the Fetch and Produce request
builders.
"""

from afkak.client._client import KafkaClient
from afkak.client._fetch_call import FetchCall
from afkak.client._produce_call import ProduceCall
from afkak.client._stale import COORDINATOR_MOVED, LEADER_MOVED, TOPIC_GONE
from afkak.client._validate import topic_name

__all__ = [
    "COORDINATOR_MOVED",
    "LEADER_MOVED",
    "TOPIC_GONE",
    "FetchCall",
    "KafkaClient",
    "ProduceCall",
    "topic_name",
]

"""The cluster-aware client: metadata, routing and afkak's request API.

:class:`KafkaClient` is the public class.  The other names are for afkak's own
layers above the client (producer, consumer, groups): the error classes that
mean stale metadata, the topic- and group-name checks, the Fetch and
ListOffsets request builders and their base, :class:`VersionedCall` (which
the admin layer's builders extend).
"""

from afkak.client._call import VersionedCall
from afkak.client._client import KafkaClient
from afkak.client._fetch_call import FetchCall
from afkak.client._list_offsets_call import ListOffsetsCall
from afkak.client._stale import COORDINATOR_MOVED, LEADER_MOVED, TOPIC_GONE
from afkak.client._validate import group_name, topic_name

__all__ = [
    "COORDINATOR_MOVED",
    "LEADER_MOVED",
    "TOPIC_GONE",
    "FetchCall",
    "KafkaClient",
    "ListOffsetsCall",
    "VersionedCall",
    "group_name",
    "topic_name",
]

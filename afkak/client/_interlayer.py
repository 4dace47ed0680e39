"""The client's names for afkak's own layers above it: not afkak's public API.

The producer, consumer, groups, admin client and integrations build their
requests and check their arguments with these: the errors that mean stale
metadata, the argument checks, the Fetch, FindCoordinator, ListOffsets,
OffsetForLeaderEpoch and Produce request builders and their base
:class:`VersionedCall` (which the admin layer's builders extend).
``afkak/test/test_layers.py`` lets the other packages import this module, and
no other private one.
"""

from afkak.client._call import VersionedCall
from afkak.client._coordinator_call import TRANSACTION_KEY_TYPE, FindCoordinatorCall
from afkak.client._fetch_call import FetchCall
from afkak.client._leader_epoch_call import EpochEnd, EpochQuery, OffsetForLeaderEpochCall
from afkak.client._list_offsets_call import ListOffsetsCall
from afkak.client._produce_call import ProduceCall
from afkak.client._produce_split import halve
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
    "EpochEnd",
    "EpochQuery",
    "FetchCall",
    "FindCoordinatorCall",
    "ListOffsetsCall",
    "OffsetForLeaderEpochCall",
    "ProduceCall",
    "VersionedCall",
    "group_name",
    "halve",
    "integer",
    "kafka_client",
    "number",
    "topic_list",
    "topic_name",
]

"""The client's names for afkak's own layers above it: not afkak's public API.

The producer, consumer, groups, admin client and integrations build their
requests and check their arguments with these: the errors that mean stale
metadata, the argument checks, the parsing of bootstrap servers, the Fetch,
FindCoordinator, ListOffsets, Metadata, OffsetForLeaderEpoch and Produce
request builders and their base :class:`VersionedCall` (which the admin
layer's builders extend).
``afkak/test/test_layers.py`` lets the other packages import this module, and
no other private one.
"""

from typing import TYPE_CHECKING

from afkak._lazy import lazy_names
from afkak.client._call import VersionedCall
from afkak.client._coordinator_call import TRANSACTION_KEY_TYPE, FindCoordinatorCall
from afkak.client._hosts import parse_hosts
from afkak.client._leader_epoch_call import EpochEnd, EpochQuery, OffsetForLeaderEpochCall
from afkak.client._list_offsets_call import ListOffsetsCall
from afkak.client._metadata_call import MetadataCall
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

if TYPE_CHECKING:
    from afkak.client._fetch_call import FetchCall
    from afkak.client._produce_call import ProduceCall
    from afkak.client._produce_split import halve

#: Where the builders of record requests live, imported on first use (PEP 562): a
#: process that only looks up offsets (Spark's streaming runner) needs neither the
#: record reader nor the record builder they bring.
_LAZY = {
    "FetchCall": "afkak.client._fetch_call",
    "ProduceCall": "afkak.client._produce_call",
    "halve": "afkak.client._produce_split",
}

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
    "MetadataCall",
    "OffsetForLeaderEpochCall",
    "ProduceCall",
    "VersionedCall",
    "group_name",
    "halve",
    "integer",
    "kafka_client",
    "number",
    "parse_hosts",
    "topic_list",
    "topic_name",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), __all__)

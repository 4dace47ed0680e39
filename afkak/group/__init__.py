"""Consumer groups on Kafka's classic group protocol, interoperating with Java and librdkafka.

:class:`ConsumerGroup` runs one :class:`afkak.consumer.Consumer` per
partition the group assigns to it.  Assignors ("range", "roundrobin",
"cooperative-sticky", or your own :class:`PartitionAssignor`) compute
assignments for every member when this member leads.  Inspection for
operations: :func:`describe_group`, :func:`list_groups`,
:func:`committed_offsets`, :func:`group_lag`.  The pull-style API
(``getmany``, ``getone``, ``async for``): :class:`KafkaConsumer`.  Exactly-once
consume-transform-produce: :class:`TransactionalProcessor`.  Share groups
(KIP-932, queues): :class:`ShareConsumer`.
"""

from afkak.admin import GroupDescription, GroupListing, MemberDescription, PartitionLag
from afkak.group._admin import committed_offsets, describe_group, group_lag, list_groups
from afkak.group._assignor import Assignment, Member, PartitionAssignor, RebalanceProtocol
from afkak.group._classic_member import GroupMember
from afkak.group._consumer_group import ASSIGNORS, DEFAULT_ASSIGNORS, ConsumerGroup
from afkak.group._listener import Generation, Liveness, RebalanceListener
from afkak.group._pull import MAX_POLL_RECORDS, KafkaConsumer
from afkak.group._range import RangeAssignor
from afkak.group._roundrobin import RoundRobinAssignor
from afkak.group._share_acks import AcknowledgeType, ShareRecord
from afkak.group._share_consumer import ShareConsumer
from afkak.group._share_member import ShareMemberState
from afkak.group._states import MemberState
from afkak.group._sticky import CooperativeStickyAssignor
from afkak.group._transform import TransactionalProcessor
from afkak.protocol.consumer_protocol import (
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

__all__ = [
    "ASSIGNORS",
    "AcknowledgeType",
    "DEFAULT_ASSIGNORS",
    "Assignment",
    "ConsumerGroup",
    "CooperativeStickyAssignor",
    "Generation",
    "GroupDescription",
    "GroupListing",
    "GroupMember",
    "KafkaConsumer",
    "Liveness",
    "MAX_POLL_RECORDS",
    "Member",
    "MemberDescription",
    "MemberState",
    "PartitionAssignor",
    "PartitionLag",
    "RangeAssignor",
    "RebalanceListener",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "ShareConsumer",
    "ShareMemberState",
    "ShareRecord",
    "Subscription",
    "TransactionalProcessor",
    "committed_offsets",
    "decode_assignment",
    "decode_subscription",
    "describe_group",
    "encode_assignment",
    "encode_subscription",
    "group_lag",
    "list_groups",
]

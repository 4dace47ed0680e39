"""``afkak share-groups list|describe|offsets|reset-offsets|delete-offsets``: share groups
(KIP-932), as ``kafka-share-groups`` shows and changes them."""

from __future__ import annotations

from typing import Any

from afkak.common import TopicAndPartition

from ._admin_commands import _deleted, _raise_first, partition_names, partitions_arg
from ._output import OK
from ._session import Session


async def share_groups_list(s: Session) -> int:
    groups = await s.admin.list_share_groups(states=s.args.state or None)
    s.out.table(["group", "state"], [(g.group_id, g.state) for g in groups])
    return OK


async def share_groups_describe(s: Session) -> int:
    results = await s.admin.describe_share_groups(s.args.groups)
    rows: list[tuple[Any, ...]] = []
    for g in s.args.groups:
        d = results[g]
        if d.error is not None:
            continue
        if not d.members:
            rows.append((g, d.state, d.group_epoch, None, None, None, None))
        for m in d.members:
            rows.append((g, d.state, d.group_epoch, m.member_id, m.member_epoch, m.client_id,
                         partition_names(m.assignment)))  # fmt: skip
    s.out.table(
        ["group", "state", "epoch", "member", "member_epoch", "client_id", "partitions"], rows
    )
    _raise_first(results, "share group")
    return OK


def _partitions(values: list[str]) -> list[TopicAndPartition] | None:
    """``--topic TOPIC:P,...`` arguments; a bare TOPIC is refused (the offsets APIs
    name partitions)."""
    if not values:
        return None
    wanted = partitions_arg(values)
    bare = [w for w in wanted if not isinstance(w, TopicAndPartition)]
    if bare:
        raise ValueError(f"--topic takes TOPIC:PARTITION[,...] here, not {bare[0]!r}")
    return wanted


async def share_groups_offsets(s: Session) -> int:
    offsets = await s.admin.describe_share_group_offsets(s.args.group, _partitions(s.args.topic))
    rows = [(tp.topic, tp.partition, o.start_offset, o.lag) for tp, o in sorted(offsets.items())]
    s.out.table(["topic", "partition", "start_offset", "lag"], rows)
    _raise_first(offsets, f"share group {s.args.group} partition")
    return OK


async def share_groups_reset_offsets(s: Session) -> int:
    partitions = _partitions(s.args.topic) or []
    wanted = dict.fromkeys(partitions, s.args.to_offset)
    results = await s.admin.alter_share_group_offsets(s.args.group, wanted)
    rows = [(tp.topic, tp.partition, s.args.to_offset) for tp in sorted(results)]
    s.out.table(["topic", "partition", "start_offset"], rows)
    _raise_first(results, f"share group {s.args.group} partition")
    return OK


async def share_groups_delete_offsets(s: Session) -> int:
    topics = s.args.topics
    results = await s.admin.delete_share_group_offsets(s.args.group, topics)
    return _deleted(s, f"share group {s.args.group} topic", topics, results)

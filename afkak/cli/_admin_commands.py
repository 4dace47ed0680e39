"""``afkak topics ...``, ``afkak cluster`` and ``afkak groups ...``: the admin client at a shell."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

from afkak.admin import AlterOp, ConfigChange, ConfigResource, NewTopic
from afkak.common import ElectionNotNeeded, TopicAlreadyExists, TopicAndPartition

from ._output import OK, item_error
from ._session import Session
from ._watch import COLUMNS, lag_rows, watch_lag


def _raise_first(results: dict[Any, Any], what: str) -> None:
    for key, result in results.items():
        if result.error is not None:
            raise item_error(f"{what} {key}", result.error)


def key_values(pairs: list[str], what: str) -> dict[str, str]:
    """``name=value`` arguments as a dict (ValueError for one without ``=``)."""
    parsed = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ValueError(f"{what} must be name=value, not {pair!r}")
        parsed[name] = value
    return parsed


# -- topics --------------------------------------------------------------------


async def topics_list(s: Session) -> int:
    listings = await s.admin.list_topics(internal=s.args.internal)
    if s.out.as_json:
        s.out.json(
            [{"name": t.name, "topic_id": t.topic_id, "internal": t.internal} for t in listings]
        )
    else:
        s.out.lines([t.name for t in listings], None)
    return OK


async def topics_describe(s: Session) -> int:
    described = await s.admin.describe_topics(s.args.topics)
    configs = {}
    if s.args.configs:
        resources = [ConfigResource.topic(t) for t in s.args.topics if described[t].error is None]
        configs = await s.admin.describe_configs(resources) if resources else {}
    data, text = [], []
    for name in s.args.topics:
        d = described[name]
        if d.error is not None:
            continue
        rf = len(d.partitions[0].replicas) if d.partitions else 0
        parts = [
            {
                "partition": p.partition,
                "leader": p.leader,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
                "leader_epoch": p.leader_epoch,
                "elr": _nodes_or_none(p.eligible_leader_replicas),
                "last_known_elr": _nodes_or_none(p.last_known_elr),
            }
            for p in d.partitions
        ]
        entry = {"name": name, "topic_id": d.topic_id, "internal": d.internal, "partitions": parts}
        text.append(
            f"Topic: {name}\tTopicId: {d.topic_id or '-'}\t"
            f"PartitionCount: {len(parts)}\tReplicationFactor: {rf}"
        )
        for p in d.partitions:
            line = (
                f"\tPartition: {p.partition}\tLeader: {p.leader}\t"
                f"Replicas: {_joined(p.replicas)}\tIsr: {_joined(p.isr)}"
            )
            if p.eligible_leader_replicas is not None:  # as kafka-topics, where KIP-966 is
                line += f"\tElr: {_joined(p.eligible_leader_replicas)}"
                line += f"\tLastKnownElr: {_joined(p.last_known_elr or ())}"
            text.append(line)
        found = configs.get(ConfigResource.topic(name))
        if found is not None:
            entry["configs"] = {k: e.value for k, e in sorted(found.entries.items())}
            text.extend(
                f"\tConfig: {k}={e.value}\t({e.source.name})"
                for k, e in sorted(found.entries.items())
            )
        data.append(entry)
    s.out.lines(text, data)
    _raise_first(described, "topic")
    return OK


async def topics_create(s: Session) -> int:
    a = s.args
    topic = NewTopic(
        a.topic,
        a.partitions,
        a.replication_factor,
        configs=key_values(a.config, "--config"),
    )
    results = await s.admin.create_topics([topic], validate_only=a.validate_only)
    error = results[a.topic].error
    exists = isinstance(error, TopicAlreadyExists) and a.if_not_exists
    if error is not None and not exists:
        raise item_error(f"topic {a.topic}", error)
    verb = "already exists" if exists else "would be created" if a.validate_only else "created"
    created = not (exists or a.validate_only)
    s.out.lines([f"topic {a.topic} {verb}"], {"topic": a.topic, "created": created})
    return OK


async def topics_delete(s: Session) -> int:
    return _deleted(s, "topic", s.args.topics, await s.admin.delete_topics(s.args.topics))


def _deleted(s: Session, what: str, names: list[str], results: dict[Any, Any]) -> int:
    """Report what was deleted, then fail with the first item that was not."""
    deleted = [n for n in names if results[n].error is None]
    s.out.lines([f"{what} {n} deleted" for n in deleted], {"deleted": deleted})
    _raise_first(results, what)
    return OK


async def topics_alter_config(s: Session) -> int:
    a = s.args
    changes = [ConfigChange(k, v) for k, v in key_values(a.set, "--set").items()]
    changes += [ConfigChange(k, op=AlterOp.DELETE) for k in a.delete]
    if not changes:
        raise ValueError("nothing to change: give --set name=value or --delete name")
    resource = ConfigResource.topic(a.topic)
    results = await s.admin.incremental_alter_configs(
        {resource: changes}, validate_only=a.validate_only
    )
    _raise_first({a.topic: results[resource]}, "topic")
    s.out.lines(
        [f"topic {a.topic}: {len(changes)} config(s) changed"],
        {"topic": a.topic, "changed": len(changes)},
    )
    return OK


# -- cluster --------------------------------------------------------------------


async def cluster(s: Session) -> int:
    c = await s.admin.describe_cluster()
    brokers = [{"id": b.node_id, "host": b.host, "port": b.port} for b in c.brokers]
    text = [f"Cluster ID: {c.cluster_id}", f"Controller: {c.controller_id}", "Brokers:"]
    text += [f"  {b.node_id}\t{b.host}:{b.port}" for b in c.brokers]
    s.out.lines(
        text, {"cluster_id": c.cluster_id, "controller": c.controller_id, "brokers": brokers}
    )
    return OK


# -- groups ---------------------------------------------------------------------


async def groups_list(s: Session) -> int:
    groups = await s.admin.list_consumer_groups(states=s.args.state or None)
    s.out.table(
        ["group", "state", "protocol_type"],
        [(g.group_id, g.state, g.protocol_type) for g in groups],
    )
    return OK


async def groups_describe(s: Session) -> int:
    """Members and their partitions, as ``kafka-consumer-groups --describe --members
    --verbose``: for consumer-protocol groups (KIP-848) with the group's and each member's
    epoch and target assignment too."""
    results = await s.admin.describe_consumer_groups(s.args.groups)
    rows: list[tuple[Any, ...]] = []
    for g in s.args.groups:
        d = results[g]
        if d.error is not None:
            continue
        group = (g, d.group_type, d.state, d.protocol, d.group_epoch)
        if not d.members:
            rows.append((*group, None, None, None, None, None, None))
        for m in d.members:
            target = None if m.target_assignment is None else partition_names(m.target_assignment)
            rows.append((*group, m.member_id, m.member_epoch, m.client_id, m.client_host,
                         partition_names(m.assignment or ()), target))  # fmt: skip
    columns = ["group", "type", "state", "assignor", "group_epoch", "member", "member_epoch"]
    s.out.table([*columns, "client_id", "host", "partitions", "target"], rows)
    _raise_first(results, "group")
    return OK


def partition_names(partitions: Iterable[TopicAndPartition]) -> list[str]:
    return [f"{tp.topic}:{tp.partition}" for tp in partitions]


async def groups_lag(s: Session) -> int:
    if s.args.watch:
        return await watch_lag(s)
    s.out.table(COLUMNS, await lag_rows(s))
    return OK


async def groups_delete(s: Session) -> int:
    groups = s.args.groups
    return _deleted(s, "group", groups, await s.admin.delete_consumer_groups(groups))


def partitions_arg(values: list[str]) -> list[Any]:
    """``TOPIC`` or ``TOPIC:PARTITION[,PARTITION...]`` arguments."""
    wanted: list[Any] = []
    for value in values:
        topic, sep, parts = value.partition(":")
        if not sep:
            wanted.append(topic)
            continue
        try:
            wanted.extend(TopicAndPartition(topic, int(p)) for p in parts.split(","))
        except ValueError:
            raise ValueError(
                f"--topic takes TOPIC or TOPIC:PARTITION[,...], not {value!r}"
            ) from None
    return wanted


def _timestamp(text: str) -> int:
    """Milliseconds since the epoch from digits or an ISO 8601 time (UTC if no zone)."""
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"--to-datetime takes an ISO 8601 time, not {text!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return int(when.timestamp() * 1000)


async def groups_reset_offsets(s: Session) -> int:
    a = s.args
    how: dict[str, Any] = {}
    if a.to_earliest:
        how["to_earliest"] = True
    if a.to_latest:
        how["to_latest"] = True
    if a.to_offset is not None:
        how["to_offset"] = a.to_offset
    if a.shift_by is not None:
        how["shift_by"] = a.shift_by
    if a.to_datetime is not None:
        how["to_timestamp"] = _timestamp(a.to_datetime)
    plan = await s.admin.plan_offset_reset(a.group, partitions_arg(a.topic), **how)
    if a.execute:
        results = await s.admin.reset_offsets(a.group, plan)
        _raise_first(results, f"group {a.group} partition")
    rows = [(tp.topic, tp.partition, r.current, r.target) for tp, r in sorted(plan.items())]
    s.out.table(["topic", "partition", "current", "new"], rows)
    if not a.execute:
        import sys

        sys.stderr.write("afkak: dry run: nothing changed (add --execute to apply)\n")
    return OK


async def topics_reassign(s: Session) -> int:
    """``topics reassign TOPIC:P=R1,R2,... ...`` (or ``--cancel TOPIC:P``), then the
    optional preferred election, as kafka-reassign-partitions and kafka-leader-election."""
    a = s.args
    targets = _reassignment_targets(a.moves, a.cancel)
    if a.list:
        ongoing = await s.admin.list_partition_reassignments(list(targets) or None)
        s.out.table(
            ["topic", "partition", "replicas", "adding", "removing"],
            [
                (tp.topic, tp.partition, list(r.replicas), list(r.adding), list(r.removing))
                for tp, r in sorted(ongoing.items())
            ],
        )
        return OK
    if not targets:
        raise ValueError("nothing to move: give TOPIC:PARTITION=BROKERS or --cancel")
    results = await s.admin.alter_partition_reassignments(targets)
    _raise_first(results, "partition")
    rows: list[tuple[Any, ...]] = [
        (tp.topic, tp.partition, "cancelled" if r is None else f"moving to {r}")
        for tp, r in targets.items()
    ]
    if a.elect_preferred:
        rows += await _elect_preferred(s, [tp for tp, r in targets.items() if r])
    s.out.table(["topic", "partition", "status"], rows)
    return OK


def _reassignment_targets(
    moves: Iterable[str], cancel: Any
) -> dict[TopicAndPartition, list[int] | None]:
    """``{partition: its new replicas, or None to cancel its reassignment}``."""
    targets: dict[TopicAndPartition, list[int] | None] = {}
    for move in moves:
        where, sep, replicas = move.partition("=")
        topic, colon, part = where.rpartition(":")
        try:
            tp = TopicAndPartition(topic, int(part))
            nodes = [int(r) for r in replicas.split(",")]
        except ValueError:
            tp = None
        if not (sep and colon and topic) or tp is None:
            raise ValueError(f"a move is TOPIC:PARTITION=BROKER,BROKER..., not {move!r}")
        targets[tp] = nodes
    for tp in partitions_arg(cancel):
        if not isinstance(tp, TopicAndPartition):
            raise ValueError(f"--cancel takes TOPIC:PARTITION, not {tp!r}")
        targets[tp] = None
    return targets


async def _elect_preferred(
    s: Session, partitions: list[TopicAndPartition]
) -> list[tuple[Any, ...]]:
    """Elect the preferred leaders of *partitions*: a status row for each."""
    rows: list[tuple[Any, ...]] = []
    for tp, e in (await s.admin.elect_leaders(partitions=partitions)).items():
        if e.error is not None and not isinstance(e.error, ElectionNotNeeded):
            raise item_error(f"partition {tp.topic}:{tp.partition}", e.error)
        status = "preferred leader elected" if e.error is None else "preferred leader leads"
        rows.append((tp.topic, tp.partition, status))
    return rows


def _joined(nodes: Iterable[int]) -> str:
    return ",".join(map(str, nodes))


def _nodes_or_none(nodes: Iterable[int] | None) -> list[int] | None:
    return None if nodes is None else list(nodes)

"""The ``afkak`` command line's arguments (argparse: see docs/cli.rst for why)."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from afkak._version import __version__

from . import (
    _admin_commands as admin,
    _cluster_commands as ops,
    _quota_commands as quotas,
    _share_commands as share,
    _txn_commands as txn,
)
from ._broker import broker
from ._consume import consume
from ._produce import CODECS, produce

#: The ``--key-format``/``--value-format`` choices.
SCHEMA_FORMATS = ("avro", "protobuf", "json-schema")
#: kcat's modes, answered with afkak's spelling instead of argparse's "invalid choice".
KCAT_MODES = {
    "-C": "afkak consume TOPIC",
    "-P": "afkak produce TOPIC",
    "-L": "afkak topics describe TOPIC (or afkak cluster)",
}


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line (scripts read stderr's last line)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"afkak: error: {message} (see {self.prog} --help)\n")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        for mode, spelling in KCAT_MODES.items():
            if args and args[0] == mode:
                self.error(f"{mode} is kcat's; afkak says {spelling}")
        return super().parse_known_args(args, namespace)


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, not {text!r}") from None


def _positive(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _non_negative(text: str) -> int:
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, not {value}")
    return value


def _port(text: str) -> int:
    value = _integer(text)
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"must be a TCP port (1-65535), not {value}")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, not {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return value


def _topic_arguments(p: argparse.ArgumentParser) -> None:
    """TOPIC, or ``--topic TOPIC`` as Kafka's console tools spell it (one of them)."""
    p.add_argument("topic", metavar="TOPIC", nargs="?", default=argparse.SUPPRESS)
    p.add_argument(
        "--topic", dest="topic", default=argparse.SUPPRESS, help="TOPIC, as Kafka's tools take it"
    )


def _kafka_properties(p: argparse.ArgumentParser, names: str) -> None:
    p.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"Kafka's console tools' formatting properties: {names}",
    )


def _global_options(parser: argparse.ArgumentParser, defaults: bool) -> None:
    """The options every command takes; a command's parser has them without
    defaults, so that given before the command they are not reset after it."""

    def default(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument(
        "-b",
        "--bootstrap",
        "--bootstrap-server",
        dest="bootstrap",
        default=default(None),
        help="HOST:PORT[,HOST:PORT...] (default: $AFKAK_BOOTSTRAP)",
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        default=default(None),
        help="a Kafka .properties file: bootstrap.servers, security.protocol, sasl.*, ssl.*, "
        "client.id",
    )
    parser.add_argument(
        "--json", action="store_true", default=default(False), help="machine-readable output"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=default(10.0),
        help="request timeout in seconds (default 10)",
    )
    parser.add_argument(
        "--no-progress", action="store_true", default=default(False), help="never show progress"
    )


class _CommandParser(_Parser):
    """A command's parser: it takes the global options too (``afkak topics list -b HOST``),
    as kcat and Kafka's tools do."""

    def __init__(self, global_options: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if global_options:
            _global_options(self, defaults=False)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="afkak",
        description="Kafka topics, groups, records and offsets from a shell, with afkak.",
        epilog="Exit codes: 0 ok, 1 Kafka refused, 2 bad input, 3 cluster unreachable, "
        "4 unknown topic/group/partition, 130 interrupted.  Options may also follow the "
        "command.",
    )
    parser.add_argument("--version", action="version", version=f"afkak {__version__}")
    _global_options(parser, defaults=True)
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_CommandParser
    )

    topics = commands.add_parser(
        "topics", help="list, describe, create, delete, alter-config, reassign"
    )
    t = topics.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = t.add_parser("list", help="topic names")
    p.add_argument("--internal", action="store_true", help="include internal topics")
    p.set_defaults(run=admin.topics_list)
    p = t.add_parser("describe", help="partitions, leaders, replicas, ISR (and configs)")
    p.add_argument("topics", nargs="+", metavar="TOPIC")
    p.add_argument("--configs", action="store_true", help="also show the topics' configs")
    p.set_defaults(run=admin.topics_describe)
    p = t.add_parser("create", help="create a topic")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument(
        "-p",
        "--partitions",
        type=_positive,
        default=-1,
        help="how many partitions (default: the broker's num.partitions)",
    )
    p.add_argument(
        "-r",
        "--replication-factor",
        type=_positive,
        default=-1,
        help="copies of each partition (default: the broker's default.replication.factor)",
    )
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a topic config (retention.ms=...), repeatable",
    )
    p.add_argument("--validate-only", action="store_true", help="only ask the broker to check")
    p.add_argument("--if-not-exists", action="store_true", help="an existing topic is no error")
    p.set_defaults(run=admin.topics_create)
    p = t.add_parser("delete", help="delete topics")
    p.add_argument("topics", nargs="+", metavar="TOPIC")
    p.set_defaults(run=admin.topics_delete)
    p = t.add_parser("alter-config", help="set or delete a topic's configs")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--delete", action="append", default=[], metavar="NAME")
    p.add_argument("--validate-only", action="store_true")
    p.set_defaults(run=admin.topics_alter_config)
    p = t.add_parser("reassign", help="move partitions to other brokers (or list moves)")
    p.add_argument("moves", nargs="*", metavar="TOPIC:PARTITION=BROKER,BROKER...")
    p.add_argument("--cancel", action="append", default=[], metavar="TOPIC:PARTITION")
    p.add_argument("--list", action="store_true", help="the ongoing moves (of these partitions)")
    p.add_argument(
        "--elect-preferred", action="store_true", help="then elect the first broker as leader"
    )
    p.set_defaults(run=admin.topics_reassign)

    p = commands.add_parser("cluster", help="cluster id, controller and brokers; quorum")
    p.set_defaults(run=admin.cluster)
    c = p.add_subparsers(dest="action", metavar="ACTION")
    p = c.add_parser("quorum", help="the KRaft metadata quorum (leader, voters, lag)")
    p.add_argument("--replication", action="store_true", help="one row per voter and observer")
    p.set_defaults(run=ops.cluster_quorum)

    features = commands.add_parser("features", help="describe, upgrade, downgrade")
    f = features.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = f.add_parser("describe", help="supported and finalized feature levels")
    p.set_defaults(run=ops.features_describe)
    for action in ("upgrade", "downgrade"):
        p = f.add_parser(action, help=f"{action} feature levels")
        p.add_argument(
            "--feature", action="append", required=True, metavar="NAME=LEVEL", help="repeatable"
        )
        p.add_argument("--dry-run", action="store_true", help="validate only")
        if action == "downgrade":
            p.add_argument("--unsafe", action="store_true", help="allow losing metadata")
        p.set_defaults(run=ops.features_update)

    groups = commands.add_parser("groups", help="list, describe, lag, delete, reset-offsets")
    g = groups.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = g.add_parser("list", help="consumer groups")
    p.add_argument("--state", action="append", default=[], help="only groups in this state")
    p.set_defaults(run=admin.groups_list)
    p = g.add_parser("describe", help="state, assignor and members")
    p.add_argument("groups", nargs="+", metavar="GROUP")
    p.set_defaults(run=admin.groups_describe)
    p = g.add_parser("lag", help="committed offset, log end and lag per partition")
    p.add_argument("group", metavar="GROUP")
    p.add_argument("--topic", action="append", default=[], help="every partition of TOPIC")
    p.add_argument(
        "--watch", action="store_true", help="redraw the table every interval until interrupted"
    )
    p.add_argument(
        "--interval", type=float, default=2.0, metavar="SECONDS", help="--watch's (default 2)"
    )
    p.set_defaults(run=admin.groups_lag)
    p = g.add_parser("delete", help="delete groups (and their offsets)")
    p.add_argument("groups", nargs="+", metavar="GROUP")
    p.set_defaults(run=admin.groups_delete)
    p = g.add_parser("reset-offsets", help="move a group's offsets (a dry run unless --execute)")
    p.add_argument("group", metavar="GROUP")
    p.add_argument(
        "--topic", action="append", required=True, metavar="TOPIC[:P,...]", help="repeatable"
    )
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=_non_negative, metavar="N")
    to.add_argument("--shift-by", type=int, metavar="N")
    to.add_argument("--to-datetime", metavar="ISO8601|MS", help="e.g. 2026-01-31T12:00:00Z")
    p.add_argument("--execute", action="store_true", help="apply (default: only show)")
    p.set_defaults(run=admin.groups_reset_offsets)

    shares = commands.add_parser(
        "share-groups", help="share groups (KIP-932): list, describe, offsets, reset, delete"
    )
    sg = shares.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = sg.add_parser("list", help="share groups")
    p.add_argument("--state", action="append", default=[], help="only groups in this state")
    p.set_defaults(run=share.share_groups_list)
    p = sg.add_parser("describe", help="state, epoch, members and their partitions")
    p.add_argument("groups", nargs="+", metavar="GROUP")
    p.set_defaults(run=share.share_groups_describe)
    p = sg.add_parser("offsets", help="start offset and lag per share-partition")
    p.add_argument("group", metavar="GROUP")
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC:P[,...]")
    p.set_defaults(run=share.share_groups_offsets)
    p = sg.add_parser("reset-offsets", help="set an empty share group's start offsets")
    p.add_argument("group", metavar="GROUP")
    p.add_argument("--topic", action="append", required=True, metavar="TOPIC:P[,...]")
    p.add_argument("--to-offset", type=_non_negative, required=True, metavar="N")
    p.set_defaults(run=share.share_groups_reset_offsets)
    p = sg.add_parser("delete-offsets", help="forget an empty share group's topics")
    p.add_argument("group", metavar="GROUP")
    p.add_argument("topics", nargs="+", metavar="TOPIC")
    p.set_defaults(run=share.share_groups_delete_offsets)

    quota = commands.add_parser("quotas", help="describe, alter client quotas")
    q = quota.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action in ("describe", "alter"):
        p = q.add_parser(action, help=f"{action} the quotas of users, client ids, IPs")
        for option, _ in quotas.ENTITY_OPTIONS:
            flag = option.replace("_", "-")
            p.add_argument(f"--{flag}", metavar="NAME")
            p.add_argument(f"--{flag}-default", action="store_true", help=f"the default {flag}")
        if action == "alter":
            p.add_argument("--add", action="append", default=[], metavar="KEY=VALUE")
            p.add_argument("--delete", action="append", default=[], metavar="KEY")
            p.add_argument("--validate-only", action="store_true")
        p.set_defaults(run=quotas.quotas_alter if action == "alter" else quotas.quotas_describe)

    transactions = commands.add_parser(
        "transactions", help="list, describe, describe-producers, find-hanging, abort"
    )
    x = transactions.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = x.add_parser("list", help="transactional ids the coordinators know")
    p.add_argument("--state", action="append", default=[], help="only in this state (Ongoing...)")
    p.add_argument("--producer-id", action="append", type=_non_negative, default=[])
    p.add_argument("--min-duration-ms", type=_non_negative, help="open at least this long")
    p.add_argument("--pattern", metavar="REGEX", help="transactional ids matching (Kafka 4.1+)")
    p.set_defaults(run=txn.transactions_list)
    p = x.add_parser("describe", help="a transactional id's state at its coordinator")
    p.add_argument("transactional_ids", nargs="+", metavar="TRANSACTIONAL_ID")
    p.set_defaults(run=txn.transactions_describe)
    p = x.add_parser("describe-producers", help="the producers of one partition")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=_non_negative, required=True)
    p.add_argument("--broker-id", type=_non_negative, help="ask this replica, not the leader")
    p.set_defaults(run=txn.transactions_describe_producers)
    p = x.add_parser("find-hanging", help="open transactions their coordinator lost")
    p.add_argument("--topic", metavar="TOPIC[:P,...]")
    p.add_argument("--broker-id", type=_non_negative, help="every partition this broker hosts")
    p.add_argument(
        "--max-transaction-timeout",
        type=_non_negative,
        default=15,
        metavar="MINUTES",
        help="the brokers' transaction.max.timeout.ms in minutes (default 15)",
    )
    p.set_defaults(run=txn.transactions_find_hanging)
    p = x.add_parser("abort", help="write an ABORT marker for a hanging transaction")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=_non_negative, required=True)
    p.add_argument("--start-offset", type=_non_negative, required=True)
    p.set_defaults(run=txn.transactions_abort)

    p = commands.add_parser("produce", help="one record per line of stdin or a file")
    _topic_arguments(p)
    p.add_argument("-f", "--file", help="read lines from FILE (default: stdin)")
    p.add_argument("-K", "--key-separator", metavar="SEP", help="KEY<SEP>VALUE lines")
    p.add_argument("-H", "--header", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("-p", "--partition", type=_non_negative)
    p.add_argument("-z", "--codec", choices=sorted(CODECS), default="none")
    p.add_argument("--rate", type=_rate, metavar="MSGS/S", help="records per second at most")
    p.add_argument("--acks", type=int, choices=(-1, 0, 1), default=-1)
    p.add_argument("--linger-ms", type=_non_negative, default=5)
    _schema_options(p)
    for part in ("key", "value"):
        p.add_argument(
            f"--{part}-schema",
            metavar="FILE",
            help=f"register the {part} schema in FILE (default: the subject's latest)",
        )
    _kafka_properties(p, "parse.key, key.separator")
    p.set_defaults(run=produce)

    p = commands.add_parser("consume", help="records to stdout")
    _topic_arguments(p)
    p.add_argument(
        "-o",
        "--offset",
        default="end",
        help="beginning|earliest, end|latest (default), stored, N, -N (N before the end), "
        "s@TIMESTAMP_MS",
    )
    p.add_argument(
        "--from-beginning",
        dest="offset",
        action="store_const",
        const="beginning",
        help="-o beginning (Kafka's console consumer's spelling)",
    )
    p.add_argument("-G", "--group", help="consume as a member of GROUP (commits offsets)")
    p.add_argument("-p", "--partition", type=_non_negative)
    p.add_argument("-c", "--count", type=_positive, help="exit after COUNT records")
    p.add_argument(
        "-e", "--exit-at-end", action="store_true", help="exit at the end of each partition"
    )
    p.add_argument("-f", "--format", help="kcat format: %%t %%p %%o %%k %%s %%K %%S %%T %%h")
    p.add_argument("-K", "--key-separator", metavar="SEP", help="print KEY<SEP>VALUE")
    p.add_argument("--session-timeout-ms", type=_positive, default=10000)
    _schema_options(p)
    _kafka_properties(
        p, "print.key, key.separator, print.timestamp, print.partition, print.offset, print.value"
    )
    p.set_defaults(run=consume)

    p = commands.add_parser(
        "broker",
        help="a development broker on 127.0.0.1 (Apache Kafka where Java is installed)",
        global_options=False,
    )
    p.add_argument("--port", type=_port, default=9092, help="port to listen on (default 9092)")
    p.set_defaults(run=None, local=broker)
    return parser


def _schema_options(p: argparse.ArgumentParser) -> None:
    """``--key-format``, ``--value-format`` and ``--schema-registry`` (see ``_schema_formats``)."""
    for part in ("key", "value"):
        p.add_argument(
            f"--{part}-format",
            choices=SCHEMA_FORMATS,
            help=f"{part}s in the Confluent wire format, as JSON (needs --schema-registry)",
        )
    p.add_argument("--schema-registry", metavar="URL", help="the Schema Registry's URL")

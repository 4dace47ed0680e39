"""The ``afkak`` command: topics, cluster, groups, produce and consume from a shell.

An integration layer over the admin client, Producer, ConsumerGroup and
KafkaClient.  ``main()`` is the console script (and ``python -m afkak``);
see ``docs/cli.rst``.
"""

from __future__ import annotations

import sys

from ._output import USAGE
from ._parser import build_parser
from ._runner import run
from ._session import in_session


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    if args.run is None:  # a command that connects to nothing (afkak broker)
        return int(args.local(args))
    try:
        compile_checks(args)
    except ValueError as e:
        sys.stderr.write(f"afkak: error: {e}\n")
        return USAGE
    return run(in_session(args.run, args))


def compile_checks(args: object) -> None:
    """Check what argparse cannot before connecting (format strings, offsets)."""
    from ._consume import parse_offset
    from ._format import compile_format, console_consumer_format, console_producer_separator

    if getattr(args, "format", None):
        compile_format(args.format)  # type: ignore[attr-defined]
    command = getattr(args, "command", None)
    if command in ("produce", "consume") and getattr(args, "topic", None) is None:
        raise ValueError(f"{command} needs a TOPIC (or --topic TOPIC)")
    if command == "consume":
        parse_offset(args.offset)  # type: ignore[attr-defined]
        console_consumer_format(args.property)  # type: ignore[attr-defined]
    if command == "produce":
        console_producer_separator(args.property)  # type: ignore[attr-defined]


__all__ = ["main"]

"""One command's connection: the KafkaClient and admin client built from the options."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from afkak.admin import KafkaAdminClient
from afkak.client import KafkaClient

from ._config import bootstrap, client_options, read_properties
from ._output import Output


class Session:
    """What a command works with; :meth:`close` releases the connections."""

    def __init__(
        self, args: argparse.Namespace, reactor: Any, client: KafkaClient | None = None
    ) -> None:
        """*client*: an existing KafkaClient (tests) instead of one built from the options."""
        if client is None:
            path = args.command_config
            options = client_options(read_properties(path)) if path else {}
            options.setdefault("clientId", "afkak-cli")
            options.setdefault("timeout", int(args.timeout * 1000))
            hosts = bootstrap(args.bootstrap or options.pop("hosts", None))
            client = KafkaClient(hosts, reactor=reactor, **options)
        self.args = args
        self.reactor = reactor
        self.client = client
        self.admin = KafkaAdminClient(self.client)
        self.out = Output(args.json)
        #: Whether to show progress: stderr is a terminal and --no-progress was not given.
        self.interactive = sys.stderr.isatty() and not args.no_progress
        #: The Schema Registry client of ``--schema-registry`` (made when first needed).
        self.schema_registry: Any = None
        #: ``consume``'s (key, value) Schema Registry deserializers, if any.
        self.deserializers: tuple[Any, Any] | None = None

    async def close(self) -> None:
        await self.client.close()


Command = Callable[[Session], Coroutine[Any, Any, int | None]]


def in_session(command: Command, args: argparse.Namespace) -> Callable[[Any], Any]:
    """``command`` as a runner function: connect, run, always close."""

    async def run(reactor: Any) -> int | None:
        session = Session(args, reactor)
        try:
            return await command(session)
        finally:
            await session.close()

    return run

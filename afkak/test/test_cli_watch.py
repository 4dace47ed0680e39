"""``afkak groups lag GROUP --watch``: redrawn every interval until interrupted, as rich
tables on a terminal and as JSON lines with ``--json``, on the fake cluster's Clock."""

from __future__ import annotations

import io
import json
from typing import Any

from rich.console import Console
from twisted.internet.defer import CancelledError, Deferred
from twisted.trial.unittest import SynchronousTestCase

from afkak.cli._output import USAGE, Output, error_of
from afkak.cli._parser import build_parser
from afkak.cli._session import Session
from afkak.cli._watch import watch_lag
from afkak.test.test_admin import on_fake_cluster


class WatchLagTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock, self.cluster, self.client = on_fake_cluster(self)
        self.cluster.create_topic("t", 2, 1)
        self.cluster.append("t", 0, [b"a", b"b", b"c"])
        self.cluster.commit("g", "t", 0, 1)
        self.cluster.commit("g", "t", 1, 0)

    def session(self, *argv: str) -> Session:
        args = build_parser().parse_args([*argv, "groups", "lag", "g", "--watch"])
        session = Session(args, self.clock, self.client)
        session.out = Output(args.json, io.StringIO())
        return session

    def test_json_lines_each_interval_until_cancelled(self) -> None:
        s = self.session("--json")
        s.args.interval = 5.0
        d = Deferred.fromCoroutine(watch_lag(s))
        self.clock.advance(4.9)
        self.cluster.append("t", 1, [b"x", b"y"])  # lag appears on partition 1
        self.cluster.commit("g", "t", 0, 3)  # and goes on partition 0
        self.clock.advance(0.1)
        self.clock.advance(5.0)
        d.cancel()
        self.failureResultOf(d, CancelledError)
        lines = [json.loads(line) for line in s.out.stream.getvalue().splitlines()]
        self.assertEqual([doc["total_lag"] for doc in lines], [2, 2, 2])
        first, second, _ = lines
        self.assertEqual(
            first["partitions"],
            [
                {"topic": "t", "partition": 0, "committed": 1, "log_end": 3, "lag": 2},
                {"topic": "t", "partition": 1, "committed": 0, "log_end": 0, "lag": 0},
            ],
        )
        self.assertEqual([p["lag"] for p in second["partitions"]], [0, 2])
        self.assertEqual(first["group"], "g")
        self.assertEqual(first["time"], "1970-01-01T00:00:00+00:00")

    def test_rich_table_redrawn_in_place(self) -> None:
        s = self.session()
        screen = io.StringIO()
        console = Console(file=screen, force_terminal=True, width=80, color_system=None)
        d = Deferred.fromCoroutine(watch_lag(s, console))
        first = screen.getvalue()
        self.assertIn("total lag 2", first)
        self.assertRegex(first, r"t\s*│\s*0\s*│\s*1\s*│\s*3\s*│\s*2")
        self.cluster.commit("g", "t", 0, 3)
        self.clock.advance(2.0)  # the default interval
        redrawn = screen.getvalue()[len(first) :]
        self.assertIn("total lag 0", redrawn)
        self.assertIn("\x1b[", redrawn)  # the cursor moved back over the old table
        d.cancel()
        self.failureResultOf(d, CancelledError)

    def test_interval_must_be_positive(self) -> None:
        s = self.session("--json")
        s.args.interval = 0
        d: Deferred[Any] = Deferred.fromCoroutine(watch_lag(s))
        self.assertEqual(error_of(self.failureResultOf(d).value).code, USAGE)

    def test_without_watch_one_table(self) -> None:
        args = build_parser().parse_args(["--json", "groups", "lag", "g", "--interval", "1"])
        self.assertFalse(args.watch)

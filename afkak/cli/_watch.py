"""``groups lag --watch``: the lag table redrawn every interval until interrupted.

On a terminal the table is redrawn in place with rich (``afkak[cli]``); with
``--json`` each refresh is one JSON line (``{"group", "time", "total_lag",
"partitions": [...]}``), for scripts that follow a group's lag.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from twisted.internet.task import deferLater

from ._output import NOT_FOUND, USAGE, CommandError, item_error
from ._session import Session

COLUMNS = ("topic", "partition", "committed", "log_end", "lag")
Row = tuple[str, int, int | None, int, int | None]


async def lag_rows(s: Session) -> list[Row]:
    lags = await s.admin.group_lag(s.args.group, s.args.topic or None)
    topics = s.args.topic
    missing = topics and not {tp.topic for tp in lags}.issuperset(topics)
    if missing or all(lag.committed < 0 for lag in lags.values()):
        await _check_known(s)  # a typo must not read as "no lag"
    return [
        (tp.topic, tp.partition, lag.committed, lag.log_end, lag.lag)
        for tp, lag in sorted(lags.items())
    ]


async def _check_known(s: Session) -> None:
    """Raise (exit 4) if a ``--topic`` or the group is unknown."""
    if s.args.topic:
        for topic, described in (await s.admin.describe_topics(s.args.topic)).items():
            if described.error is not None:
                raise item_error(f"topic {topic}", described.error)
    group = s.args.group
    found = (await s.admin.describe_consumer_groups([group]))[group]
    if found.error is not None:
        raise item_error(f"group {group}", found.error)
    if found.state == "Dead":
        raise CommandError(f"group {group}: unknown (no members, no committed offsets)", NOT_FOUND)


def total(rows: Sequence[Row]) -> int:
    return sum(row[4] or 0 for row in rows)


def lag_table(group: str, rows: Sequence[Row], at: str) -> Any:
    """A rich Table of the rows, titled with the group, the time and the total lag."""
    from rich.table import Table

    table = Table(title=f"{group}  {at}  total lag {total(rows)}", title_justify="left")
    for column in COLUMNS:
        table.add_column(column, justify="left" if column == "topic" else "right")
    for row in rows:
        table.add_row(*("-" if cell is None else str(cell) for cell in row))
    return table


def _now(s: Session) -> str:
    at = datetime.datetime.fromtimestamp(s.reactor.seconds(), datetime.UTC)
    return at.isoformat(timespec="seconds")


async def watch_lag(s: Session, console: Any = None) -> int:
    """Refresh every ``--interval`` seconds until cancelled (Ctrl-C)."""
    interval = s.args.interval
    if interval <= 0:
        raise CommandError(f"--interval must be positive, not {interval}", USAGE)
    group = s.args.group
    if s.out.as_json:
        while True:
            rows = await lag_rows(s)
            partitions = [dict(zip(COLUMNS, row, strict=True)) for row in rows]
            s.out.json(
                {
                    "group": group,
                    "time": _now(s),
                    "total_lag": total(rows),
                    "partitions": partitions,
                }
            )
            s.out.stream.flush()
            await deferLater(s.reactor, interval)
    try:
        from rich.console import Console
        from rich.live import Live
    except ImportError:
        raise CommandError("--watch needs rich: pip install 'afkak[cli]'", USAGE) from None
    console = Console(file=s.out.stream) if console is None else console
    with Live(console=console, auto_refresh=False, transient=False) as live:
        while True:
            rows = await lag_rows(s)
            live.update(lag_table(group, rows, _now(s)), refresh=True)
            await deferLater(s.reactor, interval)

"""``afkak quotas describe|alter``: client quotas, as ``kafka-configs --entity-type
users|clients|ips`` reads and sets them."""

from __future__ import annotations

from typing import Any

from afkak.admin import QuotaEntity, QuotaFilter

from ._admin_commands import _raise_first, key_values
from ._output import OK
from ._session import Session

#: The CLI's entity options and Kafka's entity types.
ENTITY_OPTIONS = (("user", "user"), ("client_id", "client-id"), ("ip", "ip"))


def _named(args: Any) -> dict[str, str | None]:
    """The entity the options name: ``--user NAME`` (``--user-default``: the default)."""
    named: dict[str, str | None] = {}
    for option, entity_type in ENTITY_OPTIONS:
        name = getattr(args, option)
        if getattr(args, f"{option}_default"):
            named[entity_type] = None
        elif name is not None:
            named[entity_type] = name
    return named


async def quotas_describe(s: Session) -> int:
    filters = [
        QuotaFilter.default(t) if name is None else QuotaFilter.exact(t, name)
        for t, name in _named(s.args).items()
    ]
    found = await s.admin.describe_client_quotas(filters)
    rows = [
        (
            ",".join(f"{t}={'<default>' if n is None else n}" for t, n in entity.parts),
            ",".join(f"{k}={v}" for k, v in sorted(values.items())),
        )
        for entity, values in sorted(found.items(), key=lambda kv: repr(kv[0].parts))
    ]
    s.out.table(["entity", "quotas"], rows)
    return OK


async def quotas_alter(s: Session) -> int:
    a = s.args
    named = _named(a)
    if not named:
        raise ValueError("name an entity: --user, --client-id, --ip (or their -default)")
    ops: dict[str, float | None] = {}
    for key, value in key_values(a.add, "--add").items():
        try:
            ops[key] = float(value)
        except ValueError:
            raise ValueError(f"--add takes KEY=NUMBER, not {key}={value}") from None
    ops.update(dict.fromkeys(a.delete))
    if not ops:
        raise ValueError("nothing to change: give --add KEY=VALUE or --delete KEY")
    entity = QuotaEntity(named)
    results = await s.admin.alter_client_quotas({entity: ops}, validate_only=a.validate_only)
    _raise_first(results, "quota entity")
    s.out.lines([f"quotas of {entity.as_dict} changed: {len(ops)}"], {"changed": len(ops)})
    return OK

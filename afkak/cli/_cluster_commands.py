"""``afkak features`` and ``afkak cluster quorum``: what ``kafka-features`` and
``kafka-metadata-quorum`` show and do, with the admin client."""

from __future__ import annotations

from afkak.admin import FeatureUpdate, FeatureUpgradeType

from ._admin_commands import _raise_first, key_values
from ._output import OK
from ._session import Session


async def features_describe(s: Session) -> int:
    f = await s.admin.describe_features()
    rows = [
        (
            name,
            supported.min_version,
            supported.max_version,
            f.finalized[name].max_version if name in f.finalized else 0,
            f.finalized_epoch,
        )
        for name, supported in sorted(f.supported.items())
    ]
    s.out.table(["feature", "supported_min", "supported_max", "finalized", "epoch"], rows)
    return OK


async def features_update(s: Session) -> int:
    """``features upgrade|downgrade --feature NAME=LEVEL ...``."""
    a = s.args
    how = (
        FeatureUpgradeType.UPGRADE
        if a.action == "upgrade"
        else FeatureUpgradeType.UNSAFE_DOWNGRADE
        if a.unsafe
        else FeatureUpgradeType.SAFE_DOWNGRADE
    )
    levels = key_values(a.feature, "--feature")
    try:
        updates = {name: FeatureUpdate(int(level), how) for name, level in levels.items()}
    except ValueError:
        raise ValueError(f"--feature takes NAME=LEVEL with a number, not {a.feature!r}") from None
    results = await s.admin.update_features(updates, validate_only=a.dry_run)
    _raise_first(results, "feature")
    verb = "would be set" if a.dry_run else "set"
    s.out.lines(
        [f"{name} {verb} to {u.max_version_level}" for name, u in updates.items()],
        {name: u.max_version_level for name, u in updates.items()},
    )
    return OK


async def cluster_quorum(s: Session) -> int:
    q = await s.admin.describe_metadata_quorum()
    replicas = [("voter", r) for r in q.voters] + [("observer", r) for r in q.observers]
    if s.args.replication:
        s.out.table(
            ["node", "status", "log_end_offset", "lag", "last_fetch_ms", "last_caught_up_ms"],
            [
                (
                    r.replica_id,
                    "leader" if r.replica_id == q.leader_id else kind,
                    r.log_end_offset,
                    q.high_watermark - r.log_end_offset,
                    r.last_fetch_timestamp,
                    r.last_caught_up_timestamp,
                )
                for kind, r in replicas
            ],
        )
        return OK
    lag = max((q.high_watermark - r.log_end_offset for _, r in replicas), default=0)
    data = {
        "leader": q.leader_id,
        "leader_epoch": q.leader_epoch,
        "high_watermark": q.high_watermark,
        "max_follower_lag": lag,
        "voters": [r.replica_id for r in q.voters],
        "observers": [r.replica_id for r in q.observers],
    }
    s.out.lines([f"{k}: {v}" for k, v in data.items()], data)
    return OK

"""ACLs (DescribeAcls 29, CreateAcls 30, DeleteAcls 31) and SCRAM credentials
(DescribeUserScramCredentials 50, AlterUserScramCredentials 51).

SCRAM passwords are salted and hashed here (RFC 5802's Hi(), as Kafka's own
admin client does): only the salted password goes over the wire.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Any

from afkak.client._interlayer import VersionedCall
from afkak.common import BrokerResponseError
from afkak.protocol.messages import (
    AlterUserScramCredentialsRequest,
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeUserScramCredentialsRequest,
)

from ._types import (
    AclBinding,
    AclDeletion,
    ItemResult,
    ScramCredentialInfo,
    ScramDeletion,
    ScramMechanism,
    ScramUpsertion,
    UserScramCredentials,
    _error_or_none,
    left_out,
)

_HASHES = {ScramMechanism.SCRAM_SHA_256: "sha256", ScramMechanism.SCRAM_SHA_512: "sha512"}


def _wire(b: AclBinding) -> tuple[Any, ...]:
    """A binding (or filter) as the 7 fields CreateAcls and DeleteAcls carry, in order."""
    return (
        int(b.resource_type),
        b.resource_name,
        int(b.pattern_type),
        b.principal,
        b.host,
        int(b.operation),
        int(b.permission),
    )


def _binding(r: Any, a: Any) -> AclBinding:
    return AclBinding(
        r.resource_type,
        r.resource_name,
        a.principal,
        a.host,
        a.operation,
        a.permission_type,
        r.pattern_type,
    )


class DescribeAclsCall(VersionedCall):
    request_class = DescribeAclsRequest

    def __init__(self, acl_filter: AclBinding) -> None:
        self.filter = acl_filter

    def build(self, version: int) -> Any:
        f = self.filter
        return DescribeAclsRequest(
            resource_type_filter=int(f.resource_type),
            resource_name_filter=f.resource_name,
            pattern_type_filter=int(f.pattern_type),
            principal_filter=f.principal,
            host_filter=f.host,
            operation=int(f.operation),
            permission_type=int(f.permission),
        )

    def parse(self, response: Any) -> list[AclBinding]:
        BrokerResponseError.raise_for_errno(
            response.error_code, *((response.error_message,) if response.error_message else ())
        )
        return [_binding(r, a) for r in response.resources for a in r.acls]


class CreateAclsCall(VersionedCall):
    request_class = CreateAclsRequest

    def __init__(self, bindings: Sequence[AclBinding]) -> None:
        self.bindings = bindings

    def build(self, version: int) -> Any:
        R = CreateAclsRequest
        return R(creations=[R.AclCreation(*_wire(b)) for b in self.bindings])

    def parse(self, response: Any) -> list[ItemResult]:
        results = [
            ItemResult(_error_or_none(r.error_code, r.error_message)) for r in response.results
        ]
        missing = len(self.bindings) - len(results)
        return results + [ItemResult(left_out("the binding"))] * missing


class DeleteAclsCall(VersionedCall):
    request_class = DeleteAclsRequest

    def __init__(self, filters: Sequence[AclBinding]) -> None:
        self.filters = filters

    def build(self, version: int) -> Any:
        R = DeleteAclsRequest
        return R(filters=[R.DeleteAclsFilter(*_wire(f)) for f in self.filters])

    def parse(self, response: Any) -> list[AclDeletion]:
        return [
            AclDeletion(
                tuple(
                    AclBinding(
                        m.resource_type,
                        m.resource_name,
                        m.principal,
                        m.host,
                        m.operation,
                        m.permission_type,
                        m.pattern_type,
                    )
                    for m in r.matching_acls
                    if not m.error_code
                ),
                _error_or_none(r.error_code, r.error_message),
            )
            for r in response.filter_results
        ]


class DescribeScramCall(VersionedCall):
    request_class = DescribeUserScramCredentialsRequest

    def __init__(self, users: Sequence[str] | None) -> None:
        self.users = users

    def build(self, version: int) -> Any:
        # Every user is asked for with an empty array, as Kafka's Java client does: Kafka
        # (4.4 at least) fails to answer a null from a principal it does not authorize.
        R = DescribeUserScramCredentialsRequest
        return R(users=[R.UserName(u) for u in self.users or ()])

    def parse(self, response: Any) -> list[Any]:
        BrokerResponseError.raise_for_errno(
            response.error_code, *((response.error_message,) if response.error_message else ())
        )
        return [
            {
                r.user: UserScramCredentials(
                    r.user,
                    tuple(
                        ScramCredentialInfo(c.mechanism, c.iterations) for c in r.credential_infos
                    ),
                    _error_or_none(r.error_code, r.error_message),
                )
                for r in response.results
            }
        ]


def salted_password(upsertion: ScramUpsertion, salt: bytes) -> bytes:
    """RFC 5802 Hi(password, salt, iterations) with the mechanism's hash."""
    return hashlib.pbkdf2_hmac(
        _HASHES[upsertion.mechanism], upsertion.password.encode("utf-8"), salt, upsertion.iterations
    )


class AlterScramCall(VersionedCall):
    request_class = AlterUserScramCredentialsRequest

    def __init__(self, changes: Sequence[ScramUpsertion | ScramDeletion]) -> None:
        for c in changes:
            if c.mechanism not in _HASHES:
                raise ValueError(f"unknown SCRAM mechanism in {c!r}")
        self.changes = changes

    def build(self, version: int) -> Any:
        R = AlterUserScramCredentialsRequest
        upsertions = []
        for c in self.changes:
            if isinstance(c, ScramUpsertion):
                salt = c.salt if c.salt is not None else os.urandom(32)
                upsertions.append(
                    R.ScramCredentialUpsertion(
                        c.user, int(c.mechanism), c.iterations, salt, salted_password(c, salt)
                    )
                )
        return R(
            deletions=[
                R.ScramCredentialDeletion(c.user, int(c.mechanism))
                for c in self.changes
                if isinstance(c, ScramDeletion)
            ],
            upsertions=upsertions,
        )

    def parse(self, response: Any) -> list[Any]:
        results = {c.user: ItemResult(left_out("the user")) for c in self.changes}
        for r in response.results:
            results[r.user] = ItemResult(_error_or_none(r.error_code, r.error_message))
        return [results]

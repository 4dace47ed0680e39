"""AWS MSK IAM authentication: OAUTHBEARER with a token signed by AWS's own signer.

MSK's IAM listeners take, as an OAUTHBEARER token, a SigV4-presigned
``kafka-cluster:Connect`` URL, base64url-encoded.  :class:`MskIamTokens`
makes it with ``aws-msk-iam-sasl-signer-python`` (the ``afkak[msk-iam]``
extra), from the default credential chain, a named profile or an assumed
role.  The signer looks credentials up through botocore, which reads files
and may call STS or the instance metadata service: it blocks, so it runs in a
thread pool (the reactor's by default), never on the reactor thread.  Tokens
live 15 minutes; :class:`~afkak.OAuthBearer` replaces them before that.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.python.failure import Failure

from afkak._broker_errors import SaslAuthenticationFailed
from afkak.connection._sasl_mechanisms import OAuthBearerToken


class MskIamError(SaslAuthenticationFailed):
    """No MSK IAM token could be signed: no AWS credentials, an unknown profile,
    an assume-role refused."""


def _signer() -> Any:
    try:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider  # type: ignore[import-untyped]
    except ImportError:
        raise ImportError(
            "AWS MSK IAM authentication needs aws-msk-iam-sasl-signer-python: "
            "pip install 'afkak[msk-iam]'"
        ) from None
    return MSKAuthTokenProvider


class MskIamTokens:
    """Token provider for :class:`~afkak.OAuthBearer` on an MSK IAM listener.

    :param region: the cluster's AWS region (``us-east-1``...).
    :param profile: a named profile of the AWS configuration files, else the
        default credential chain (environment, files, instance role...).
    :param role_arn: a role to assume (through STS) for each token.
    :param session_name: the assumed role's session name.
    :param credentials_provider: a ``botocore.credentials.CredentialProvider``
        to use instead of all the above.
    :param reactor: runs the signer in its thread pool; the global reactor by default.
    :param threadpool: the pool to sign in instead of the reactor's.
    """

    def __init__(
        self,
        region: str,
        *,
        profile: str | None = None,
        role_arn: str | None = None,
        session_name: str | None = None,
        credentials_provider: Any = None,
        reactor: Any = None,
        threadpool: Any = None,
    ) -> None:
        if not isinstance(region, str) or not region:
            raise TypeError("region must be a non-empty str")
        if sum(x is not None for x in (profile, role_arn, credentials_provider)) > 1:
            raise ValueError("give at most one of profile, role_arn and credentials_provider")
        if session_name is not None and role_arn is None:
            raise ValueError("session_name goes with role_arn")
        signer = _signer()
        if reactor is None:
            from twisted.internet import reactor
        self.region = region
        self.profile = profile
        self.role_arn = role_arn
        self._reactor = reactor
        self._threadpool = threadpool
        self._sign: Callable[[], tuple[str, int]]
        if credentials_provider is not None:
            self._sign = lambda: signer.generate_auth_token_from_credentials_provider(
                region, credentials_provider
            )
        elif role_arn is not None:
            self._sign = lambda: signer.generate_auth_token_from_role_arn(
                region, role_arn, *([session_name] if session_name else [])
            )
        elif profile is not None:
            self._sign = lambda: signer.generate_auth_token_from_profile(region, profile)
        else:
            self._sign = lambda: signer.generate_auth_token(region)

    def __repr__(self) -> str:
        source = self.role_arn or (f"profile {self.profile}" if self.profile else "default")
        return f"<MskIamTokens {self.region} {source}>"

    def __call__(self) -> Deferred[OAuthBearerToken]:
        """A freshly signed token; fails with :class:`MskIamError`."""
        pool = self._threadpool or self._reactor.getThreadPool()
        signed: Deferred[tuple[str, int]] = deferToThreadPool(self._reactor, pool, self._sign)
        return signed.addCallbacks(self._token, self._failed)

    def _token(self, signed: tuple[str, int]) -> OAuthBearerToken:
        value, expires_ms = signed
        return OAuthBearerToken(value, expires_ms / 1000)

    def _failed(self, failure: Failure) -> Failure:
        error = failure.value
        raise MskIamError(
            f"AWS MSK IAM: cannot sign a token for region {self.region}: "
            f"{type(error).__name__}: {error}"
        ) from None

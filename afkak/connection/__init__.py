"""One connection to one Kafka broker: framing, version negotiation, pipelining, reconnection.

What afkak's own layers share beyond these names (the transition table and its
inputs, the choice of a request version) is in :mod:`afkak.connection._interlayer`,
not part of the public API.
"""

from typing import TYPE_CHECKING

from afkak._lazy import lazy_names
from afkak.connection._connection import (
    Authenticator,
    BrokerConnection,
    Send,
    default_endpoint_factory,
)
from afkak.connection._lifecycle import State
from afkak.connection._request import RequestBuilder, VersionedRequest
from afkak.connection.framing import DEFAULT_MAX_FRAME_SIZE, FramedProtocol, FrameTooLargeError

if TYPE_CHECKING:
    from afkak.connection._gssapi import GSSAPI, GSSAPIUnavailable
    from afkak.connection._keystores import KeyStore, TrustStore
    from afkak.connection._msk_iam import MskIamError, MskIamTokens
    from afkak.connection._oauth_oidc import ClientCredentials, TokenEndpointError
    from afkak.connection._sasl import SaslAuthenticator, SaslConversation, SaslMechanism
    from afkak.connection._sasl_mechanisms import (
        LoginRefresh,
        OAuthBearer,
        OAuthBearerToken,
        Plain,
        Scram,
        ScramSha256,
        ScramSha512,
    )
    from afkak.connection._tls import TLS, TLSHandshakeError, tls_endpoint_factory

#: Where the names of authentication and TLS live, imported on first use (PEP 562):
#: a connection in plaintext without SASL (a Spark runner's, a test's) needs none.
_LAZY = {
    "GSSAPI": "afkak.connection._gssapi",
    "GSSAPIUnavailable": "afkak.connection._gssapi",
    "KeyStore": "afkak.connection._keystores",
    "TrustStore": "afkak.connection._keystores",
    "MskIamError": "afkak.connection._msk_iam",
    "MskIamTokens": "afkak.connection._msk_iam",
    "ClientCredentials": "afkak.connection._oauth_oidc",
    "TokenEndpointError": "afkak.connection._oauth_oidc",
    "SaslAuthenticator": "afkak.connection._sasl",
    "SaslConversation": "afkak.connection._sasl",
    "SaslMechanism": "afkak.connection._sasl",
    "LoginRefresh": "afkak.connection._sasl_mechanisms",
    "OAuthBearer": "afkak.connection._sasl_mechanisms",
    "OAuthBearerToken": "afkak.connection._sasl_mechanisms",
    "Plain": "afkak.connection._sasl_mechanisms",
    "Scram": "afkak.connection._sasl_mechanisms",
    "ScramSha256": "afkak.connection._sasl_mechanisms",
    "ScramSha512": "afkak.connection._sasl_mechanisms",
    "TLS": "afkak.connection._tls",
    "TLSHandshakeError": "afkak.connection._tls",
    "tls_endpoint_factory": "afkak.connection._tls",
}

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "Authenticator",
    "BrokerConnection",
    "ClientCredentials",
    "FrameTooLargeError",
    "FramedProtocol",
    "GSSAPI",
    "GSSAPIUnavailable",
    "KeyStore",
    "LoginRefresh",
    "MskIamError",
    "MskIamTokens",
    "OAuthBearer",
    "OAuthBearerToken",
    "Plain",
    "RequestBuilder",
    "SaslAuthenticator",
    "SaslConversation",
    "SaslMechanism",
    "Scram",
    "ScramSha256",
    "ScramSha512",
    "Send",
    "State",
    "TLS",
    "TLSHandshakeError",
    "TokenEndpointError",
    "TrustStore",
    "VersionedRequest",
    "default_endpoint_factory",
    "tls_endpoint_factory",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), __all__)

"""One connection to one Kafka broker: framing, version negotiation, pipelining, reconnection.

What afkak's own layers share beyond these names (the transition table and its
inputs, the choice of a request version) is in :mod:`afkak.connection._interlayer`,
not part of the public API.
"""

from afkak.connection._connection import (
    Authenticator,
    BrokerConnection,
    Send,
    default_endpoint_factory,
)
from afkak.connection._gssapi import GSSAPI, GSSAPIUnavailable
from afkak.connection._keystores import KeyStore, TrustStore
from afkak.connection._lifecycle import State
from afkak.connection._msk_iam import MskIamError, MskIamTokens
from afkak.connection._oauth_oidc import ClientCredentials, TokenEndpointError
from afkak.connection._request import RequestBuilder, VersionedRequest
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
from afkak.connection.framing import DEFAULT_MAX_FRAME_SIZE, FramedProtocol, FrameTooLargeError

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

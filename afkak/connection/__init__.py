"""One connection to one Kafka broker: framing, version negotiation, pipelining, reconnection."""

from afkak.connection._connection import (
    Authenticator,
    BrokerConnection,
    Send,
    default_endpoint_factory,
)
from afkak.connection._lifecycle import TRANSITIONS, Event, State
from afkak.connection._request import RequestBuilder, VersionedRequest
from afkak.connection._sasl import SaslAuthenticator, SaslConversation, SaslMechanism
from afkak.connection._sasl_mechanisms import (
    OAuthBearer,
    OAuthBearerToken,
    Plain,
    Scram,
    ScramSha256,
    ScramSha512,
)
from afkak.connection._tls import TLS, TLSHandshakeError, tls_endpoint_factory
from afkak.connection._versions import ApiVersionRanges, choose_version
from afkak.connection.framing import DEFAULT_MAX_FRAME_SIZE, FramedProtocol, FrameTooLargeError

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "TRANSITIONS",
    "ApiVersionRanges",
    "Authenticator",
    "BrokerConnection",
    "Event",
    "FrameTooLargeError",
    "FramedProtocol",
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
    "VersionedRequest",
    "choose_version",
    "default_endpoint_factory",
    "tls_endpoint_factory",
]

"""The connection's names for afkak's own layers above it: not afkak's public API.

The transition table, its inputs and the states with an open TCP connection
(the connection's ``state`` is public, what drives it is not), the
choice of a request's version from the broker's ranges, which the client's
request builders make, and the reading of an ApiVersions answer (for Spark's
streaming runner, which asks for offsets over plain sockets).
``afkak/test/test_layers.py`` lets the other packages import this module, and
no other private one.
"""

from afkak.connection._lifecycle import CONNECTED_STATES, TRANSITIONS, Event
from afkak.connection._versions import (
    UNSUPPORTED_VERSION,
    ApiVersionRanges,
    choose_version,
    decode_api_versions,
    ranges_of,
    retry_version,
)

__all__ = [
    "CONNECTED_STATES",
    "TRANSITIONS",
    "UNSUPPORTED_VERSION",
    "ApiVersionRanges",
    "Event",
    "choose_version",
    "decode_api_versions",
    "ranges_of",
    "retry_version",
]

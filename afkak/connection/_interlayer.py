"""The connection's names for afkak's own layers above it: not afkak's public API.

The transition table, its inputs and the states with an open TCP connection
(the connection's ``state`` is public, what drives it is not), and the
choice of a request's version from the broker's ranges, which the client's
request builders make.
``afkak/test/test_layers.py`` lets the other packages import this module, and
no other private one.
"""

from afkak.connection._lifecycle import CONNECTED_STATES, TRANSITIONS, Event
from afkak.connection._versions import ApiVersionRanges, choose_version

__all__ = ["CONNECTED_STATES", "TRANSITIONS", "ApiVersionRanges", "Event", "choose_version"]

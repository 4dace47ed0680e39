"""afkak 21's ``afkak.brokerclient`` constants.

afkak 21's private ``_KafkaBrokerClient`` is replaced by
:class:`afkak.connection.BrokerConnection`; its reconnection delays come from
the ``retry_policy`` given to :class:`~afkak.client.KafkaClient` (Twisted's
``backoffPolicy()`` by default), as they did in afkak 21, where these
constants were informational.
"""

__all__ = ["INIT_DELAY_SECONDS", "MAX_RECONNECT_DELAY_SECONDS"]

#: Seconds before the first reconnection attempt.
INIT_DELAY_SECONDS = 0.1
#: Longest delay between reconnection attempts, in seconds.
MAX_RECONNECT_DELAY_SECONDS = 15

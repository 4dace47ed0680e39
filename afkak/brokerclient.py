"""afkak 21's ``afkak.brokerclient`` constants, kept for code that reads them.

afkak 21's private ``_KafkaBrokerClient`` is replaced by
:class:`afkak.connection.BrokerConnection`.  Its reconnection delays come from
the ``retry_policy`` given to :class:`~afkak.client.KafkaClient`; by default
Kafka's reconnect backoff (``reconnect.backoff.ms`` 50 ms doubling to
``reconnect.backoff.max.ms`` 1 s, with 20 % jitter: ``afkak._retry``).  These
constants are inert: afkak does not read them (setting them changes
nothing); they give afkak 21's values only.
"""

__all__ = ["INIT_DELAY_SECONDS", "MAX_RECONNECT_DELAY_SECONDS"]

#: Seconds before the first reconnection attempt.
INIT_DELAY_SECONDS = 0.1
#: Longest delay between reconnection attempts, in seconds.
MAX_RECONNECT_DELAY_SECONDS = 15

"""The cluster-aware client: metadata, routing and afkak's request API.

:class:`KafkaClient` is the public class; the modules behind it are private.
"""

from afkak.client._client import KafkaClient

__all__ = ["KafkaClient"]

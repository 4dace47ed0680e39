"""KafkaClient provides every role (typing.Protocol) the layers above type their client with.

mypy checks it statically (tox -e typecheck); this checks it where mypy does not run: every
member of each role exists on a KafkaClient, methods with the same parameters.
"""

from __future__ import annotations

import inspect
import unittest

from twisted.internet.task import Clock

from afkak.client import (
    AdminClient,
    BrokerRequests,
    ClusterMetadata,
    ConsumerClient,
    GroupRequests,
    KafkaClient,
    ProducerClient,
)

ROLES = (
    BrokerRequests,
    ClusterMetadata,
    GroupRequests,
    ProducerClient,
    ConsumerClient,
    AdminClient,
)


def members(role: type) -> set[str]:
    names = set()
    for klass in role.__mro__:
        if klass in (object,) or klass.__name__ in ("Protocol", "Generic"):
            continue
        names.update(getattr(klass, "__annotations__", {}))
        names.update(n for n in vars(klass) if not n.startswith("_"))
    return names


class RoleTests(unittest.TestCase):
    def test_kafka_client_provides_every_role(self) -> None:
        client = KafkaClient("127.0.0.1:9092", reactor=Clock())
        self.addCleanup(client.close)
        for role in ROLES:
            for name in sorted(members(role)):
                with self.subTest(role=role.__name__, member=name):
                    self.assertTrue(hasattr(client, name))
                    expected = getattr(role, name, None)
                    if inspect.isfunction(expected):
                        self.assertEqual(
                            list(inspect.signature(getattr(client, name)).parameters),
                            list(inspect.signature(expected).parameters)[1:],
                        )

    def test_the_roles_are_not_empty(self) -> None:
        self.assertGreaterEqual(len(members(ConsumerClient)), 15)
        self.assertEqual(
            members(ProducerClient),
            members(BrokerRequests)
            | members(ClusterMetadata)
            | members(GroupRequests)
            | {"max_request_size"},
        )
        self.assertEqual(members(AdminClient), members(BrokerRequests) | members(GroupRequests))
        self.assertLessEqual(members(AdminClient), members(ConsumerClient))

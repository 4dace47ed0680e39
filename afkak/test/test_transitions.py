"""afkak._transitions: the one transition-table shape, and the three machines built on it."""

from __future__ import annotations

import enum

from twisted.trial.unittest import SynchronousTestCase

from afkak._transitions import TransitionTable
from afkak.connection._lifecycle import TABLE as CONNECTION
from afkak.group._states import TABLE as MEMBER
from afkak.testing._group_state import GROUP_TABLE, GroupInput, GroupState


class Light(enum.Enum):
    OFF = "off"
    ON = "on"


class Press(enum.Enum):
    ON = "on"
    OFF = "off"


TABLE = TransitionTable(
    {(Light.OFF, Press.ON): Light.ON, (Light.ON, Press.OFF): Light.OFF},
    ignored=[(Light.ON, Press.ON)],
)


class TransitionTableTests(SynchronousTestCase):
    def test_transition_ignored_and_bug(self) -> None:
        self.assertIs(TABLE.next(Light.OFF, Press.ON), Light.ON)
        self.assertIsNone(TABLE.next(Light.ON, Press.ON))
        with self.assertRaisesRegex(RuntimeError, "no transition from OFF on OFF"):
            TABLE.next(Light.OFF, Press.OFF)

    def test_a_pair_is_a_transition_or_ignored_not_both(self) -> None:
        with self.assertRaises(ValueError):
            TransitionTable({(Light.OFF, Press.ON): Light.ON}, ignored=[(Light.OFF, Press.ON)])

    def test_the_machines_share_it(self) -> None:
        for table in (CONNECTION, MEMBER, GROUP_TABLE):
            self.assertIsInstance(table, TransitionTable)

    def test_fake_coordinator_states(self) -> None:
        """Kafka's classic group: a join while a rebalance runs joins it; DEAD is final."""
        self.assertIsNone(GROUP_TABLE.next(GroupState.PREPARING_REBALANCE, GroupInput.PREPARE))
        self.assertIsNone(GROUP_TABLE.next(GroupState.STABLE, GroupInput.COMPLETE))
        self.assertIs(
            GROUP_TABLE.next(GroupState.COMPLETING_REBALANCE, GroupInput.SYNCED), GroupState.STABLE
        )
        self.assertRaises(RuntimeError, GROUP_TABLE.next, GroupState.DEAD, GroupInput.PREPARE)
        self.assertRaises(RuntimeError, GROUP_TABLE.next, GroupState.EMPTY, GroupInput.SYNCED)

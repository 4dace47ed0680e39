"""Failures a fake cluster injects into requests: error answers and dropped connections.

Each rule applies to one API key on one broker, or on any broker when
``broker`` is None; counted rules are used up by the requests they hit.
"""

from __future__ import annotations

import attrs


@attrs.define
class _Counted:
    api_key: int
    broker: int | None
    count: int
    error_code: int = 0


class FaultPlan:
    """The pending faults of one cluster, consulted once per request."""

    def __init__(self) -> None:
        self._errors: list[_Counted] = []
        self._drops: list[_Counted] = []
        self._answer_drops: list[_Counted] = []

    def fail_next(self, api_key: int, error_code: int, count: int, broker: int | None) -> None:
        self._errors.append(_Counted(api_key, broker, count, error_code))

    def drop_next(self, api_key: int, count: int, broker: int | None) -> None:
        self._drops.append(_Counted(api_key, broker, count))

    def drop_answer_next(self, api_key: int, count: int, broker: int | None) -> None:
        self._answer_drops.append(_Counted(api_key, broker, count))

    def take_error(self, api_key: int, broker: int) -> int | None:
        """The error code the next request of ``api_key`` on ``broker`` must get, if any."""
        rule = _take(self._errors, api_key, broker)
        return None if rule is None else rule.error_code

    def take_drop(self, api_key: int, broker: int) -> bool:
        return _take(self._drops, api_key, broker) is not None

    def take_answer_drop(self, api_key: int, broker: int) -> bool:
        return _take(self._answer_drops, api_key, broker) is not None


def _take(rules: list[_Counted], api_key: int, broker: int) -> _Counted | None:
    for rule in rules:
        if rule.api_key == api_key and rule.broker in (None, broker):
            rule.count -= 1
            if rule.count <= 0:
                rules.remove(rule)
            return rule
    return None

"""Subject name strategies: under which subject a topic's key or value schema is registered."""

from __future__ import annotations

from collections.abc import Callable

SubjectNameStrategy = Callable[[str | None, bool, str | None], str]
"""``(topic, is_key, record_name) -> subject``."""


def topic_subject_name_strategy(topic: str | None, is_key: bool, record_name: str | None) -> str:
    """``<topic>-key`` / ``<topic>-value`` (the default): one schema and its evolutions
    per topic."""
    if topic is None:
        raise ValueError("the topic subject name strategy needs the serializer's topic")
    return f"{topic}-{'key' if is_key else 'value'}"


def record_subject_name_strategy(topic: str | None, is_key: bool, record_name: str | None) -> str:
    """The record's fully-qualified name: one schema per record type, on any topic."""
    if not record_name:
        raise ValueError("the record subject name strategy needs a named record schema")
    return record_name


def topic_record_subject_name_strategy(
    topic: str | None, is_key: bool, record_name: str | None
) -> str:
    """``<topic>-<record name>``: several record types on one topic."""
    if topic is None:
        raise ValueError("the topic-record subject name strategy needs the serializer's topic")
    return f"{topic}-{record_subject_name_strategy(topic, is_key, record_name)}"

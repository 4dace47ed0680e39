"""The response Kafka gives when a whole request fails with one error code.

As Kafka's ``AbstractRequest.getErrorResponse``: the code goes in every
partition, topic or group the request named, or in the top-level field.  For
an API without a builder here, a response whose schema has a top-level
``error_code`` carries it; :func:`error_response` returns None when even that
is impossible (the caller then drops the connection).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from afkak.protocol.messages import (
    ConsumerGroupDescribeResponse,
    CreateTopicsResponse,
    DescribeGroupsResponse,
    FetchResponse,
    FindCoordinatorResponse,
    InitProducerIdResponse,
    ListOffsetsResponse,
    MetadataResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    ProduceResponse,
    ShareGroupDescribeResponse,
    response_class,
)
from afkak.testing._admin_apis import ADMIN_ERROR_RESPONSES
from afkak.testing._epoch_apis import offset_for_leader_epoch_error
from afkak.testing._operator_apis import OPERATOR_ERROR_RESPONSES
from afkak.testing._share_groups import SHARE_ERROR_RESPONSES
from afkak.testing._txn_admin_apis import TXN_ADMIN_ERROR_RESPONSES
from afkak.testing._txn_coordinator import TXN_ERROR_RESPONSES


def _produce(request: Any, version: int, code: int) -> Any:
    R = ProduceResponse
    return R(
        responses=[
            R.TopicProduceResponse(
                name=t.name,
                topic_id=t.topic_id,
                partition_responses=[
                    R.PartitionProduceResponse(index=p.index, error_code=code, base_offset=-1)
                    for p in t.partition_data
                ],
            )
            for t in request.topic_data
        ]
    )


def _fetch(request: Any, version: int, code: int) -> Any:
    R = FetchResponse
    if version >= 13:  # Kafka: the top-level code only
        return R(error_code=code)
    return R(
        error_code=code,
        responses=[
            R.FetchableTopicResponse(
                topic=t.topic,
                partitions=[
                    R.PartitionData(
                        partition_index=p.partition,
                        error_code=code,
                        high_watermark=-1,
                        aborted_transactions=None,
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


def _list_offsets(request: Any, version: int, code: int) -> Any:
    R = ListOffsetsResponse
    return R(
        topics=[
            R.ListOffsetsTopicResponse(
                name=t.name,
                partitions=[
                    R.ListOffsetsPartitionResponse(
                        partition_index=p.partition_index, error_code=code
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )


def _metadata(request: Any, version: int, code: int) -> Any:
    R = MetadataResponse
    return R(
        error_code=code,
        topics=[
            R.MetadataResponseTopic(error_code=code, name=t.name, topic_id=t.topic_id)
            for t in request.topics or ()
        ],
    )


def _offset_commit(request: Any, version: int, code: int) -> Any:
    R = OffsetCommitResponse
    return R(
        topics=[
            R.OffsetCommitResponseTopic(
                name=t.name,
                topic_id=t.topic_id,
                partitions=[
                    R.OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )


def _offset_fetch(request: Any, version: int, code: int) -> Any:
    R = OffsetFetchResponse
    if version >= 8:
        return R(
            groups=[
                R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=code)
                for g in request.groups
            ]
        )
    if version >= 2:
        return R(error_code=code)
    return R(
        topics=[
            R.OffsetFetchResponseTopic(
                name=t.name,
                partitions=[
                    R.OffsetFetchResponsePartition(
                        partition_index=p, committed_offset=-1, metadata="", error_code=code
                    )
                    for p in t.partition_indexes
                ],
            )
            for t in request.topics or ()
        ]
    )


def _find_coordinator(request: Any, version: int, code: int) -> Any:
    R = FindCoordinatorResponse
    if version >= 4:
        return R(
            coordinators=[
                R.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=code)
                for k in request.coordinator_keys
            ]
        )
    return R(error_code=code, node_id=-1, host="", port=-1)


def _create_topics(request: Any, version: int, code: int) -> Any:
    R = CreateTopicsResponse
    return R(topics=[R.CreatableTopicResult(name=t.name, error_code=code) for t in request.topics])


def _init_producer_id(request: Any, version: int, code: int) -> Any:
    return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)


def _describe_groups(request: Any, version: int, code: int) -> Any:
    R = DescribeGroupsResponse
    return R(groups=[R.DescribedGroup(error_code=code, group_id=g) for g in request.groups])


def _described_groups(response: Any) -> Callable[[Any, int, int], Any]:
    """The error response of KIP-848's or KIP-932's describe: the code in every group named."""

    def build(request: Any, version: int, code: int) -> Any:
        R = response
        return R(groups=[R.DescribedGroup(error_code=code, group_id=g) for g in request.group_ids])

    return build


_BUILDERS: dict[int, Callable[[Any, int, int], Any]] = {
    0: _produce,
    1: _fetch,
    2: _list_offsets,
    3: _metadata,
    8: _offset_commit,
    9: _offset_fetch,
    10: _find_coordinator,
    15: _describe_groups,
    19: _create_topics,
    22: _init_producer_id,
    23: offset_for_leader_epoch_error,
    69: _described_groups(ConsumerGroupDescribeResponse),
    77: _described_groups(ShareGroupDescribeResponse),
    **ADMIN_ERROR_RESPONSES,
    **TXN_ERROR_RESPONSES,
    **TXN_ADMIN_ERROR_RESPONSES,
    **OPERATOR_ERROR_RESPONSES,
    **SHARE_ERROR_RESPONSES,
}


def error_response(api_key: int, request: Any, version: int, code: int) -> Any | None:
    """``request``'s response failed with ``code``; None if its schema cannot say so."""
    builder = _BUILDERS.get(api_key)
    if builder is not None:
        return builder(request, version, code)
    cls: type[Any] = response_class(api_key)
    for spec in cls.SCHEMA:
        if spec.name == "error_code" and spec.present(version) and not spec.tagged(version):
            return cls(error_code=code)
    return None

"""Partitions and offsets looked up over blocking sockets, without Twisted's reactor.

Spark starts the streaming source's runner as a new Python process per query,
and it only asks Kafka for Metadata and ListOffsets.  Through afkak's client it
would first import Twisted's reactor (which imports pyOpenSSL and
``cryptography``), start its thread and make a client.  In plaintext, it asks
over plain sockets here instead, with the client's own request builders
(:class:`MetadataCall`, :class:`ListOffsetsCall`) and the connection's
ApiVersions negotiation, one request at a time.  The client (:mod:`._worker`)
does the rest: TLS and SASL, and any lookup whose answer is not clean (an
error code, a partition without a leader, a lost connection), which it retries.
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from afkak._errors import DecodeError, NoCommonVersionError
from afkak._version import __version__
from afkak.client._interlayer import ListOffsetsCall, MetadataCall, VersionedCall, parse_hosts
from afkak.common import OFFSET_EARLIEST, BrokerResponseError, OffsetRequest, TopicAndPartition
from afkak.connection._interlayer import (
    UNSUPPORTED_VERSION,
    choose_version,
    decode_api_versions,
    ranges_of,
    retry_version,
)
from afkak.connection.framing import DEFAULT_MAX_FRAME_SIZE
from afkak.protocol.header import decode_response, encode_request
from afkak.protocol.messages import ApiVersionsRequest

from ._options import Bound, ClientConfig, ReadOptions
from ._planning import Lookups, matching, resolve_bound


class BrokerSocket(Protocol):
    """What a lookup uses of a connected socket."""

    def sendall(self, data: bytes, /) -> None: ...
    def recv(self, size: int, /) -> bytes: ...
    def close(self) -> None: ...


#: ``connect(host, port, timeout)``: a connected socket (tests connect to a fake cluster).
Connect = Callable[[str, int, float], BrokerSocket]


class Unclean(Exception):
    """An answer the client should handle instead (it retries, refreshes leaders)."""


#: What sends a lookup to the client: a lost or refused connection, an answer that does
#: not decode, no common version, a top-level error.
_UNCLEAN = (Unclean, OSError, DecodeError, NoCommonVersionError, BrokerResponseError)


def _connect(host: str, port: int, timeout: float) -> BrokerSocket:
    return socket.create_connection((host, port), timeout)


class _Broker:
    """One blocking connection: ApiVersions first, then calls at the negotiated versions."""

    def __init__(self, sock: BrokerSocket, client_id: str, address: str) -> None:
        self._sock = sock
        self._client_id = client_id
        self._address = address
        self._ids = itertools.count(1)
        self._versions = self._negotiate()

    def _negotiate(self) -> Mapping[int, tuple[int, int]]:
        request = ApiVersionsRequest(
            client_software_name="afkak", client_software_version=__version__
        )
        version = ApiVersionsRequest.MAX_VERSION
        for _ in range(2):  # at most one retry, with the version the broker named
            response = decode_api_versions(self._round_trip(request, version), version)
            if response.error_code == UNSUPPORTED_VERSION:
                version = retry_version(response, version)
                continue
            if response.error_code:
                break
            return ranges_of(response)
        raise Unclean(f"{self._address}: ApiVersions failed")

    def _round_trip(self, message: Any, version: int) -> bytes:
        """Send *message* at *version*; its response frame (without size prefix)."""
        sent = next(self._ids)
        self._sock.sendall(encode_request(message, version, sent, self._client_id))
        size = int.from_bytes(self._read(4), "big")
        if size > DEFAULT_MAX_FRAME_SIZE:
            raise Unclean(f"{self._address}: a frame of {size} bytes")
        frame = self._read(size)
        if int.from_bytes(frame[:4], "big", signed=True) != sent:
            raise Unclean(f"{self._address}: an answer to another request")
        return frame

    def _read(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = self._sock.recv(min(left, 1 << 20))
            if not chunk:
                raise Unclean(f"{self._address}: connection closed")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def call(self, call: VersionedCall) -> list[Any]:
        """Send *call* at the highest version both sides speak; its parsed answer."""
        cls = call.request_class
        version = choose_version(cls, self._versions, call.min_version, call.max_version)
        frame = self._round_trip(call(version), version)
        return call.parse(decode_response(frame, cls.API_KEY, version)[1])

    def close(self) -> None:
        self._sock.close()


class PlainLookups:
    """The stream reader's :class:`~._source.Lookups` over blocking sockets, in plaintext.

    *fallback* gives the client's lookups (:mod:`._worker`), used for TLS and
    SASL and whenever an answer here is not clean.  Connections stay open
    between calls (the runner asks again at each trigger); leaders are those of
    the last Metadata answer, which every :meth:`discover` refreshes.
    """

    def __init__(self, fallback: Callable[[], Lookups], connect: Connect = _connect) -> None:
        self._fallback = fallback
        self._connect = connect
        self._brokers: dict[tuple[str, int], _Broker] = {}
        self._leaders: dict[TopicAndPartition, tuple[str, int]] = {}

    def discover(self, opts: ReadOptions) -> list[TopicAndPartition]:
        if opts.assigned is not None:
            return list(opts.assigned)
        if opts.client.security.protocol != "PLAINTEXT":
            return self._fallback().discover(opts)
        try:
            layout = self._metadata(opts.client, None if opts.pattern is not None else opts.topics)
        except _UNCLEAN:
            self.close()
            return self._fallback().discover(opts)
        if opts.pattern is not None:
            return matching(layout, opts.pattern)
        assert opts.topics is not None
        return [TopicAndPartition(t, p) for t in opts.topics for p in layout.get(t, ())]

    def offsets_at(
        self,
        config: ClientConfig,
        partitions: Sequence[TopicAndPartition],
        when: int,
        isolation_level: int = 0,
    ) -> dict[TopicAndPartition, int]:
        if not partitions:
            return {}
        if config.security.protocol == "PLAINTEXT":
            try:
                return self._offsets(config, partitions, when, isolation_level)
            except _UNCLEAN:
                self.close()
        return self._fallback().offsets_at(config, partitions, when, isolation_level)

    def resolve_offsets(
        self, opts: ReadOptions, spec: Bound, partitions: Sequence[TopicAndPartition], name: str
    ) -> dict[TopicAndPartition, int]:
        def lookup(tps: Sequence[TopicAndPartition], when: int) -> dict[TopicAndPartition, int]:
            level = 0 if when == OFFSET_EARLIEST else opts.isolation_level
            return self.offsets_at(opts.client, tps, when, level)

        return resolve_bound(spec, partitions, name, lookup)

    def close(self) -> None:
        """Close every connection (the next lookup connects again)."""
        brokers, self._brokers = self._brokers, {}
        self._leaders = {}
        for broker in brokers.values():
            broker.close()

    def _broker(self, config: ClientConfig, address: tuple[str, int]) -> _Broker:
        broker = self._brokers.get(address)
        if broker is None:
            host, port = address
            sock = self._connect(host, port, config.request_timeout_ms / 1000.0)
            try:
                broker = _Broker(sock, config.client_id, f"{host}:{port}")
            except BaseException:
                sock.close()
                raise
            self._brokers[address] = broker
        return broker

    def _any_broker(self, config: ClientConfig) -> _Broker:
        """A connected broker: one already open, else the first bootstrap server that answers."""
        if self._brokers:
            return next(iter(self._brokers.values()))
        error: Exception = Unclean("no bootstrap server")
        for address in parse_hosts(config.bootstrap):
            try:
                return self._broker(config, address)
            except _UNCLEAN as e:
                error = e
        raise Unclean(f"no bootstrap server answered: {error}")

    def _metadata(
        self, config: ClientConfig, topics: Sequence[str] | None
    ) -> dict[str, Sequence[int]]:
        """Each topic's partitions; remembers their leaders.  Unclean on any error code."""
        [snapshot] = self._any_broker(config).call(MetadataCall(topics))
        layout: dict[str, Sequence[int]] = {}
        for name, topic in snapshot.topics.items():
            if topic.error_code or any(row[0] or row[1] < 0 for row in topic.rows):
                raise Unclean(f"metadata of {name}: not clean")
            layout[name] = topic.partitions
            for number, row in zip(topic.partitions, topic.rows, strict=True):
                leader = snapshot.brokers.get(row[1])
                if leader is None:
                    raise Unclean(f"metadata of {name}: an unknown leader")
                self._leaders[TopicAndPartition(name, number)] = (leader.host, leader.port)
        return layout

    def _offsets(
        self,
        config: ClientConfig,
        partitions: Sequence[TopicAndPartition],
        when: int,
        isolation_level: int,
    ) -> dict[TopicAndPartition, int]:
        if any(tp not in self._leaders for tp in partitions):
            self._metadata(config, sorted({tp.topic for tp in partitions}))
        by_leader: dict[tuple[str, int], list[OffsetRequest]] = {}
        for tp in partitions:
            leader = self._leaders.get(tp)
            if leader is None:
                raise Unclean(f"{tp.topic}/{tp.partition}: no leader known")
            by_leader.setdefault(leader, []).append(OffsetRequest(tp.topic, tp.partition, when, 1))
        found: dict[TopicAndPartition, int] = {}
        for leader, payloads in by_leader.items():
            call = ListOffsetsCall(payloads, config.request_timeout_ms, isolation_level)
            for r in self._broker(config, leader).call(call):
                if r.error:
                    raise Unclean(f"{r.topic}/{r.partition}: error {r.error}")
                found[TopicAndPartition(r.topic, r.partition)] = r.offsets[0]
        if any(tp not in found for tp in partitions):
            raise Unclean("ListOffsets left out partitions")
        return found

"""Blocking socket helpers to tell whether a broker is up: a free port and ApiVersions v0.

The ApiVersions frame is hand-encoded here on purpose: the harness must not depend on
afkak.protocol, the code it is used to test.
"""

from __future__ import annotations

import socket
import struct

_API_VERSIONS = 18
_CLIENT_ID = b"afkak-test-harness"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def parse_address(address: str) -> tuple[str, int]:
    """Split ``"host:port"`` into its parts."""
    host, _, port = address.rpartition(":")
    return host, int(port)


def can_connect(address: str, timeout: float = 0.5) -> bool:
    """Whether a TCP connection to ``address`` is accepted."""
    try:
        socket.create_connection(parse_address(address), timeout=timeout).close()
    except OSError:
        return False
    return True


def api_versions(address: str, timeout: float = 2.0) -> dict[int, tuple[int, int]]:
    """Send ApiVersions v0 to ``address``; return ``{api_key: (min_version, max_version)}``.

    Raises OSError if the connection fails or closes early, ValueError if the answer is
    malformed or carries an error code.
    """
    correlation_id = 0x5AFE
    body = struct.pack(">hhih", _API_VERSIONS, 0, correlation_id, len(_CLIENT_ID)) + _CLIENT_ID
    with socket.create_connection(parse_address(address), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
        response = _recv_exactly(sock, size)
    return _parse_api_versions_v0(response, correlation_id)


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(chunks)} of {size} bytes")
        chunks += chunk
    return bytes(chunks)


def _parse_api_versions_v0(response: bytes, correlation_id: int) -> dict[int, tuple[int, int]]:
    try:
        got_correlation_id, error_code, count = struct.unpack_from(">ihi", response, 0)
        if got_correlation_id != correlation_id:
            raise ValueError(f"correlation id {got_correlation_id}, expected {correlation_id}")
        if error_code:
            raise ValueError(f"ApiVersions v0 answered error code {error_code}")
        entries = struct.iter_unpack(">hhh", response[10 : 10 + 6 * count])
        versions = {key: (low, high) for key, low, high in entries}
    except struct.error as exc:
        raise ValueError(f"malformed ApiVersions v0 response: {exc}") from exc
    if len(versions) != count:
        raise ValueError(f"ApiVersions v0 response lists {len(versions)} of {count} APIs")
    return versions

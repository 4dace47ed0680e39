"""Child process that owns a librdkafka mock cluster and obeys JSON-line commands.

Run as ``python -I rdkafka_mock_server.py BROKER_COUNT INITIAL_REBALANCE_DELAY_MS``
(standard library only, so it needs no import path). It binds the
mock API of the librdkafka shared library bundled with confluent-kafka through ctypes,
prints ``{"bootstrap": ..., "librdkafka": ...}`` on stdout, then answers each stdin line
``{"op": NAME, "args": [...]}`` with ``{"result": ...}`` or ``{"error": MESSAGE}``.
It exits on ``{"op": "shutdown"}`` or end of input (so it dies with its parent). The
cluster lives in its own process so that its threads never share the test process's
GIL or reactor, and a crash in C cannot take the tests down.
"""

from __future__ import annotations

import ctypes
import glob
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from typing import Any

_c = ctypes
_MC = _c.c_void_p

#: op -> (C function, argument types after the cluster pointer, returns an error code).
_SIMPLE_OPS: dict[str, tuple[str, tuple[Any, ...], bool]] = {
    "topic_create": (
        "rd_kafka_mock_topic_create",
        (_c.c_char_p, _c.c_int, _c.c_int),
        True,
    ),
    "topic_set_error": (
        "rd_kafka_mock_topic_set_error",
        (_c.c_char_p, _c.c_int),
        False,
    ),
    "partition_set_leader": (
        "rd_kafka_mock_partition_set_leader",
        (_c.c_char_p, _c.c_int32, _c.c_int32),
        True,
    ),
    "partition_set_follower": (
        "rd_kafka_mock_partition_set_follower",
        (_c.c_char_p, _c.c_int32, _c.c_int32),
        True,
    ),
    "partition_set_follower_wmarks": (
        "rd_kafka_mock_partition_set_follower_wmarks",
        (_c.c_char_p, _c.c_int32, _c.c_int64, _c.c_int64),
        True,
    ),
    "partition_delete_records": (
        "rd_kafka_mock_partition_delete_records",
        (_c.c_char_p, _c.c_int32, _c.c_int64),
        True,
    ),
    "broker_set_down": ("rd_kafka_mock_broker_set_down", (_c.c_int32,), True),
    "broker_set_up": ("rd_kafka_mock_broker_set_up", (_c.c_int32,), True),
    "broker_set_rtt": ("rd_kafka_mock_broker_set_rtt", (_c.c_int32, _c.c_int), True),
    "coordinator_set": (
        "rd_kafka_mock_coordinator_set",
        (_c.c_char_p, _c.c_char_p, _c.c_int32),
        True,
    ),
    "set_apiversion": (
        "rd_kafka_mock_set_apiversion",
        (_c.c_int16, _c.c_int16, _c.c_int16),
        True,
    ),
    "clear_request_errors": (
        "rd_kafka_mock_clear_request_errors",
        (_c.c_int16,),
        False,
    ),
    "group_initial_rebalance_delay_ms": (
        "rd_kafka_mock_group_initial_rebalance_delay_ms",
        (_c.c_int32,),
        False,
    ),
    "start_request_tracking": ("rd_kafka_mock_start_request_tracking", (), False),
    "stop_request_tracking": ("rd_kafka_mock_stop_request_tracking", (), False),
    "clear_requests": ("rd_kafka_mock_clear_requests", (), False),
}


class MockError(Exception):
    """A mock API call returned an error code."""


def bundled_librdkafka() -> str:
    """Path of the librdkafka shared library in the confluent-kafka wheel."""
    spec = importlib.util.find_spec("confluent_kafka")
    if spec is None or spec.origin is None:
        raise OSError("confluent-kafka is not installed")
    site = os.path.dirname(os.path.dirname(spec.origin))
    found = sorted(glob.glob(os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*")))
    if not found:
        raise OSError(f"no librdkafka*.so in {site}/confluent_kafka.libs")
    return found[0]


class MockCluster:
    """ctypes bindings of one mock cluster and the rd_kafka_t handle that owns it."""

    def __init__(self, library_path: str, broker_count: int) -> None:
        lib = self._lib = ctypes.CDLL(library_path)
        lib.rd_kafka_version_str.restype = _c.c_char_p
        lib.rd_kafka_err2name.restype = _c.c_char_p
        lib.rd_kafka_err2name.argtypes = (_c.c_int,)
        lib.rd_kafka_conf_new.restype = _c.c_void_p
        lib.rd_kafka_conf_set.argtypes = (
            _c.c_void_p,
            _c.c_char_p,
            _c.c_char_p,
            _c.c_char_p,
            _c.c_size_t,
        )
        lib.rd_kafka_new.restype = _c.c_void_p
        lib.rd_kafka_new.argtypes = (_c.c_int, _c.c_void_p, _c.c_char_p, _c.c_size_t)
        lib.rd_kafka_destroy.argtypes = (_c.c_void_p,)
        lib.rd_kafka_mock_cluster_new.restype = _MC
        lib.rd_kafka_mock_cluster_new.argtypes = (_c.c_void_p, _c.c_int)
        lib.rd_kafka_mock_cluster_destroy.argtypes = (_MC,)
        lib.rd_kafka_mock_cluster_bootstraps.restype = _c.c_char_p
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = (_MC,)
        lib.rd_kafka_mock_push_request_errors_array.argtypes = (
            _MC,
            _c.c_int16,
            _c.c_size_t,
            _c.POINTER(_c.c_int),
        )
        lib.rd_kafka_mock_broker_push_request_error_rtts.restype = _c.c_int
        lib.rd_kafka_mock_broker_push_request_error_rtts.argtypes = (
            _MC,
            _c.c_int32,
            _c.c_int16,
            _c.c_size_t,
        )
        lib.rd_kafka_mock_get_requests.restype = _c.POINTER(_c.c_void_p)
        lib.rd_kafka_mock_get_requests.argtypes = (_MC, _c.POINTER(_c.c_size_t))
        lib.rd_kafka_mock_request_id.restype = _c.c_int32
        lib.rd_kafka_mock_request_id.argtypes = (_c.c_void_p,)
        lib.rd_kafka_mock_request_api_key.restype = _c.c_int16
        lib.rd_kafka_mock_request_api_key.argtypes = (_c.c_void_p,)
        lib.rd_kafka_mock_request_timestamp.restype = _c.c_int64
        lib.rd_kafka_mock_request_timestamp.argtypes = (_c.c_void_p,)
        lib.rd_kafka_mock_request_destroy_array.argtypes = (
            _c.POINTER(_c.c_void_p),
            _c.c_size_t,
        )

        conf = lib.rd_kafka_conf_new()
        errstr = _c.create_string_buffer(512)
        # Only errors on stderr: the owning handle has no bootstrap servers on purpose.
        lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, len(errstr))
        # rd_kafka_new takes ownership of conf; 0 is RD_KAFKA_PRODUCER.
        self._rk = lib.rd_kafka_new(0, conf, errstr, len(errstr))
        if not self._rk:
            raise MockError(f"rd_kafka_new failed: {errstr.value.decode()}")
        self._mc = lib.rd_kafka_mock_cluster_new(self._rk, broker_count)
        if not self._mc:
            lib.rd_kafka_destroy(self._rk)
            raise MockError("rd_kafka_mock_cluster_new failed")
        self.bootstrap: str = lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()
        self.version: str = lib.rd_kafka_version_str().decode()
        self._ops: dict[str, Callable[..., Any]] = {
            "push_request_errors": self.push_request_errors,
            "broker_push_request_error_rtts": self.broker_push_request_error_rtts,
            "get_requests": self.get_requests,
        }
        for op, (symbol, argtypes, returns_error) in _SIMPLE_OPS.items():
            function = getattr(lib, symbol)
            function.argtypes = (_MC, *argtypes)
            function.restype = _c.c_int if returns_error else None
            self._ops[op] = self._binder(function, argtypes, returns_error)

    def call(self, op: str, args: list[Any]) -> Any:
        """Run the command ``op``; raises KeyError for an unknown one."""
        return self._ops[op](*args)

    def close(self) -> None:
        self._lib.rd_kafka_mock_cluster_destroy(self._mc)
        self._lib.rd_kafka_destroy(self._rk)

    def _check(self, code: int) -> None:
        if code:
            raise MockError(f"error {code} {self._lib.rd_kafka_err2name(code).decode()}")

    def _binder(
        self, function: Any, argtypes: tuple[Any, ...], returns_error: bool
    ) -> Callable[..., None]:
        def call(*args: Any) -> None:
            if len(args) != len(argtypes):
                raise TypeError(f"expected {len(argtypes)} arguments, got {len(args)}")
            encoded = [a.encode() if isinstance(a, str) else a for a in args]
            code = function(self._mc, *encoded)
            if returns_error:
                self._check(code)

        return call

    def push_request_errors(self, api_key: int, errors: list[int]) -> None:
        array = (_c.c_int * len(errors))(*errors)
        self._lib.rd_kafka_mock_push_request_errors_array(self._mc, api_key, len(errors), array)

    def broker_push_request_error_rtts(
        self, broker_id: int, api_key: int, pairs: list[list[int]]
    ) -> None:
        # Variadic (error, rtt_ms) int pairs after the fixed arguments.
        flat = [_c.c_int(value) for pair in pairs for value in pair]
        self._check(
            self._lib.rd_kafka_mock_broker_push_request_error_rtts(
                self._mc, broker_id, api_key, len(pairs), *flat
            )
        )

    def get_requests(self) -> list[list[int]]:
        count = _c.c_size_t()
        array = self._lib.rd_kafka_mock_get_requests(self._mc, _c.byref(count))
        if not array:
            return []
        try:
            return [
                [
                    self._lib.rd_kafka_mock_request_id(array[i]),
                    self._lib.rd_kafka_mock_request_api_key(array[i]),
                    self._lib.rd_kafka_mock_request_timestamp(array[i]),
                ]
                for i in range(count.value)
            ]
        finally:
            self._lib.rd_kafka_mock_request_destroy_array(array, count.value)


def _serve(cluster: MockCluster) -> None:
    write = sys.stdout.write
    write(json.dumps({"bootstrap": cluster.bootstrap, "librdkafka": cluster.version}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        try:
            command = json.loads(line)
            if command["op"] == "shutdown":
                break
            reply = {"result": cluster.call(command["op"], command.get("args", []))}
        except (
            MockError,
            KeyError,
            TypeError,
            ValueError,
            ctypes.ArgumentError,
        ) as exc:
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def main(argv: list[str]) -> int:
    broker_count, initial_rebalance_delay_ms = int(argv[1]), int(argv[2])
    try:
        cluster = MockCluster(bundled_librdkafka(), broker_count)
    except (OSError, AttributeError, MockError) as exc:
        sys.stdout.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return 1
    cluster.call("group_initial_rebalance_delay_ms", [initial_rebalance_delay_ms])
    try:
        _serve(cluster)
    finally:
        cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""``afkak broker``: a development broker on 127.0.0.1 until Ctrl-C.

Apache Kafka itself where Java is installed (``afkak.testing.apache_kafka``
resolves it once and caches it); otherwise the lightweight embedded broker
(Tansu), with a line saying what it does not do.  Not for production: one
node, data in a temporary directory (or memory), gone when it stops.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import socket
import sys
from typing import Any

from ._output import INTERRUPTED, OK, UNREACHABLE, USAGE

#: What the lightweight broker does not do, said when it is the one started.
TANSU_LIMITS = (
    "this is the lightweight broker (Tansu), not Apache Kafka: its ListOffsets(LATEST) is "
    "not the log end (lag and -o end are off), it holds each group join for half the "
    "session timeout, and it keeps everything in memory"
)


def _harness() -> Any | None:
    """``afkak.testing.apache_kafka``, imported only when a broker is asked for."""
    try:
        return importlib.import_module("afkak.testing.apache_kafka")
    except ImportError:
        return None


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def broker(args: argparse.Namespace) -> int:
    """Start the broker, print its address, and run until SIGINT/SIGTERM."""
    if not _port_free(args.port):
        sys.stderr.write(
            f"afkak: error: 127.0.0.1:{args.port} is in use (a broker already running?): "
            "choose another with --port\n"
        )
        return USAGE
    harness = _harness()
    running: Any
    if harness is not None and harness.java_available():
        first = "" if harness.jars_cached() else ", resolving its jars from Maven Central once"
        sys.stderr.write(f"afkak: starting Apache Kafka{first}...\n")
        sys.stderr.flush()
        running = harness.ApacheKafka(args.port)
        unavailable: type[Exception] = harness.ApacheKafkaUnavailable
    else:
        from afkak.testing import EmbeddedBroker, EmbeddedBrokerUnavailable

        why = "Java was not found" if harness is not None else "no Apache Kafka harness here"
        sys.stderr.write(f"afkak: {why}: {TANSU_LIMITS}\n")
        running = EmbeddedBroker(port=args.port)
        unavailable = EmbeddedBrokerUnavailable
    try:
        running.start()
    except unavailable as e:
        sys.stderr.write(f"afkak: error: the broker did not start: {e}\n")
        return UNREACHABLE
    except KeyboardInterrupt:
        running.stop()
        sys.stderr.write("afkak: interrupted\n")
        return INTERRUPTED
    # The signals are waited for, not handled: a handler setting a threading.Event
    # deadlocks when it interrupts the Event's own wait holding its lock.
    signals = {signal.SIGINT, signal.SIGTERM}
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, signals)
        sys.stdout.write(f"{running.bootstrap}\n")
        sys.stdout.flush()
        sys.stderr.write(f"afkak: a broker listens at {running.bootstrap}; Ctrl-C stops it\n")
        sys.stderr.flush()
        signal.sigwait(signals)
    except KeyboardInterrupt:  # Ctrl-C before the signals were blocked
        pass
    finally:
        for signum in signals:  # a second Ctrl-C does not cut the broker's stop short
            signal.signal(signum, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
        running.stop()
    sys.stderr.write("afkak: broker stopped\n")
    return OK

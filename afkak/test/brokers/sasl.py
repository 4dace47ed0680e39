"""Which brokers here authenticate, and a real broker behind a SASL server for those that do not.

What the brokers installable here do with SASL (probed on this machine, Nov 2026):

- **Tansu 0.6** (``--authentication``): SaslHandshake v1 accepts SCRAM-SHA-256
  and SCRAM-SHA-512 (and names only the one asked for); PLAIN closes the
  connection (``NoSharedMechanism``).  Users live in the storage engine, and
  the packaged build has only ``memory://`` (``file://`` and ``sqlite://``
  are not compiled in, ``s3://``/``postgres://`` need servers we do not
  have).  ``tansu user create`` (AlterUserScramCredentials) is refused with
  NOT_AUTHENTICATED by a broker that requires authentication, and a broker
  started without it keeps its users in its own memory: no user can ever
  exist on an authenticating Tansu, so nothing can authenticate to it.
- **noida-db 0.2.3**: answers SaslHandshake with ``["PLAIN"]`` and accepts
  *any* password (SaslAuthenticate answers error 0 to ``alice``/``x``): it
  does not authenticate, so it proves nothing about credentials.
- **librdkafka's mock cluster**: not probed for SASL; the harness runs its
  listeners in plaintext.

So authentication is proven on Apache Kafka itself
(:class:`~afkak.test.brokers.kafka_secure.KafkaSecureBroker`).  :class:`SaslBroker`
(a real Tansu behind :mod:`afkak.test.brokers.sasl_server`, a loopback server that
performs the SASL exchange itself, then forwards) stays only for what Kafka does not
let a test see: the SASL extensions a client sent (``test_client_sasl.py``), and the
Spark data source's SCRAM test until it moves to Kafka.  These findings are also the
``sasl_*`` quirks of the brokers.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from afkak.test.brokers.probe import api_versions, free_port
from afkak.test.brokers.process import ManagedProcess, unavailable
from afkak.test.brokers.tansu import TansuBroker

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


class SaslBroker:
    """A Tansu broker reachable only through a SASL server on its advertised port."""

    def __init__(
        self,
        users: Mapping[str, str],
        *,
        mechanisms: tuple[str, ...] = MECHANISMS,
        session_lifetime_ms: int = 0,
    ) -> None:
        self.users = dict(users)
        self.mechanisms = mechanisms
        self.session_lifetime_ms = session_lifetime_ms
        self.port = free_port()
        self.broker = TansuBroker(advertised_port=self.port)
        self._process: ManagedProcess | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> SaslBroker:
        try:
            import scramp  # noqa: F401
        except ImportError as e:
            unavailable(f"the SASL server needs scramp: {e}")
        self.broker.start()
        upstream = int(self.broker.bootstrap.rsplit(":", 1)[1])
        config = {
            "port": self.port,
            "upstream_port": upstream,
            "mechanisms": list(self.mechanisms),
            "users": self.users,
            "session_lifetime_ms": self.session_lifetime_ms,
        }
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
        env = {**os.environ, "PYTHONPATH": root}
        argv = [sys.executable, "-m", "afkak.test.brokers.sasl_server", json.dumps(config)]
        self._process = ManagedProcess("sasl-server", argv, env=env)
        deadline = time.monotonic() + 15
        while not any(e.get("event") == "listening" for e in self.events()):
            if self._process.exit_code() is not None or time.monotonic() > deadline:
                log = self._process.log_tail()
                self.stop()
                unavailable(f"the SASL server did not start:\n{log}")
            time.sleep(0.02)
        api_versions(self.bootstrap)  # ApiVersions is forwarded before authentication
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.stop()
        self.broker.stop()

    def events(self) -> list[dict[str, Any]]:
        """The server's events so far (one JSON object per line of its log)."""
        if self._process is None:
            return []
        with open(self._process.log_path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        found = []
        for line in lines:
            if line.startswith("{"):
                try:
                    found.append(json.loads(line))
                except ValueError:
                    continue
        return found

    def log_text(self) -> str:
        if self._process is None:
            return ""
        with open(self._process.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

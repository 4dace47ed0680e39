"""afkak 21.5's own integration tests pass with this afkak on a real broker.

``tools/afkak21_suite.py`` runs them (downloaded from PyPI, unchanged) in a process of
its own, here against this test process's shared broker: it fails on any failure that
neither a documented change from 21.5 nor a recorded quirk of the broker explains.
The client, consumer and producer modules run here (under a minute each); the group
module waits out 21.5's 30-120 s timeouts on what it expects of
``ConsumerGroup.consumers``, and runs with the whole suite (docs/changes-from-afkak-21.rst).
Skips when the sdist cannot be downloaded, except in CI.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from twisted.trial.unittest import SynchronousTestCase

from afkak.test.brokers import shared_broker
from afkak.test.brokers.process import unavailable

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(_ROOT, "tools", "afkak21_suite.py")
MODULES = ("test_client_integration", "test_consumer_integration", "test_producer_integration")
#: The tool's exit status when pip cannot download the sdist.
_NO_SDIST = 2


class Afkak21SuiteMixin:
    broker_name: str

    def test_afkak21_integration_tests_pass(self: SynchronousTestCase) -> None:
        if not os.path.exists(TOOL):
            self.skipTest("tools/ is not here (not a source checkout)")
        broker = shared_broker(self.broker_name)  # type: ignore[attr-defined]
        selection = [arg for module in MODULES for arg in ("-k", module)]
        run = subprocess.run(
            [sys.executable, TOOL, "--bootstrap", broker.bootstrap]
            + ["--quirks", self.broker_name, *selection],  # type: ignore[attr-defined]
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONPATH": _ROOT},
        )
        if run.returncode == _NO_SDIST:
            unavailable(f"afkak 21.5's sdist cannot be downloaded: {run.stderr.strip()}")
        summary = run.stdout[run.stdout.rfind("afkak 21.5 integration suite") :]
        self.assertEqual(run.returncode, 0, summary or run.stdout[-3000:] + run.stderr[-3000:])
        counts = re.search(r"(\d+) tests, (\d+) passed", summary)
        assert counts is not None, summary
        self.assertGreaterEqual(int(counts[2]), 10, summary)  # they ran (no skip-all)


class NoidaAfkak21SuiteTests(Afkak21SuiteMixin, SynchronousTestCase):
    broker_name = "noida"


class TansuAfkak21SuiteTests(Afkak21SuiteMixin, SynchronousTestCase):
    broker_name = "tansu"

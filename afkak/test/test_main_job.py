"""README's first command runs tools/main_job.py: it must work, embedded and against a cluster."""

from __future__ import annotations

import os
import subprocess
import sys
import unittest

import afkak
from afkak.test.brokers import shared_broker

CHECKOUT = os.path.dirname(os.path.dirname(afkak.__file__))
SCRIPT = os.path.join(CHECKOUT, "tools", "main_job.py")


@unittest.skipUnless(os.path.isfile(SCRIPT), "tools/main_job.py is in a source checkout only")
class MainJobTests(unittest.TestCase):
    def run_job(self, *args: str) -> str:
        env = {k: v for k, v in os.environ.items() if k != "AFKAK_BOOTSTRAP"}
        # The script imports the afkak this test imported, whatever is installed.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [CHECKOUT, env.get("PYTHONPATH")]))
        done = subprocess.run(
            [sys.executable, SCRIPT, *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        return done.stdout

    def test_embedded_broker(self) -> None:
        out = self.run_job()
        self.assertIn("started an embedded Tansu broker on 127.0.0.1:", out)
        self.assertIn("consumed 5: key=None value=b'with-headers'", out)
        self.assertIn("main job done", out)

    def test_given_kafka(self) -> None:
        broker = shared_broker("kafka")
        out = self.run_job(broker.bootstrap)
        self.assertIn(f"using the cluster at {broker.bootstrap}", out)
        self.assertIn("main job done", out)

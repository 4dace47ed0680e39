"""tools/venv.sh (README's scripts): install once, say so, reuse afterwards (issue 26:
tools/main_job.sh reinstalled on every run, silently, with setuptools' banner)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import unittest

import afkak

CHECKOUT = os.path.dirname(os.path.dirname(afkak.__file__))
SCRIPT = os.path.join(CHECKOUT, "tools", "venv.sh")

#: A stand-in for the venv's python: records its arguments, prints pip-like noise.
FAKE_PYTHON = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/../calls"
echo "SetuptoolsDeprecationWarning: a banner"
exit ${FAKE_PIP_EXIT:-0}
"""


@unittest.skipUnless(os.path.exists(SCRIPT), "tools/ is in a source checkout only")
class VenvScriptTests(unittest.TestCase):
    def setUp(self) -> None:
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root, True)
        for name in ("pyproject.toml", "setup.py", "setup.cfg"):
            shutil.copy(os.path.join(CHECKOUT, name), self.root)
        os.makedirs(os.path.join(self.root, "tools"))
        shutil.copy(SCRIPT, os.path.join(self.root, "tools"))
        python = os.path.join(self.root, ".venv", "bin", "python")
        os.makedirs(os.path.dirname(python))
        with open(python, "w") as f:
            f.write(FAKE_PYTHON)
        os.chmod(python, os.stat(python).st_mode | stat.S_IXUSR)

    def source(self, extras: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", f"set -euo pipefail; . tools/venv.sh '{extras}'; echo VENV=$VENV"],
            cwd=self.root,
            capture_output=True,
            text=True,
            env={**os.environ, "AFKAK_VENV": ".venv", **env},
            timeout=60,
        )

    def calls(self) -> list[str]:
        path = os.path.join(self.root, ".venv", "calls")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return f.read().splitlines()

    def test_installs_once_saying_so_then_reuses(self) -> None:
        first = self.source("embedded,snappy")
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertIn("afkak: installing afkak[embedded,snappy] into .venv (once", first.stderr)
        self.assertNotIn("Setuptools", first.stdout + first.stderr)  # the banner is logged
        self.assertEqual(self.calls()[-1], "-m pip install -q -e .[embedded,snappy]")
        second = self.source("embedded,snappy")
        self.assertEqual((second.returncode, second.stderr), (0, ""))
        self.assertEqual(second.stdout, "VENV=.venv\n")
        self.assertEqual(len(self.calls()), 2)  # pip upgrade + install, the first time only

    def test_other_extras_or_changed_build_files_install_again(self) -> None:
        self.source("embedded")
        self.assertIn("installing", self.source("test,spark").stderr)
        self.assertEqual(self.source("embedded").stderr, "")
        with open(os.path.join(self.root, "setup.cfg"), "a") as f:
            f.write("\n# changed\n")
        self.assertIn("installing", self.source("embedded").stderr)

    def test_a_failed_install_shows_its_log_and_fails(self) -> None:
        done = self.source("embedded", FAKE_PIP_EXIT="1")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("SetuptoolsDeprecationWarning: a banner", done.stderr)
        self.assertIn("the install failed", done.stderr)
        self.assertIn("installing", self.source("embedded").stderr)  # and tries again

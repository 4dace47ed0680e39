"""The wheel holds the library, its licences and metadata, and no tests (tools/check_wheel.py)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile
from pathlib import Path
from types import ModuleType

import afkak

CHECKOUT = Path(afkak.__file__).resolve().parents[1]
CHECKER = CHECKOUT / "tools" / "check_wheel.py"

GOOD_METADATA = (
    "Metadata-Version: 2.4\nName: afkak\nVersion: 1\nLicense-Expression: Apache-2.0\n"
    "Classifier: Typing :: Typed\n"
)


def _load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_wheel", CHECKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wheel(folder: str, files: dict[str, str]) -> Path:
    path = Path(folder) / "afkak-1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


GOOD_FILES = {
    "afkak/__init__.py": "",
    "afkak/py.typed": "",
    "afkak/testing/__init__.py": "",
    # the Apache Kafka launcher's package data (afkak.testing.apache_kafka)
    "afkak/testing/kafka/pom.xml": "",
    "afkak/testing/kafka/log4j2.properties": "",
    "afkak/testing/kafka/log4j2-tools.properties": "",
    "afkak/testing/kafka/log4j.properties": "",
    "afkak-1.dist-info/licenses/LICENSE": "Apache License",
    "afkak-1.dist-info/licenses/NOTICE": "afkak",
    "afkak-1.dist-info/METADATA": GOOD_METADATA,
}


@unittest.skipUnless(CHECKER.is_file(), "tools/ is in a source checkout only")
class CheckerTests(unittest.TestCase):
    def test_a_good_wheel_passes(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            self.assertEqual(_load_checker().content_problems(_wheel(tmp, GOOD_FILES)), [])

    def test_a_shipped_test_licence_or_metadata_fault_is_found(self) -> None:
        faults = {
            "test file shipped: afkak/test/test_x.py": {**GOOD_FILES, "afkak/test/test_x.py": ""},
            "missing licence file NOTICE": {
                k: v for k, v in GOOD_FILES.items() if not k.endswith("NOTICE")
            },
            "License-Expression is None": {
                **GOOD_FILES,
                "afkak-1.dist-info/METADATA": GOOD_METADATA.replace(
                    "License-Expression: Apache-2.0\n", "License: Apache-2.0\n"
                ),
            },
        }
        checker = _load_checker()
        for expected, files in faults.items():
            with tempfile.TemporaryDirectory() as tmp:
                self.assertIn(expected, checker.content_problems(_wheel(tmp, files)))


#: What a source copy for building leaves out: build output, environments, caches.
_NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", ".tox", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis", "*.so"
)


@unittest.skipUnless(CHECKER.is_file(), "tools/ is in a source checkout only")
@unittest.skipUnless(importlib.util.find_spec("build"), "needs the 'build' package (tox -e build)")
class BuiltWheelTests(unittest.TestCase):
    def test_the_built_wheel_holds_no_tests(self) -> None:
        # Built from a copy of the sources: setuptools reuses a checkout's build/
        # (whose stale files would be packed too) and leaves build/ and egg-info behind.
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "src"
            shutil.copytree(CHECKOUT, source, ignore=_NOT_SOURCES)
            done = subprocess.run(
                [sys.executable, "-m", "build", "--wheel", "--outdir", tmp, str(source)],
                capture_output=True,
                text=True,
                timeout=300,
                env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
            )
            self.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-3000:])
            [wheel] = Path(tmp).glob("afkak-*.whl")
            self.assertEqual(_load_checker().content_problems(wheel), [])

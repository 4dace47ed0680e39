#!/usr/bin/env python3
"""Check a built afkak wheel the way a user meets it.

Usage: python tools/check_wheel.py WHEEL_OR_FOLDER   (a folder: its one afkak-*.whl)

The wheel must hold the library and its licences, and no tests: no ``afkak/test``,
``LICENSE`` and ``NOTICE`` among its licence files, ``License-Expression: Apache-2.0``
and ``py.typed``.  Then it is installed in a fresh virtual environment (its
dependencies from the package index) where ``import afkak`` must work and
``afkak.test`` must not exist.  Exit status 0 when all holds.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path


def content_problems(wheel: Path) -> list[str]:
    """What is wrong with the wheel's file list and metadata (empty when nothing is)."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        [metadata_name] = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(zf.read(metadata_name).decode("utf-8"))
    problems = [f"test file shipped: {n}" for n in names if n.startswith("afkak/test/")]
    for required in (
        "afkak/__init__.py",
        "afkak/py.typed",
        "afkak/testing/__init__.py",
        "afkak/testing/kafka/pom.xml",
        "afkak/testing/kafka/log4j2.properties",
        "afkak/testing/kafka/log4j2-tools.properties",
        "afkak/testing/kafka/log4j.properties",
    ):
        if required not in names:
            problems.append(f"missing {required}")
    for licence in ("LICENSE", "NOTICE"):
        if not any(n.endswith(f".dist-info/licenses/{licence}") for n in names):
            problems.append(f"missing licence file {licence}")
    if metadata.get("License-Expression") != "Apache-2.0":
        problems.append(f"License-Expression is {metadata.get('License-Expression')!r}")
    if metadata.get("License") is not None:
        problems.append("the legacy License field is set")
    if "Typing :: Typed" not in metadata.get_all("Classifier", []):
        problems.append("no 'Typing :: Typed' classifier")
    return problems


def install_problems(wheel: Path) -> list[str]:
    """Install *wheel* in a fresh venv; what fails when afkak is imported there."""
    with tempfile.TemporaryDirectory(prefix="afkak-wheel-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        subprocess.run([python, "-m", "pip", "install", "-q", str(wheel)], check=True)
        probe = (
            "import importlib.util, afkak, afkak.testing, afkak.client\n"
            "assert importlib.util.find_spec('afkak.test') is None, 'afkak.test installed'\n"
            "print(afkak.__version__, afkak.__file__)\n"
        )
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, cwd=tmp)
        if done.returncode:
            return [f"import in a fresh venv failed:\n{done.stderr}"]
        print(f"fresh venv imports afkak {done.stdout.strip()}")
        return []


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    wheel = Path(argv[1])
    if wheel.is_dir():
        [wheel] = wheel.glob("afkak-*.whl")
    problems = content_problems(wheel) or install_problems(wheel)
    for problem in problems:
        print(f"{wheel.name}: {problem}", file=sys.stderr)
    if not problems:
        print(f"{wheel.name}: no tests, licences and metadata in place, installs and imports")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Every example in README.rst and docs/ runs: the scripts against Apache Kafka,
the testing example against the fake cluster."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import unittest

import afkak
from afkak.test.brokers import KafkaBroker

CHECKOUT = os.path.dirname(os.path.dirname(afkak.__file__))
EXAMPLES = os.path.join(CHECKOUT, "docs", "examples")
README = os.path.join(CHECKOUT, "README.rst")


def python_blocks(path: str) -> list[str]:
    """The ``.. code-block:: python`` blocks of an reStructuredText file, dedented."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    blocks = re.findall(r"\.\. code-block:: python\n\n((?:    .*\n|\n)+)", text)
    return [re.sub(r"(?m)^    ", "", b).strip() + "\n" for b in blocks]


def read_example(name: str) -> str:
    with open(os.path.join(EXAMPLES, name), encoding="utf-8") as f:
        return f.read()


@unittest.skipUnless(os.path.isdir(EXAMPLES), "docs/examples is in a source checkout only")
class ReadmeTests(unittest.TestCase):
    def test_readme_example_is_the_quickstart_file(self) -> None:
        # The README cannot include a file (PyPI renders it alone): it carries a copy of
        # docs/examples/quickstart.py, which ExampleScriptTests runs.
        self.assertEqual(python_blocks(README), [read_example("quickstart.py")])

    def test_the_getting_started_snippets_run(self) -> None:
        # The examples proper are files (literalinclude); the page's own snippets run here.
        blocks = python_blocks(os.path.join(CHECKOUT, "docs", "getting-started.rst"))
        self.assertTrue(blocks)
        for block in blocks:
            done = subprocess.run(
                [sys.executable, "-c", block], capture_output=True, text=True, timeout=60
            )
            self.assertEqual(done.returncode, 0, block + done.stderr)

    def test_every_example_file_is_in_the_docs(self) -> None:
        with open(os.path.join(CHECKOUT, "docs", "examples.rst"), encoding="utf-8") as f:
            examples_page = f.read()
        with open(os.path.join(CHECKOUT, "docs", "getting-started.rst"), encoding="utf-8") as f:
            getting_started = f.read()
        for name in sorted(os.listdir(EXAMPLES)):
            if name.endswith(".py"):
                self.assertIn(f"examples/{name}", examples_page + getting_started, name)


@unittest.skipUnless(os.path.isdir(EXAMPLES), "docs/examples is in a source checkout only")
class KafkaExampleScriptTests(unittest.TestCase):
    """Each script as a user runs it, in its own process, against one Apache Kafka node."""

    broker: KafkaBroker

    @classmethod
    def setUpClass(cls) -> None:
        cls.broker = KafkaBroker().start()
        cls.broker.create_topic("orders", 1)
        cls.broker.create_topic("greetings", 1)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.broker.stop()

    def run_python(self, *argv: str) -> str:
        # The script imports the afkak this test imported, whatever is installed.
        path = os.pathsep.join(filter(None, [CHECKOUT, os.environ.get("PYTHONPATH")]))
        done = subprocess.run(
            [sys.executable, *argv],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=CHECKOUT,
            env={**os.environ, "PYTHONPATH": path},
        )
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        return done.stdout

    def run_example(self, name: str) -> str:
        return self.run_python(os.path.join(EXAMPLES, name), self.broker.bootstrap)

    def test_quickstart(self) -> None:
        source = read_example("quickstart.py")
        self.assertEqual(source.count("127.0.0.1:9092"), 1)
        out = self.run_python("-c", source.replace("127.0.0.1:9092", self.broker.bootstrap))
        self.assertIn("written to greetings/0 at offset", out)
        self.assertIn("read b'hello, kafka' at offset", out)

    def test_produce_consume_group(self) -> None:
        # One test, in this order: consume and group read what produce wrote.
        out = self.run_example("produce.py")
        self.assertRegex(out, r"order at orders/0@\d+\n10 orders at offsets \d+\.\.\d+\n")
        self.assertIn("3 orders from offset", out)
        out = self.run_example("consume.py")
        self.assertIn('0@0: key=b\'customer-42\' value=b\'{"item": "tea", "count": 2}\'', out)
        self.assertRegex(out, r"read \d+ messages; committed up to offset \d+")
        out = self.run_example("group.py")
        self.assertIn("assigned: orders/0", out)
        self.assertIn('orders/0@0: b\'{"item": "tea", "count": 2}\'', out)
        self.assertRegex(out, r"read \d+ messages; last offsets \[\d+\]")


@unittest.skipUnless(os.path.isdir(EXAMPLES), "docs/examples is in a source checkout only")
class FakeClusterExampleTests(unittest.TestCase):
    def test_the_testing_example_passes(self) -> None:
        path = os.path.join(EXAMPLES, "test_with_fake_cluster.py")
        spec = importlib.util.spec_from_file_location("afkak_docs_testing_example", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(module.OrderTests)
        result = unittest.TestResult()
        suite.run(result)
        self.assertEqual(result.testsRun, 3)
        self.assertEqual(result.errors + result.failures, [])

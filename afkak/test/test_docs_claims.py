"""Docs that say what the code does (issue 20 item 10): each claim is checked
against the code it describes, so that the two cannot drift apart again."""

from __future__ import annotations

import os
import re
import unittest

import afkak
import afkak.brokerclient
import afkak.testing
from afkak._retry import RECONNECT_BACKOFF_MAX_MS, RECONNECT_BACKOFF_MS, reconnect_backoff
from afkak.test.helpers import optional_module
from afkak.testing._handlers import SERVED_APIS

#: afkak.spark's package imports PySpark (the ``spark`` extra, not the ``test`` one).
spark_options = optional_module("afkak.spark._options")

CHECKOUT = os.path.dirname(os.path.dirname(afkak.__file__))
SPARK_DOC = os.path.join(CHECKOUT, "docs", "spark.rst")


def _words(text: str) -> str:
    return " ".join(text.split())


class FakeClusterDocTests(unittest.TestCase):
    def test_every_served_api_is_named(self) -> None:
        doc = _words(afkak.testing.__doc__ or "")
        for handler in SERVED_APIS.values():
            name = "".join(w.capitalize() for w in handler.__name__.split("_")[1:])
            with self.subTest(name):
                self.assertIn(name, doc)

    def test_transactions_and_the_lso_are_described(self) -> None:
        doc = _words(afkak.testing.__doc__ or "").lower()
        self.assertNotIn("no transactions", doc)
        self.assertNotIn("= last stable offset", doc)
        self.assertIn("last stable offset", doc)


class BrokerClientDocTests(unittest.TestCase):
    def test_reconnect_delays_are_the_real_defaults(self) -> None:
        doc = _words(afkak.brokerclient.__doc__ or "")
        self.assertIn(f"{RECONNECT_BACKOFF_MS} ms", doc)
        self.assertIn(f"{RECONNECT_BACKOFF_MAX_MS / 1000:g} s", doc)
        policy = reconnect_backoff()  # KafkaClient's default, on its random source
        self.assertAlmostEqual(policy(1), RECONNECT_BACKOFF_MS / 1000, delta=0.011)
        self.assertAlmostEqual(policy(30), RECONNECT_BACKOFF_MAX_MS / 1000, delta=0.21)


@unittest.skipUnless(os.path.exists(SPARK_DOC), "docs/ is in a source checkout only")
@unittest.skipUnless(spark_options, "afkak.spark needs the spark extra")
class SparkDocTests(unittest.TestCase):
    def setUp(self) -> None:
        with open(SPARK_DOC, encoding="utf-8") as f:
            self.text = f.read()

    def test_options_table_names_every_client_setting(self) -> None:
        table = self.text.split("\nOptions\n", 1)[1].split("\nExample pipeline\n", 1)[0]
        assert spark_options is not None
        settings = spark_options.KAFKA_SETTINGS - spark_options.SECURITY_SETTINGS
        for setting in sorted(settings):
            with self.subTest(setting):
                self.assertTrue(f"``kafka.{setting}``" in table or f"``{setting}``" in table)

    def test_not_supported_lists_only_what_is_not(self) -> None:
        section = _words(self.text.split("\nNot supported\n", 1)[1])
        first = section.split(".")[0]
        for supported in ("read_committed", "TLS", "SASL"):
            with self.subTest(supported):
                self.assertNotIn(supported, first)
                self.assertTrue(re.search(rf"{supported}.*supported", section))

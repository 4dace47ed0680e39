"""What ``import afkak`` and its lower layers pull in (issue 38: a Spark planner's start-up).

Each fresh Python process Spark starts for a data source pays for afkak's imports
before it asks Kafka anything; so does every command-line run.  These tests pin
what is *not* imported: counts of modules, never times.
"""

from __future__ import annotations

import json
import subprocess
import sys
import unittest
from functools import cache

from afkak.records._varint import ENC, TABLE_LIMIT, encode_zigzag


@cache
def _loaded_after(code: str) -> frozenset[str]:
    """The modules a fresh interpreter holds after running *code*."""
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys; print(json.dumps(sorted(sys.modules)))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return frozenset(json.loads(out.splitlines()[-1]))


class ImportCostTests(unittest.TestCase):
    def test_import_afkak_loads_only_what_is_used(self) -> None:
        """``import afkak`` is cheap; a public name is imported on first use."""
        loaded = _loaded_after("import afkak")
        for heavy in ("afkak.group", "afkak.admin", "afkak.producer", "afkak.client"):
            self.assertNotIn(heavy, loaded)
        loaded = _loaded_after("from afkak import Producer, KafkaClient")
        self.assertIn("afkak.producer", loaded)
        self.assertNotIn("afkak.group", loaded)
        self.assertNotIn("afkak.admin", loaded)

    def test_every_public_name_resolves(self) -> None:
        import afkak

        for name in afkak.__all__:
            self.assertIsNotNone(getattr(afkak, name), name)
        self.assertLessEqual(set(afkak.__all__), set(dir(afkak)))
        with self.assertRaises(AttributeError):
            afkak.NoSuchName  # type: ignore[attr-defined]  # noqa: B018

    def test_the_connection_layer_imports_no_request_it_does_not_send(self) -> None:
        """The throttling table names APIs by key: importing it imports no request module
        (it was forty of them, a quarter of afkak's import time)."""
        loaded = _loaded_after("import afkak.connection")
        messages = {m for m in loaded if m.startswith("afkak.protocol.messages.")}
        # The headers and what a connection sends as it opens (ApiVersions, SASL, Metadata).
        self.assertLessEqual(len(messages), 10, sorted(messages))

    def test_the_oauth_module_imports_no_http_client(self) -> None:
        loaded = _loaded_after("import afkak.connection")
        self.assertNotIn("twisted.web.client", loaded)

    def test_the_varint_table_is_encode_zigzag(self) -> None:
        self.assertEqual(len(ENC), TABLE_LIMIT)
        self.assertEqual(ENC, [encode_zigzag(n) for n in range(TABLE_LIMIT)])

"""What ``import afkak`` and its lower layers pull in (issue 38: a Spark planner's start-up).

Each fresh Python process Spark starts for a data source pays for afkak's imports
before it asks Kafka anything; so does every command-line run.  These tests pin
what is *not* imported: counts of modules, never times.  One fresh interpreter
takes the three snapshots, one import after the other.
"""

from __future__ import annotations

import json
import subprocess
import sys
import unittest
from functools import cache

from afkak.records._varint import ENC, TABLE_LIMIT, encode_zigzag

_SNAPSHOTS = """
import json, sys
seen = []
import afkak
seen.append(sorted(sys.modules))
import afkak.connection
seen.append(sorted(sys.modules))
from afkak import KafkaClient, Producer
seen.append(sorted(sys.modules))
print(json.dumps(seen))
"""


@cache
def _loaded() -> tuple[frozenset[str], ...]:
    """The modules a fresh interpreter holds after ``import afkak``, then after
    ``import afkak.connection``, then after ``from afkak import KafkaClient, Producer``."""
    out = subprocess.run(
        [sys.executable, "-c", _SNAPSHOTS], check=True, capture_output=True, text=True
    ).stdout
    return tuple(frozenset(names) for names in json.loads(out.splitlines()[-1]))


class ImportCostTests(unittest.TestCase):
    def test_import_afkak_loads_only_what_is_used(self) -> None:
        """``import afkak`` is cheap; a public name is imported on first use."""
        package, _, used = _loaded()
        for heavy in ("afkak.group", "afkak.admin", "afkak.producer", "afkak.client"):
            self.assertNotIn(heavy, package)
        self.assertIn("afkak.producer", used)
        self.assertNotIn("afkak.group", used)
        self.assertNotIn("afkak.admin", used)

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
        connection = _loaded()[1]
        messages = {m for m in connection if m.startswith("afkak.protocol.messages.")}
        # The headers and what a connection sends as it opens (ApiVersions, SASL, Metadata).
        self.assertLessEqual(len(messages), 10, sorted(messages))

    def test_the_oauth_module_imports_no_http_client(self) -> None:
        self.assertNotIn("twisted.web.client", _loaded()[1])

    def test_the_varint_table_is_encode_zigzag(self) -> None:
        self.assertEqual(len(ENC), TABLE_LIMIT)
        self.assertEqual(ENC, [encode_zigzag(n) for n in range(TABLE_LIMIT)])

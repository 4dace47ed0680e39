"""KafkaClient's ``tls`` option: what each form turns into, and what is refused.

TLS against a real broker (mutual TLS, host name verification, SASL_SSL, an
endpoint factory doing TLS itself) is proven on Apache Kafka in
``test_security_kafka.py``.
"""

from __future__ import annotations

import shutil
import tempfile

from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.test.brokers.certificates import CertificateAuthority


def tls_directory(case: SynchronousTestCase) -> str:
    """A temporary directory for *case*'s certificates; skips it without Twisted's TLS extra."""
    try:
        import OpenSSL  # noqa: F401
        import service_identity  # noqa: F401
    except ImportError as e:
        case.skipTest(f"Twisted's TLS support is not installed ({e}): pip install 'afkak[tls]'")
    directory = tempfile.mkdtemp(prefix="afkak-tls-")
    case.addCleanup(shutil.rmtree, directory)
    return directory


class TLSOptionTests(SynchronousTestCase):
    """KafkaClient's ``tls`` option: what each form turns into, and what is refused."""

    def setUp(self) -> None:
        issued = CertificateAuthority(tls_directory(self)).issue("c", "127.0.0.1", ("127.0.0.1",))
        self.cert, self.key = issued.cert, issued.key

    def test_forms(self) -> None:
        import ssl

        from twisted.internet.ssl import CertificateOptions

        from afkak import TLS
        from afkak.connection._tls import creator_factory

        verified = creator_factory(True)("kafka-1")
        self.assertEqual(type(verified).__name__, "ClientTLSOptions")
        self.assertEqual(verified._hostname, "kafka-1")
        mutual = TLS(self.cert, (self.cert, self.key)).creator("127.0.0.1")
        self.assertEqual(type(mutual).__name__, "ClientTLSOptions")
        unnamed = TLS(self.cert, (self.cert, self.key), verify_hostname=False).creator("h")
        self.assertIsInstance(unnamed, CertificateOptions)
        self.assertTrue(unnamed.verify)
        ready = CertificateOptions()
        self.assertIs(creator_factory(ready)("any"), ready)
        context = ssl.create_default_context()
        self.assertIs(creator_factory(context)("any"), context)
        self.assertRaises(TypeError, KafkaClient, "h:1", tls="yes")
        self.assertNotIn(self.key, repr(TLS(self.cert, (self.cert, self.key))))

"""TLS is an endpoint factory away: KafkaClient over TLS to a real broker.

Tansu 0.6's own TLS options do not work in the packaged build (``--cert`` and
``--key`` conflict; ``--cert`` alone still serves plain TCP), so the broker sits
behind a TLS-terminating port forwarder on the test's reactor and advertises
the forwarder's port: every byte between afkak and the forwarder is TLS.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import tempfile
from typing import Any

from twisted.internet.endpoints import TCP4ClientEndpoint, serverFromString, wrapClientTLS
from twisted.internet.ssl import Certificate, optionsForClientTLS
from twisted.protocols.portforward import ProxyFactory
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.common import FetchRequest, Message, ProduceRequest
from afkak.test.brokers import TansuBroker, free_port
from afkak.test.helpers import wait


def self_signed_certificate(directory: str) -> tuple[str, str]:
    """Write a certificate for IP 127.0.0.1 and its key as PEM files; return their paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
    return cert_path, key_path


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


class TLSClientTests(SynchronousTestCase):
    def setUp(self) -> None:
        from twisted.internet import reactor

        cert_path, key_path = self_signed_certificate(tls_directory(self))
        with open(cert_path, "rb") as f:
            self.trust = Certificate.loadPEM(f.read())
        tls_port = free_port()
        self.broker = TansuBroker(advertised_port=tls_port).start()
        self.addCleanup(self.broker.stop)
        host, port = self.broker.bootstrap.split(":")
        self.proxy = ProxyFactory(host, int(port))
        server = serverFromString(
            reactor,
            f"ssl:{tls_port}:interface=127.0.0.1:privateKey={key_path}:certKey={cert_path}",
        )
        listening = wait(server.listen(self.proxy))
        self.addCleanup(lambda: wait(listening.stopListening()))
        self.tls_port = tls_port
        self.bootstrap = f"127.0.0.1:{tls_port}"

    def tls_endpoint_factory(self, reactor: Any, host: str, port: int) -> Any:
        """What a user passes as ``endpoint_factory`` for TLS: verify the broker's certificate."""
        options = optionsForClientTLS(host, trustRoot=self.trust)
        return wrapClientTLS(options, TCP4ClientEndpoint(reactor, host, port))

    def test_produce_and_fetch_over_tls(self) -> None:
        client = KafkaClient(self.bootstrap, endpoint_factory=self.tls_endpoint_factory)
        self.addCleanup(lambda: wait(client.close()))
        topic = "tls-topic"
        wait(client.load_metadata_for_topics(topic))
        self.assertEqual(client.topics_to_brokers[(topic, 0)].port, int(self.bootstrap[10:]))
        [produced] = wait(
            client.send_produce_request(
                [ProduceRequest(topic, 0, [Message(0, 0, b"k", b"secret")])]
            )
        )
        [fetched] = wait(
            client.send_fetch_request(
                [FetchRequest(topic, 0, produced.offset, 1 << 16)], max_wait_time=100, min_bytes=1
            )
        )
        self.assertEqual([m.message.value for m in fetched.messages], [b"secret"])

    def test_untrusted_certificate_is_refused(self) -> None:
        def untrusting(reactor: Any, host: str, port: int) -> Any:
            options = optionsForClientTLS(host)  # the platform's trust store: not our CA
            return wrapClientTLS(options, TCP4ClientEndpoint(reactor, host, port))

        client = KafkaClient(self.bootstrap, endpoint_factory=untrusting, timeout=3000)
        self.addCleanup(lambda: wait(client.close()))
        with self.assertRaises(Exception) as caught:
            wait(client.load_metadata_for_topics("tls-refused"))
        self.assertFalse(client.has_metadata_for_topic("tls-refused"), caught.exception)


class TLSOptionTests(SynchronousTestCase):
    """KafkaClient's ``tls`` option: what each form turns into, and what is refused."""

    def setUp(self) -> None:
        self.cert, self.key = self_signed_certificate(tls_directory(self))

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

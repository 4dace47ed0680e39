"""A throw-away certificate authority for TLS tests: a CA, and certificates it signs
for the names given, written as PEM files (Kafka reads PEM keystores and truststores,
so no JKS or keytool is needed)."""

from __future__ import annotations

import datetime
import ipaddress
import os

import attrs
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec


@attrs.frozen
class Issued:
    """One certificate's PEM files: ``cert`` (the certificate), ``key`` (its PKCS#8
    private key) and ``keystore`` (key then certificate, Kafka's PEM keystore)."""

    cert: str
    key: str
    keystore: str


class CertificateAuthority:
    """A CA whose certificate is ``<directory>/ca.pem``; :meth:`issue` signs others."""

    def __init__(self, directory: str, name: str = "afkak test CA") -> None:

        self.directory = directory
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, name)])
        ca = self._builder(self._name, self._key.public_key()).add_extension(
            x509.BasicConstraints(ca=True, path_length=0), critical=True
        )
        self._certificate = ca.sign(self._key, _sha256())
        self.cert = self._write("ca.pem", self._pem(self._certificate))

    def issue(self, label: str, common_name: str, names: tuple[str, ...] = ()) -> Issued:
        """A certificate for ``common_name`` whose subject alternative names are
        ``names`` (IP addresses or DNS names), usable by servers and clients."""

        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, common_name)])
        builder = self._builder(subject, key.public_key()).add_extension(
            x509.BasicConstraints(ca=False, path_length=None), critical=True
        )
        if names:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_general_name(n) for n in names]), critical=False
            )
        certificate = builder.sign(self._key, _sha256())
        key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        cert_pem = self._pem(certificate)
        return Issued(
            cert=self._write(f"{label}.pem", cert_pem),
            key=self._write(f"{label}.key", key_pem),
            keystore=self._write(f"{label}-keystore.pem", key_pem + cert_pem),
        )

    def _builder(
        self, subject: x509.Name, public_key: ec.EllipticCurvePublicKey
    ) -> x509.CertificateBuilder:

        now = datetime.datetime.now(datetime.UTC)
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._name)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
        )

    @staticmethod
    def _pem(certificate: x509.Certificate) -> bytes:
        return certificate.public_bytes(serialization.Encoding.PEM)

    def _write(self, name: str, data: bytes) -> str:
        path = os.path.join(self.directory, name)
        with open(path, "wb") as f:
            f.write(data)
        return path


def _sha256() -> hashes.SHA256:
    return hashes.SHA256()


def _general_name(name: str) -> x509.GeneralName:

    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)

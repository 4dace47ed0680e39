"""Java's key and trust stores, for :class:`~afkak.connection.TLS`: PKCS12, JKS and PEM.

An operations team hands over what the Java client takes (``ssl.keystore.*``,
``ssl.truststore.*``); :class:`KeyStore` and :class:`TrustStore` read them as
they are.  PKCS12 is read by ``cryptography``; JKS, Java's legacy format, by
the short reader below, as no maintained Python package reads it (pyjks, the
one there is, was last released in 2020 and builds a C extension, ``twofish``,
for the JCEKS format).  Like Java (``keystore.type.compat``), a JKS or PKCS12
store is read whichever of the two *type* names: the file's first bytes say
which it is.  Each store is read when it is made, so a wrong password or a
store without a usable key fails there, with a :class:`ValueError` naming the
file and the cause (never the password).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import struct
from typing import Any

import attrs

_JKS_MAGIC = 0xFEEDFEED
_JCEKS_MAGIC = 0xCECECECE
_JKS_INTEGRITY = b"Mighty Aphrodite"
#: Sun's proprietary key protection (``sun.security.provider.KeyProtector``).
_JKS_KEY_PROTECTOR = "1.3.6.1.4.1.42.2.17.1.1"
_STORE_TYPES = ("JKS", "PKCS12", "PEM")
_PEM_KEY = re.compile(rb"-----BEGIN ([A-Z ]*PRIVATE KEY)-----.*?-----END \1-----", re.S)


def _utf16(password: str) -> bytes:
    return password.encode("utf-16-be")


def _der(data: bytes, offset: int, tag: int) -> tuple[bytes, int]:
    """The contents of the DER element of *tag* at *offset*, and the offset after it."""
    if offset + 2 > len(data) or data[offset] != tag:
        raise ValueError("malformed DER")
    length, offset = data[offset + 1], offset + 2
    if length & 0x80:
        size = length & 0x7F
        length, offset = int.from_bytes(data[offset : offset + size], "big"), offset + size
    if offset + length > len(data):
        raise ValueError("malformed DER")
    return data[offset : offset + length], offset + length


def _oid(encoded: bytes) -> str:
    parts, value = [encoded[0] // 40, encoded[0] % 40], 0
    for byte in encoded[1:]:
        value = value << 7 | byte & 0x7F
        if not byte & 0x80:
            parts.append(value)
            value = 0
    return ".".join(map(str, parts))


def _jks_private_key(protected: bytes, password: str) -> bytes:
    """The PKCS#8 key inside a JKS key entry's ``EncryptedPrivateKeyInfo``."""
    info, _ = _der(protected, 0, 0x30)
    algorithm, after = _der(info, 0, 0x30)
    oid, _ = _der(algorithm, 0, 0x06)
    if _oid(oid) != _JKS_KEY_PROTECTOR:
        raise ValueError(f"a key protected by {_oid(oid)}, not JKS's own protection")
    encrypted, _ = _der(info, after, 0x04)
    salt, body, check = encrypted[:20], encrypted[20:-20], encrypted[-20:]
    secret, stream, digest = _utf16(password), bytearray(), salt
    while len(stream) < len(body):
        digest = hashlib.sha1(secret + digest).digest()
        stream += digest
    key = bytes(a ^ b for a, b in zip(body, stream, strict=False))
    if not hmac.compare_digest(hashlib.sha1(secret + key).digest(), check):
        raise ValueError("wrong key password")
    return key


def _read_jks(data: bytes, password: str) -> tuple[list[bytes], list[list[bytes]], list[bytes]]:
    """A JKS store's private keys (PKCS#8) with their chains (DER), and its trusted certificates."""
    magic, version, count = struct.unpack_from(">III", data)
    if magic == _JCEKS_MAGIC:
        raise ValueError(
            "a JCEKS store, which afkak does not read: convert it with keytool "
            "-importkeystore -deststoretype PKCS12"
        )
    if version not in (1, 2):
        raise ValueError(f"JKS version {version}, not 1 or 2")
    if not hmac.compare_digest(
        hashlib.sha1(_utf16(password) + _JKS_INTEGRITY + data[:-20]).digest(), data[-20:]
    ):
        raise ValueError("wrong password (or a corrupt file)")
    offset = 12

    def take(size: int) -> bytes:
        nonlocal offset
        chunk = data[offset : offset + size]
        offset += size
        return chunk

    def certificate() -> bytes:
        if version == 2:
            take(struct.unpack(">H", take(2))[0])  # the certificate type: X.509
        return take(struct.unpack(">I", take(4))[0])

    keys: list[bytes] = []
    chains: list[list[bytes]] = []
    trusted: list[bytes] = []
    for _ in range(count):
        tag = struct.unpack(">I", take(4))[0]
        take(struct.unpack(">H", take(2))[0] + 8)  # alias, timestamp
        if tag == 1:
            keys.append(take(struct.unpack(">I", take(4))[0]))
            chains.append([certificate() for _ in range(struct.unpack(">I", take(4))[0])])
        elif tag == 2:
            trusted.append(certificate())
        else:
            raise ValueError(f"a JKS entry of unknown kind {tag}")
    return keys, chains, trusted


def _store_type(value: str) -> str:
    kind = value.upper()
    if kind not in _STORE_TYPES:
        raise ValueError(f"store type must be one of {', '.join(_STORE_TYPES)}, not {value!r}")
    return kind


def _read(location: str) -> bytes:
    try:
        with open(location, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"{location}: {e.strerror}") from None


def _binary_kind(data: bytes) -> str:
    """``JKS`` or ``PKCS12`` by the file's first bytes (Java's ``keystore.type.compat``)."""
    if len(data) >= 32 and struct.unpack_from(">I", data)[0] in (_JKS_MAGIC, _JCEKS_MAGIC):
        return "JKS"
    if data[:1] == b"\x30":
        return "PKCS12"
    if data.lstrip().startswith(b"-----BEGIN"):
        raise ValueError("a PEM file: set its type to PEM")
    raise ValueError("neither a JKS nor a PKCS12 store")


def _certificates_pem(data: bytes) -> list[Any]:
    from cryptography import x509

    try:
        certificates = x509.load_pem_x509_certificates(data)
    except ValueError:
        raise ValueError("holds no PEM certificate") from None
    return certificates


def _pkcs12(data: bytes, password: str | None) -> Any:
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        return pkcs12.load_pkcs12(data, password.encode() if password is not None else None)
    except ValueError:
        raise ValueError("wrong password (or a corrupt file)") from None


@attrs.frozen
class TrustStore:
    """The certificates trusted to sign the brokers' (``ssl.truststore.*``).

    :param location: a PKCS12, JKS or PEM file.
    :param password: the store's password (PKCS12, JKS); never shown.
    :param type: ``JKS`` (Kafka's default), ``PKCS12`` or ``PEM``.
    :param certificates: PEM certificates given inline
        (``ssl.truststore.certificates``) instead of *location*.
    """

    location: str | None = None
    password: str | None = attrs.field(default=None, repr=False)
    type: str = attrs.field(default="JKS", converter=_store_type)
    certificates: str | None = attrs.field(default=None, repr=False)
    _loaded: tuple[Any, ...] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        if (self.location is None) == (self.certificates is None):
            raise ValueError("a trust store needs a location or inline certificates, not both")
        object.__setattr__(self, "_loaded", tuple(self._load()))

    def _load(self) -> list[Any]:
        from cryptography import x509

        if self.certificates is not None:
            return _certificates_pem(self.certificates.encode())
        assert self.location is not None
        data = _read(self.location)
        try:
            if self.type == "PEM":
                return _certificates_pem(data)
            if _binary_kind(data) == "JKS":
                _, chains, trusted = _read_jks(data, self.password or "")
                trusted += [chain[-1] for chain in chains if chain]
                found = [x509.load_der_x509_certificate(c) for c in trusted]
            else:
                store = _pkcs12(data, self.password)
                found = [c.certificate for c in store.additional_certs]
                if store.cert is not None:
                    found.append(store.cert.certificate)
        except ValueError as e:
            raise ValueError(f"trust store {self.location}: {e}") from None
        if not found:
            raise ValueError(f"trust store {self.location} holds no certificate")
        return found

    def trust_root(self) -> Any:
        """Twisted's trust root of these certificates."""
        from twisted.internet.ssl import Certificate, trustRootFromCertificates

        return trustRootFromCertificates([Certificate(_openssl(c)) for c in self._loaded])


@attrs.frozen
class KeyStore:
    """The client's private key and certificate chain, for mutual TLS (``ssl.keystore.*``).

    :param location: a PKCS12, JKS or PEM file (PEM: the key, then the chain).
    :param password: the store's password (PKCS12, JKS); never shown.
    :param type: ``JKS`` (Kafka's default), ``PKCS12`` or ``PEM``.
    :param key_password: the key's own password (``ssl.key.password``) when it
        differs from the store's (JKS), or an encrypted PEM key's.
    :param key: a PEM private key given inline (``ssl.keystore.key``), with
        *certificate_chain* (``ssl.keystore.certificate.chain``), instead of
        *location*.
    """

    location: str | None = None
    password: str | None = attrs.field(default=None, repr=False)
    type: str = attrs.field(default="JKS", converter=_store_type)
    key_password: str | None = attrs.field(default=None, repr=False)
    key: str | None = attrs.field(default=None, repr=False)
    certificate_chain: str | None = None
    _loaded: tuple[Any, list[Any]] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        inline = self.key is not None or self.certificate_chain is not None
        if inline and (self.key is None or self.certificate_chain is None):
            raise ValueError("an inline key store needs both key and certificate_chain")
        if inline == (self.location is not None):
            raise ValueError("a key store needs a location or an inline key, not both")
        where = f"key store {self.location or '(inline)'}"
        try:
            object.__setattr__(self, "_loaded", self._load())
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None

    def _load(self) -> tuple[Any, list[Any]]:
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization

        if self.key is not None and self.certificate_chain is not None:
            return self._pem_key(self.key.encode()), _certificates_pem(
                self.certificate_chain.encode()
            )
        assert self.location is not None
        data = _read(self.location)
        if self.type == "PEM":
            return self._pem_key(data), _certificates_pem(data)
        if _binary_kind(data) == "PKCS12":
            store = _pkcs12(data, self.password)
            if store.key is None or store.cert is None:
                raise ValueError("holds no private key with its certificate (a trust store?)")
            chain = [store.cert.certificate, *(c.certificate for c in store.additional_certs)]
            return _usable(store.key), chain
        keys, chains, _ = _read_jks(data, self.password or "")
        if not keys:
            raise ValueError("holds no private key entry (a trust store?)")
        if len(keys) > 1:
            raise ValueError(f"holds {len(keys)} private keys; afkak needs one")
        pkcs8 = _jks_private_key(keys[0], self.key_password or self.password or "")
        key = serialization.load_der_private_key(pkcs8, None)
        return _usable(key), [x509.load_der_x509_certificate(c) for c in chains[0]]

    def _pem_key(self, data: bytes) -> Any:
        from cryptography.hazmat.primitives import serialization

        found = _PEM_KEY.search(data)
        if found is None:
            raise ValueError("holds no PEM private key")
        pem = found.group(0)
        password = self.key_password.encode() if self.key_password is not None else None
        try:
            key = serialization.load_pem_private_key(pem, password)
        except TypeError:
            raise ValueError(
                "the key is encrypted: give its password (ssl.key.password)"
                if password is None
                else "the key is not encrypted: give no key password"
            ) from None
        except ValueError:
            raise ValueError("wrong key password (or a malformed key)") from None
        return _usable(key)

    def private_certificate(self) -> Any:
        """Twisted's ``PrivateCertificate`` of the key and the chain's first certificate."""
        from twisted.internet.ssl import Certificate, KeyPair, PrivateCertificate

        key, chain = self._loaded
        return PrivateCertificate.fromCertificateAndKeyPair(
            Certificate(_openssl(chain[0])), KeyPair(_openssl_key(key))
        )

    def extra_chain(self) -> list[Any]:
        """pyOpenSSL's certificates of the chain after the first (sent along, as Java does)."""
        return [_openssl(c) for c in self._loaded[1][1:]]


def _usable(key: Any) -> Any:
    """*key* if TLS can sign with it: RSA, EC, Ed25519 or Ed448."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

    if not isinstance(
        key,
        (
            rsa.RSAPrivateKey,
            ec.EllipticCurvePrivateKey,
            ed25519.Ed25519PrivateKey,
            ed448.Ed448PrivateKey,
        ),
    ):
        raise ValueError(f"a {type(key).__name__.lstrip('_')} key, which TLS cannot sign with")
    return key


def _openssl(certificate: Any) -> Any:
    from OpenSSL.crypto import X509

    return X509.from_cryptography(certificate)


def _openssl_key(key: Any) -> Any:
    from OpenSSL.crypto import PKey

    return PKey.from_cryptography_key(key)

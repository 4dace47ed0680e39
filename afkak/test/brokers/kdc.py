"""An MIT Kerberos KDC in a temporary directory, for the GSSAPI proofs.

:class:`KerberosKDC` makes a realm with ``kdb5_util create``, adds principals and
writes keytabs with ``kadmin.local``, writes a ``krb5.conf`` naming the KDC on a
127.0.0.1 port, and runs ``krb5kdc -n`` (in the foreground) until :meth:`stop`.
Debian's ``krb5-kdc`` and ``krb5-admin-server`` packages provide the programs
(tools/test.sh installs them as root); without them the tests skip.

Host names: a client asks for ``SERVICE/HOST`` where HOST is the broker's host as
the client connects to it, canonicalized by the Kerberos library.  The brokers
here listen on 127.0.0.1, whose name in /etc/hosts is ``localhost``: MIT's
``rdns`` and Java's ``InetAddress.getHostName`` both turn 127.0.0.1 into
``localhost``, so the broker's principal is ``kafka/localhost@REALM``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from typing import Self

from afkak.test.brokers.probe import can_connect
from afkak.test.brokers.process import unavailable
from afkak.testing.apache_kafka import free_port

REALM = "AFKAK.TEST"
_PROGRAMS = ("kdb5_util", "kadmin.local", "krb5kdc")
_SBIN = ("/usr/sbin", "/usr/local/sbin")


def _program(name: str) -> str | None:
    path = shutil.which(name)
    if path is None:
        path = next(
            (os.path.join(d, name) for d in _SBIN if os.access(os.path.join(d, name), os.X_OK)),
            None,
        )
    return path


class KerberosKDC:
    """One MIT KDC for realm :data:`REALM` on 127.0.0.1 (TCP and UDP on one port)."""

    def __init__(self, max_life: str = "10h") -> None:
        self.max_life = max_life
        self.directory = ""
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def krb5_conf(self) -> str:
        """The ``krb5.conf`` clients use (``KRB5_CONFIG``, ``-Djava.security.krb5.conf``)."""
        return os.path.join(self.directory, "krb5.conf")

    def _env(self) -> dict[str, str]:
        return {
            **os.environ,
            "KRB5_CONFIG": self.krb5_conf,
            "KRB5_KDC_PROFILE": os.path.join(self.directory, "kdc.conf"),
        }

    def start(self) -> Self:
        """Create the realm and run the KDC; skips (fails on CI) if MIT's KDC is missing."""
        missing = [name for name in _PROGRAMS if _program(name) is None]
        if missing:
            unavailable(
                f"kerberos: {', '.join(missing)} missing "
                "(apt-get install krb5-kdc krb5-admin-server)"
            )
        self.directory = tempfile.mkdtemp(prefix="afkak-kdc-")
        self.port = free_port()
        d = self.directory
        with open(os.path.join(d, "kdc.conf"), "w") as f:
            f.write(
                f"[kdcdefaults]\n kdc_ports = {self.port}\n kdc_tcp_ports = {self.port}\n"
                f"[realms]\n {REALM} = {{\n  database_name = {d}/principal\n"
                f"  key_stash_file = {d}/stash\n  acl_file = {d}/kadm5.acl\n"
                f"  max_life = {self.max_life}\n  max_renewable_life = 0\n"
                "  supported_enctypes = aes256-cts-hmac-sha1-96:normal "
                "aes128-cts-hmac-sha1-96:normal\n }\n"
                f"[logging]\n kdc = FILE:{d}/kdc.log\n"
            )
        with open(self.krb5_conf, "w") as f:
            f.write(
                f"[libdefaults]\n default_realm = {REALM}\n dns_lookup_kdc = false\n"
                " dns_lookup_realm = false\n rdns = true\n dns_canonicalize_hostname = true\n"
                " udp_preference_limit = 1\n"
                f"[realms]\n {REALM} = {{\n  kdc = 127.0.0.1:{self.port}\n }}\n"
                f"[domain_realm]\n localhost = {REALM}\n"
            )
        open(os.path.join(d, "kadm5.acl"), "w").close()
        self._run("kdb5_util", "create", "-s", "-r", REALM, "-P", os.urandom(12).hex())
        kdc = _program("krb5kdc")
        assert kdc is not None
        log = open(os.path.join(d, "krb5kdc.out"), "ab")
        with log:
            self._process = subprocess.Popen(
                [kdc, "-n", "-r", REALM, "-P", os.path.join(d, "kdc.pid")],
                env=self._env(), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            )  # fmt: skip
        deadline = time.monotonic() + 30
        while not can_connect(f"127.0.0.1:{self.port}"):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                unavailable(f"kerberos: krb5kdc did not start on port {self.port}")
            time.sleep(0.05)
        return self

    def add_principal(self, name: str, *, keytab: bool = True, max_life: str = "") -> str:
        """Add *name* with a random key; a keytab holding it (its path) or ``""``."""
        extra = f'-maxlife "{max_life}"' if max_life else ""
        self._query(f"addprinc -randkey {extra} {name}")
        if not keytab:
            return ""
        path = os.path.join(self.directory, name.replace("/", "_") + ".keytab")
        self._query(f"ktadd -k {path} -norandkey {name}")
        return path

    def kinit(self, principal: str, keytab: str, cache: str, lifetime: str = "") -> None:
        """``kinit`` *principal* from *keytab* into the credential cache *cache*."""
        extra = ["-l", lifetime] if lifetime else []
        self._run("kinit", "-k", "-t", keytab, "-c", cache, *extra, principal)

    def delete_principal(self, name: str) -> None:
        self._query(f"delprinc -force {name}")

    def _query(self, query: str) -> None:
        self._run("kadmin.local", "-r", REALM, "-q", query)

    def _run(self, program: str, *args: str) -> None:
        path = _program(program)
        assert path is not None
        result = subprocess.run(
            [path, *args], env=self._env(), capture_output=True, stdin=subprocess.DEVNULL
        )
        output = (result.stdout + result.stderr).decode("utf-8", "replace")
        if result.returncode or (program == "kadmin.local" and "error" in output.lower()):
            raise RuntimeError(f"{program} {' '.join(args)} failed: {output[-2000:]}")

    def stop(self) -> None:
        """Stop the KDC and remove the realm; idempotent."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        if self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = ""

"""Certificate authorities: SPE's own interception CA (`./spe ca`) and throw-away test CAs.

SPE's CA signs the leaf certificates the Multiplier presents inside intercepted CONNECT tunnels.
It lives in one per-user directory (default ~/.local/share/spe/ca, or $SPE_CA_DIR), made once:
spe-ca.pem (the certificate, to be trusted by browsers) and spe-ca.key (readable by its owner
only; the Multiplier reads it from there and nothing copies it anywhere else).

A test CA (`test_origin_tls`) is a separate, per-run CA for the synthetic origin's HTTPS: the lab
hands its certificate to the Collector, which then verifies the origin like any other.
"""

from __future__ import annotations

import base64
import datetime
import getpass
import hashlib
import ipaddress
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CERT_NAME = "spe-ca.pem"
KEY_NAME = "spe-ca.key"
# A test origin's files in its directory (test_origin_tls): the CA the Collector trusts, the server's chain and key.
ORIGIN_CA_NAME, ORIGIN_CERT_NAME, ORIGIN_KEY_NAME = "origin-ca.pem", "origin-cert.pem", "origin-key.pem"
CA_YEARS = 10
LEAF_DAYS = 825


class CaError(Exception):
    """A CA that cannot be used, with what to do about it."""


@dataclass(frozen=True)
class CaFiles:
    directory: Path

    @property
    def cert(self) -> Path:
        return self.directory / CERT_NAME

    @property
    def key(self) -> Path:
        return self.directory / KEY_NAME


def default_dir() -> Path:
    if os.environ.get("SPE_CA_DIR"):
        return Path(os.environ["SPE_CA_DIR"])
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local/share")
    return Path(data_home) / "spe" / "ca"


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "SPE"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64])])


def new_ca(common_name: str, years: int = CA_YEARS) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA that may sign leaf certificates only (path length 0)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = _name(common_name)
    now = _now()
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=365 * years))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return cert, key


def _san(names: list[str]) -> x509.SubjectAlternativeName:
    """IP SANs for address literals, DNS SANs for names. An address is also written as a DNS
    name: Squid 5 (the Collector) matches a URL's host against DNS names and the CN only."""
    entries: list[x509.GeneralName] = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            pass
        entries.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(entries)


def issue_leaf(ca_cert: x509.Certificate, ca_key, names: list[str],
               days: int = LEAF_DAYS) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A server certificate for `names` (host names or IP addresses) signed by the CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (x509.CertificateBuilder().subject_name(_name(names[0])).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(_san(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert, key


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write_private(path: Path, data: bytes) -> None:
    """Created with mode 0600 from the start: the key is never readable by others, not even briefly."""
    tmp = path.with_name(path.name + ".new")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    tmp.replace(path)


def create_spe_ca(directory: Path | None = None, *, regenerate: bool = False) -> tuple[CaFiles, bool]:
    """SPE's interception CA in `directory`, made if missing (or if `regenerate`). Returns (files, created)."""
    files = CaFiles(directory or default_dir())
    if files.cert.exists() and files.key.exists() and not regenerate:
        check_spe_ca(files)
        return files, False
    files.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    files.directory.chmod(0o700)
    who = f"{getpass.getuser()}@{socket.gethostname()}"
    cert, key = new_ca(f"SPE interception CA ({who}, {_now():%Y-%m-%d})")
    _write_private(files.key, _key_pem(key))
    files.cert.write_bytes(_cert_pem(cert))
    files.cert.chmod(0o644)
    return files, True


def check_spe_ca(files: CaFiles) -> None:
    """Raises CaError naming the path and the command that fixes it."""
    for path in (files.cert, files.key):
        if not path.exists():
            raise CaError(f"SPE's CA is missing: {path} does not exist (create it with ./spe ca)")
        if not os.access(path, os.R_OK):
            raise CaError(f"SPE's CA is unreadable: {path} (it belongs to {path.owner()}; ./spe ca --regenerate "
                          "makes a new one for you)")
    if files.key.stat().st_mode & 0o077:
        raise CaError(f"{files.key} is readable by others: chmod 600 it, or ./spe ca --regenerate")


def spki_sha256(cert_path: Path) -> str:
    """Base64 SHA-256 of the certificate's public key: Chromium's --ignore-certificate-errors-spki-list."""
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    der = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def trust_instructions(files: CaFiles) -> str:
    cert = files.cert
    return f"""SPE's CA certificate: {cert}
(its key, {files.key}, stays in that directory, readable by you only)

Trust it where you browse through an intercepting Multiplier (--intercept-tls):
  Chromium, one run:   chromium --proxy-server=http://127.0.0.1:8080 \\
                         --ignore-certificate-errors-spki-list={spki_sha256(cert)}
  Chromium, always:    certutil -d sql:$HOME/.pki/nssdb -A -t "C,," -n "SPE CA" -i {cert}
                       (libnss3-tools; remove with: certutil -d sql:$HOME/.pki/nssdb -D -n "SPE CA")
  Firefox:             Settings > Privacy & Security > Certificates > View Certificates >
                       Authorities > Import {cert}, "Trust this CA to identify websites"
  curl:                curl --cacert {cert} -x http://127.0.0.1:8080 https://...
  the system store:    sudo cp {cert} /usr/local/share/ca-certificates/spe-ca.crt &&
                       sudo update-ca-certificates
                       (remove: delete that file, then sudo update-ca-certificates --fresh)

Anyone holding the key can impersonate any site to a client that trusts this CA: remove the
trust when you are done (docs/https.md), and ./spe ca --regenerate makes a new CA.
"""


def test_origin_tls(directory: Path, names: list[str] | None = None) -> tuple[Path, Path, Path]:
    """A throw-away CA and a server certificate for the synthetic origin, written into `directory`.

    Returns (ca_cert, server_cert_chain, server_key). The Collector is handed ca_cert.
    """
    names = names or ["localhost", "127.0.0.1"]
    directory.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = new_ca("SPE test origin CA")
    cert, key = issue_leaf(ca_cert, ca_key, names)
    paths = (directory / ORIGIN_CA_NAME, directory / ORIGIN_CERT_NAME, directory / ORIGIN_KEY_NAME)
    paths[0].write_bytes(_cert_pem(ca_cert))
    paths[1].write_bytes(_cert_pem(cert))
    _write_private(paths[2], _key_pem(key))
    return paths

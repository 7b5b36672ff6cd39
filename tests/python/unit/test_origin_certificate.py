"""The certificate the lab's HTTPS origin serves, from the test CA spe_tools/ca.py makes for a run (./spe ca and
the Multiplier's refusal without its CA: loopback/test_ca.py)."""

from __future__ import annotations

import stat

from cryptography import x509

from spe_tools import ca as spe_ca


def test_the_test_origin_certificate_names_localhost_and_the_address_also_as_a_dns_name(tmp_path):
    ca_cert, cert_path, key = spe_ca.test_origin_tls(tmp_path / "origin")
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(san.get_values_for_type(x509.DNSName)) == {"localhost", "127.0.0.1"}  # Squid 5 reads only these
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert stat.S_IMODE(key.stat().st_mode) == 0o600

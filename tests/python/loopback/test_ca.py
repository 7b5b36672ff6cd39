"""./spe ca: SPE's interception CA, made once in a per-user directory, its key private; errors that say
what to do. The Multiplier's side (leaf certificates, a missing CA) is in tests/unit/test_leaf_certificates.cpp."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from cryptography import x509

from spe_tools import ca as spe_ca
from spe_tools.process import free_port


def spe_ca_cli(*args: str, ca_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "spe"), "ca", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SPE_CA_DIR": str(ca_dir)})


def test_the_ca_is_made_once_with_a_private_key_and_the_trust_instructions(tmp_path):
    ca_dir = tmp_path / "ca"
    first = spe_ca_cli(ca_dir=ca_dir)
    assert first.returncode == 0, first.stderr
    assert "created a new CA" in first.stdout and "--ignore-certificate-errors-spki-list=" in first.stdout
    assert "certutil" in first.stdout and "update-ca-certificates" in first.stdout and "--cacert" in first.stdout
    assert stat.S_IMODE((ca_dir / "spe-ca.key").stat().st_mode) == 0o600
    assert stat.S_IMODE(ca_dir.stat().st_mode) == 0o700
    cert = x509.load_pem_x509_certificate((ca_dir / "spe-ca.pem").read_bytes())
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    again = spe_ca_cli(ca_dir=ca_dir)
    assert "created" not in again.stdout
    assert (ca_dir / "spe-ca.pem").read_bytes() == cert.public_bytes(spe_ca.serialization.Encoding.PEM)
    path = spe_ca_cli("--path", ca_dir=ca_dir)
    assert path.stdout.strip() == str(ca_dir / "spe-ca.pem")


def test_regenerate_makes_a_new_ca(tmp_path):
    files, created = spe_ca.create_spe_ca(tmp_path / "ca")
    assert created
    before = files.cert.read_bytes()
    assert spe_ca_cli("--regenerate", ca_dir=tmp_path / "ca").returncode == 0
    assert files.cert.read_bytes() != before


def test_a_key_others_can_read_or_a_missing_file_is_a_clear_error(tmp_path):
    files, _ = spe_ca.create_spe_ca(tmp_path / "ca")
    files.key.chmod(0o644)
    with pytest.raises(spe_ca.CaError, match="readable by others"):
        spe_ca.check_spe_ca(files)
    result = spe_ca_cli(ca_dir=tmp_path / "ca")
    assert result.returncode == 1 and "chmod 600" in result.stderr
    files.key.unlink()
    with pytest.raises(spe_ca.CaError, match=r"does not exist \(create it with ./spe ca\)"):
        spe_ca.check_spe_ca(files)


def test_the_multiplier_refuses_to_start_without_its_ca_naming_the_file_and_the_command(tmp_path):
    from conftest import multiplier_binary

    def start(ca_dir: Path) -> subprocess.CompletedProcess:
        return subprocess.run([str(multiplier_binary()), "--collector", "127.0.0.1:9", "--listen",
                               f"127.0.0.1:{free_port()}", "--intercept-tls", "--ca-dir", str(ca_dir)],
                              capture_output=True, text=True, timeout=30)

    result = start(tmp_path / "no-ca")
    assert result.returncode == 1
    assert str(tmp_path / "no-ca" / "spe-ca.pem") in result.stderr and "./spe ca" in result.stderr
    files, _ = spe_ca.create_spe_ca(tmp_path / "ca")
    files.key.write_text("not a key\n")
    result = start(tmp_path / "ca")
    assert result.returncode == 1 and "is not an unencrypted PEM private key" in result.stderr

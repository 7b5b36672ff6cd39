"""Every Python test file lies in a layer folder (unit, loopback, real_proxies, browser: conftest.py says which
test goes where), so that `./spe test --layer` and `pytest -m LAYER` select every test there is."""

from __future__ import annotations

from pathlib import Path

from conftest import LAYERS, layer_of

HERE = Path(__file__).resolve().parents[1]  # tests/python


def test_every_test_file_is_in_a_layer_folder():
    outside = [str(p.relative_to(HERE)) for p in HERE.rglob("test_*.py") if layer_of(p) is None]
    assert not outside, f"move each into one of {', '.join(LAYERS)} (conftest.py says which): {outside}"


def test_each_layer_has_tests_and_a_registered_marker(pytestconfig):
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    for layer in LAYERS:
        assert list((HERE / layer).glob("test_*.py")), layer
        assert layer in registered, f"pyproject.toml registers no marker {layer!r}"


def test_a_test_is_marked_with_its_layer(request):
    assert request.node.get_closest_marker("unit") is not None
    assert request.node.get_closest_marker("loopback") is None

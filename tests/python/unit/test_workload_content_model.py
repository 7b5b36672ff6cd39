"""The content model (pure): deterministic per object, and its shares, sizes and think times follow
the configured distributions within statistical tolerance over a few thousand objects."""

from __future__ import annotations

import json
import math
import random
import statistics

import pytest

from spe_tools.workload.content import model as cm

N = 4000


def specs(model: cm.Model, kind: str = "obj") -> list[cm.ObjectSpec]:
    return [cm.object_spec(model, kind, f"t{i}") for i in range(N)]


def share(items: list, predicate) -> float:
    return sum(1 for x in items if predicate(x)) / len(items)


def test_same_id_same_reply_different_ids_differ():
    model = cm.Model()
    a1, a2 = cm.object_spec(model, "obj", "x17"), cm.object_spec(cm.Model(), "obj", "x17")
    assert a1 == a2
    assert cm.body(model, a1) == cm.body(cm.Model(), a2)
    assert len(cm.body(model, a1)) == a1.size
    b = cm.object_spec(model, "obj", "x18")
    assert cm.body(model, b) != cm.body(model, a1)
    # An uncacheable object's body carries its serial: two fetches never match.
    assert cm.body(model, a1, serial=1) != cm.body(model, a1, serial=2)
    assert len(cm.body(model, a1, serial=123456)) == a1.size


def test_vary_variants_have_their_own_etag():
    spec = cm.object_spec(cm.Model(), "obj", "x17")
    tags = {cm.variant_etag(spec, lang) for lang in ("en", "de", "fr")}
    assert len(tags) == 3 and spec.etag not in tags
    assert cm.variant_etag(spec, "en") == cm.variant_etag(spec, "en")
    assert cm.variant_etag(spec, "") == spec.etag  # no Accept-Language: the object's own tag
    assert all(tag.startswith('"') and tag.endswith('"') for tag in tags)


def test_default_sizes_are_exponential_with_mean_13_kb():
    sizes = [s.size for s in specs(cm.Model())]
    mean = statistics.fmean(sizes)
    assert abs(mean - 13312) / 13312 < 0.05  # the sample mean's deviation is 1.6 %
    # exponential: median = mean * ln 2, and about e^-1 of the objects are above the mean
    assert abs(statistics.median(sizes) - 13312 * math.log(2)) / (13312 * math.log(2)) < 0.07
    assert abs(share(sizes, lambda s: s > 13312) - math.exp(-1)) < 0.03


def test_default_cacheability_and_chunked_shares():
    objects = specs(cm.Model())
    assert abs(share(objects, lambda s: s.cacheable) - 0.8) < 0.03
    assert abs(share(objects, lambda s: s.cache == "private") - 0.2) < 0.03
    assert abs(share(objects, lambda s: s.chunked) - 0.1) < 0.02


def test_configured_shares_of_every_cacheability_class():
    shares = {"public": 0.5, "private": 0.2, "no-store": 0.1, "cookie": 0.1, "vary": 0.1}
    objects = specs(cm.Model(cache_shares=shares, chunked_share=0.3))
    for name, expected in shares.items():
        assert abs(share(objects, lambda s, n=name: s.cache == n) - expected) < 0.03, name
    assert abs(share(objects, lambda s: s.chunked) - 0.3) < 0.03


def test_type_shares_and_extensions():
    objects = specs(cm.Model())
    for ctype, expected in cm.Model().type_shares.items():
        assert abs(share(objects, lambda s, t=ctype: s.content_type == t) - expected) < 0.03
    assert cm.object_spec(cm.Model(), "obj", "a/b.gif").content_type == "image/gif"
    assert cm.object_spec(cm.Model(), "obj", "/index.html").content_type == "text/html"


def test_const_and_uniform_size_distributions():
    assert {s.size for s in specs(cm.Model(size_dist="const", size_mean=500))} == {500}
    sizes = [s.size for s in specs(cm.Model(size_dist="uniform", size_mean=1000))]
    assert 1 <= min(sizes) and max(sizes) <= 1999
    assert abs(statistics.fmean(sizes) - 1000) < 30


def test_think_times_are_normal_with_the_configured_mean_and_deviation():
    model = cm.Model(think_mean_ms=300, think_sd_ms=100)
    rng = random.Random(5)
    draws = [cm.think_ms(model, rng) for _ in range(N)]
    assert abs(statistics.fmean(draws) - 300) < 300 * 0.03
    assert abs(statistics.stdev(draws) - 100) < 100 * 0.05
    assert abs(share(draws, lambda t: t < 300) - 0.5) < 0.03
    assert min(draws) >= 0
    assert cm.think_ms(cm.Model(think_mean_ms=0, think_sd_ms=0), rng) == 0.0
    assert cm.think_ms(model, rng, mean_ms=0, sd_ms=0) == 0.0


def test_pages_are_html_with_images_links_and_the_planned_size():
    model = cm.Model()
    for oid in ("0", "7", "42"):
        spec = cm.object_spec(model, "page", oid)
        page = cm.body(model, spec).decode()
        images, links = cm.page_images(model, oid), cm.page_links(model, oid)
        assert model.page_images_min <= len(images) <= model.page_images_max
        assert all(f'src="{src}"' in page for src in images)
        assert all(f'href="{href}"' in page for href in links)
        assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
        if spec.size > 2000:
            assert len(page.encode()) == spec.size
    sizes = [s.size for s in specs(model, "page")]
    assert abs(statistics.fmean(sizes) - model.page_size_mean) / model.page_size_mean < 0.05


def test_paths_name_their_objects():
    assert cm.parse_path("/obj/abc") == ("obj", "abc")
    assert cm.parse_path("/page/12.html") == ("page", "12")
    assert cm.parse_path("/seq/s1/3.jpg") == ("seq", "s1/3")
    assert cm.parse_path("/images/logo.gif") == ("obj", "/images/logo.gif")


def test_model_file_and_validation(tmp_path):
    path = tmp_path / "model.json"
    path.write_text(json.dumps({"size_mean": 2048, "cache_shares": {"public": 0.5, "no-store": 0.5}}))
    model = cm.Model.load(path, think_mean_ms=10)
    assert model.size_mean == 2048 and model.think_mean_ms == 10
    assert model.cache_shares["no-store"] == 0.5 and model.cache_shares["private"] == 0.0
    with pytest.raises(ValueError, match="sum to 1"):
        cm.Model(cache_shares={"public": 0.5})
    with pytest.raises(ValueError, match="unknown model keys"):
        cm.Model.from_dict({"sise_mean": 1})
    for bad, expected in (({"size_mean": "big"}, "'size_mean': expected an integer"),
                          ({"size_mean": 1.5}, "'size_mean': expected an integer"),
                          ({"think_mean_ms": True}, "'think_mean_ms': expected a number"),
                          ({"size_dist": 3}, "'size_dist': expected a string"),
                          ({"cache_shares": {"public": "all"}}, "'cache_shares': expected a table of numbers")):
        with pytest.raises(ValueError, match=expected):
            cm.Model.from_dict(bad)
    assert cm.Model.from_dict({"think_mean_ms": 5}).think_mean_ms == 5  # an integer is a number

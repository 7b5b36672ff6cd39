#include "judge/cache_rule_catalogue.hpp"
#include "log/mismatch_capture.hpp"
#include "log/record_json.hpp"
#include "log/rope_lines.hpp"

#include "http/secret_digest.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <string_view>

namespace {
constexpr std::string_view kMultiplier = "east";  // the --name of the Multiplier writing the records

spe::RequestRecord sample() {
    spe::RequestRecord r;
    r.ts = 1000.5;
    r.id = 7;
    r.client = "127.0.0.1:5555";
    r.method = "GET";
    r.url = "http://example.org/\xff\"quoted\"";
    r.version = "HTTP/1.1";
    r.client_status = 200;
    r.collector.status = 200;
    r.collector.bytes = 5083;
    r.collector.md5 = "aa";
    r.collector.connect_us = 0;
    r.collector.ttfb_us = 34195;
    r.collector.total_us = 68285;
    spe::ProxyResult ok{"Proxy-1", {}, spe::ResultClass::ok, {}};
    ok.measure.status = 200;
    ok.measure.bytes = 5083;
    ok.measure.ttfb_us = 1'108'105;
    ok.measure.total_us = 1'158'658;
    spe::ProxyResult bad{"Proxy-2", {}, spe::ResultClass::header_mismatch, {"content-type", "etag"}};
    bad.measure.status = 200;
    spe::ProxyResult dead{"Proxy-3", {}, spe::ResultClass::no_response, {}};
    dead.measure.error = spe::LegError::timeout;
    r.proxies = {ok, bad, dead};
    return r;
}
}  // namespace

TEST_CASE("JSON line carries the schema's fields and survives invalid UTF-8") {
    auto j = nlohmann::json::parse(spe::to_json_line(sample(), kMultiplier));
    for (auto key : {"ts", "id", "multiplier", "client", "method", "url", "version", "collector", "proxies"})
        CHECK(j.contains(key));
    CHECK(j["id"] == 7);
    CHECK(j["multiplier"] == "east");
    CHECK(j["collector"]["ttfb_us"] == 34195);
    CHECK(j["collector"]["error"].is_null());
    REQUIRE(j["proxies"].size() == 3);
    CHECK(j["proxies"][1]["result"] == "HEADER_MISMATCH");
    CHECK(j["proxies"][1]["mismatched_headers"] == nlohmann::json({"content-type", "etag"}));
    CHECK(j["proxies"][2]["error"] == "timeout");
    CHECK(j["proxies"][2]["status"].is_null());
    CHECK(j["proxies"][2]["ttfb_us"].is_null());
    CHECK(j["tag"].is_null());
    CHECK(j["collector"]["fetch"].is_null());
    CHECK(j["collector"]["retried"] == false);
}

TEST_CASE("the request tag, the fetch stamps and retries are recorded") {
    auto r = sample();
    r.tag = "00ff00ff00ff00ff-7";
    r.collector.fetch = "collector-fetch-1";
    r.proxies[0].measure.fetch = "collector-fetch-2";
    r.proxies[2].measure.retried = true;
    auto j = nlohmann::json::parse(spe::to_json_line(r, kMultiplier));
    CHECK(j["tag"] == "00ff00ff00ff00ff-7");
    CHECK(j["collector"]["fetch"] == "collector-fetch-1");
    CHECK(j["proxies"][0]["fetch"] == "collector-fetch-2");
    CHECK(j["proxies"][1]["fetch"].is_null());
    CHECK(j["proxies"][0]["retried"] == false);
    CHECK(j["proxies"][2]["retried"] == true);
}

TEST_CASE("ROPE lines follow the paper's Figure 3") {
    auto text = spe::to_rope_lines(sample(), 4630);
    CHECK_THAT(text, Catch::Contains(":(pid=4630):RESULT: Collector: 0:34195 0:34090 5083 {DUMMY,} 127.0.0.1 "
                                     "non-validation HTTP/1.1 GET http://example.org/"));
    CHECK_THAT(text, Catch::Contains("RESULT: Proxy-1: 1:108105 0:50553 5083 {200,200,OK,} 127.0.0.1"));
    CHECK_THAT(text, Catch::Contains("RESULT: Proxy-2: 0:0 0:0 0 {200,200,HEADER_MISMATCH,content-type,etag,}"));
    CHECK_THAT(text, Catch::Contains("RESULT: Proxy-3: 0:0 0:0 0 {200,-,NO_RESPONSE,}"));
    CHECK(std::count(text.begin(), text.end(), '\n') == 4);
}

namespace {
// The JSON line as it was first written, through an nlohmann::json tree: the
// hand-written writer must produce exactly these bytes.
nlohmann::json reference_fields(const spe::CacheVerdict::Fields& fields) {
    nlohmann::json j = nlohmann::json::object();
    for (auto it = fields.rbegin(); it != fields.rend(); ++it)  // the first of a repeated name wins
        j[it->first] = it->second;
    return j;
}

nlohmann::json reference_cache(const spe::CacheVerdict& v) {
    auto findings = [](const std::vector<spe::Finding>& list) {
        nlohmann::json a = nlohmann::json::array();
        for (const auto& f : list)
            a.push_back({{"rule", f.rule}, {"section", f.section}, {"reason", f.reason}});
        return a;
    };
    // Empty and null members are left out.
    nlohmann::json j = {{"provenance", spe::to_string(v.provenance)}, {"reused", v.reused}};
    if (!v.fetch.empty()) j["fetch"] = std::string(v.fetch.data(), v.fetch.size());
    if (v.fetched_at) j["fetched_at"] = *v.fetched_at;
    if (v.validated_at) j["validated_at"] = *v.validated_at;
    if (v.validated_length) j["validated_length"] = *v.validated_length;
    if (v.age_s) j["age_s"] = std::round(*v.age_s * 1000) / 1000;
    if (!v.violations.empty()) j["violations"] = findings(v.violations);
    if (!v.advisories.empty()) j["advisories"] = findings(v.advisories);
    if (!v.exercised.empty()) j["exercised"] = v.exercised;
    for (auto [key, text] : {std::pair{"conservative", std::string_view(v.conservative)},
                             {"claim", spe::to_string(v.claim)},
                             {"claim_conflict", std::string_view(v.claim_conflict)},
                             {"unjudged", std::string_view(v.unjudged)}})
        if (!text.empty()) j[key] = text;
    if (!v.violations.empty())
        j["evidence"] = {{"served", reference_fields(v.evidence_served)},
                         {"reference", reference_fields(v.evidence_reference)},
                         {"request", reference_fields(v.evidence_request)}};
    if (v.origin) {
        nlohmann::json origin = nlohmann::json::object();
        for (const auto& [name, field] : spe::kShownFields)
            if (auto value = v.origin->get(field)) origin[std::string(name)] = std::string(*value);
        if (!origin.empty()) j["origin"] = origin;
        if (!v.origin->field_names.empty()) j["origin_fields"] = v.origin->field_names.names();
        if (!v.origin_connection.empty()) j["origin_connection"] = v.origin_connection;
    }
    return j;
}

nlohmann::json reference_measure(const spe::Measure& m) {
    auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
    nlohmann::json j = {
        {"status", opt(m.status)},
        {"http_version",
         m.version ? nlohmann::json("HTTP/" + std::to_string(m.version / 10) + "." + std::to_string(m.version % 10))
                   : nlohmann::json()},
        {"header_bytes", m.header_bytes},
        {"bytes", m.bytes},
        {"md5", opt(m.md5)},
        {"connect_us", opt(m.connect_us)},
        {"ttfb_us", opt(m.ttfb_us)},
        {"total_us", opt(m.total_us)},
        {"error", m.error == spe::LegError::none ? nlohmann::json() : nlohmann::json(std::string(to_string(m.error)))},
        {"error_detail", m.error_detail.empty() ? nlohmann::json() : nlohmann::json(m.error_detail)},
        {"fetch", opt(m.fetch)},
        {"retried", m.retried},
    };
    if (m.cache) j["cache"] = reference_cache(*m.cache);
    for (const auto& i : m.interim)
        j["interim"].push_back({{"status", i.status}, {"at_us", i.at_us}});
    return j;
}

std::string reference_json_line(const spe::RequestRecord& r) {
    nlohmann::json proxies = nlohmann::json::array();
    for (const auto& p : r.proxies) {
        auto j = reference_measure(p.measure);
        j["name"] = p.name;
        j["position"] = p.position;
        j["result"] = std::string(to_string(p.result));
        j["mismatched_headers"] = p.mismatched_headers;
        if (p.queued_us) j["queued_us"] = *p.queued_us;
        proxies.push_back(std::move(j));
    }
    nlohmann::json j = {
        {"ts", std::round(r.ts * 1e6) / 1e6},
        {"id", r.id},
        {"multiplier", kMultiplier},
        {"client", r.client},
        {"method", r.method},
        {"url", r.url},
        {"version", r.version},
        {"validation", r.validation},
        {"client_status", r.client_status},
        {"note", r.note.empty() ? nlohmann::json() : nlohmann::json(r.note)},
        {"tag", r.tag.empty() ? nlohmann::json() : nlohmann::json(r.tag)},
        {"collector", reference_measure(r.collector)},
        {"proxies", std::move(proxies)},
    };
    if (!r.request_headers.empty()) j["request_headers"] = reference_fields(r.request_headers);
    if (r.client_held_us) j["client_held_us"] = *r.client_held_us;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
}  // namespace

TEST_CASE("the JSON line is byte-identical to an nlohmann::json dump of the same record") {
    auto r = sample();
    CHECK(spe::to_json_line(r, kMultiplier) == reference_json_line(r));

    SECTION("escapes, control characters, invalid and valid UTF-8, DEL") {
        r.url = std::string("http://x/a\"b\\c\b\f\n\r\t\x01\x1f\x7f", 19) + "caf\xc3\xa9 \xe2\x82\xac \xc3(";
        r.client = "[::1]:80";
        r.note = "no fan-out: the Collector's reply broke off (\"x\")";
        r.collector.error = spe::LegError::truncated;
        r.collector.error_detail = "reading\tthe body";
        r.proxies[0].measure.md5 = "0123456789abcdef0123456789abcdef";
        r.proxies[0].measure.version = 10;
        r.proxies[0].position = 3;
        r.validation = true;
        r.tag = "0123456789abcdef-7";
        r.collector.fetch = "squid-1\"2";
        r.collector.retried = true;
        r.proxies[1].measure.fetch = "";
        r.proxies[2].measure.retried = true;
        CHECK(spe::to_json_line(r, kMultiplier) == reference_json_line(r));
    }
    SECTION("a character to escape anywhere in a long string (strings are scanned eight bytes at a time)") {
        for (std::string_view special : {"\"", "\\", "\x01", "\x1f", "\n", "\x7f", " ", "~", "\xc3\xa9", "\xff"})
            for (std::size_t at = 0; at <= 24; ++at) {
                r.url = std::string(24, 'a');
                r.url.insert(at, special);
                INFO("byte " << at << " of " << r.url.size());
                CHECK(spe::to_json_line(r, kMultiplier) == reference_json_line(r));
            }
    }
    SECTION("interim replies: in order, only on the legs that had some") {
        r.collector.interim = {{103, 1200}, {102, 35000}};
        r.proxies[1].measure.interim = {{103, 900}};
        const auto line = spe::to_json_line(r, kMultiplier);
        CHECK(line == reference_json_line(r));
        auto j = nlohmann::json::parse(line);
        CHECK(j["collector"]["interim"][1]["status"] == 102);
        CHECK(j["collector"]["interim"][1]["at_us"] == 35000);
        CHECK_FALSE(j["proxies"][0].contains("interim"));
    }
    SECTION("SPE's own queueing: a leg's wait for its proxy's turn") {
        r.proxies[0].queued_us = 0;
        r.proxies[1].queued_us = 312'456;
        const auto line = spe::to_json_line(r, kMultiplier);
        CHECK(line == reference_json_line(r));
        auto j = nlohmann::json::parse(line);
        CHECK(j["proxies"][1]["queued_us"] == 312'456);
        CHECK_FALSE(j["proxies"][2].contains("queued_us"));  // never reached its turn: absent, not null
    }
    SECTION("SPE's own pace: the client held back before this request, absent when it was not") {
        CHECK_FALSE(nlohmann::json::parse(spe::to_json_line(r, kMultiplier)).contains("client_held_us"));
        r.client_held_us = 8'123;
        const auto line = spe::to_json_line(r, kMultiplier);
        CHECK(line == reference_json_line(r));
        CHECK(nlohmann::json::parse(line)["client_held_us"] == 8'123);
        CHECK(line.find(R"("client":"127.0.0.1:5555","client_held_us":8123,"client_status")") != std::string::npos);
    }
    SECTION("the cache-rule judge's verdicts and the request's cache fields") {
        spe::CacheVerdict v;
        v.provenance = spe::Provenance::origin;
        v.fetch = "65f1-1c2.7";
        v.fetched_at = 1700000000.125;
        v.reused = true;
        v.age_s = 12.3456;
        v.violations.push_back({spe::cache_rule("no-store"), "served a \"no-store\" copy"});
        v.advisories.push_back({spe::cache_rule("heuristic"), "beyond 10 %"});
        v.exercised = {"no-store", "age"};
        v.claim = spe::CacheClaim::hit;
        v.evidence_served = {{"cache-control", "no-store"}, {"age (as served)", "3"}};
        v.evidence_request = {{"method", "GET"}};
        r.proxies[0].measure.cache = v;
        spe::CacheVerdict ref;
        ref.fetch = "65f1-1c2.9";
        ref.origin.emplace();
        ref.origin->set(spe::CacheField::etag, "\"x\"");
        ref.origin->set(spe::CacheField::cache_control, "max-age=60");
        ref.origin->set(spe::CacheField::x_cache, "MISS from collector");  // not a shown field
        ref.origin->field_names = spe::FieldNameSet::of("ETag Cache-Control set-cookie X-Origin-Count");
        ref.origin_connection = "x-hop-field";
        ref.conservative = "held: vary";
        ref.unjudged = "corrupt stamp: X-SPE-Fetch does not parse";
        r.collector.cache = ref;
        r.request_headers = {{"pragma", "no-cache"}, {"authorization", "(present)"}};
        CHECK(spe::to_json_line(r, kMultiplier) == reference_json_line(r));
        // Every field name of the origin's reply, for a repro case's stand-in origin: Beast's known names
        // in its order, then the others.
        CHECK(nlohmann::json::parse(spe::to_json_line(r, kMultiplier))["collector"]["cache"]["origin_fields"] ==
              "cache-control etag set-cookie x-origin-count");
        // Times and ages in ms resolution, written by the short path: the same bytes as nlohmann's.
        for (double t : {1795491050.123, 1795491050.12, 1795491050.1, 1795491050.0, 1700000000.007, 0.5, 0.0, 12.345,
                         7201.1, 1795491050.1234, 3.0000001}) {
            r.proxies[0].measure.cache->fetched_at = t;
            r.proxies[0].measure.cache->age_s = t;
            r.collector.cache->validated_at = t;
            CHECK(spe::to_json_line(r, kMultiplier) == reference_json_line(r));
        }
        r.collector.cache->validated_length = 0;  // the length a 304 carried, 0 included
        CHECK(spe::to_json_line(r, kMultiplier) == reference_json_line(r));
        CHECK(nlohmann::json::parse(spe::to_json_line(r, kMultiplier))["collector"]["cache"]["validated_length"] == 0);
    }
    SECTION("times: integral, sub-microsecond, large, zero") {
        for (double ts : {0.0, 1700000000.0, 1763811234.123456, 1763811234.1234567, 1e16, 12.5e-7}) {
            r.ts = ts;
            CHECK(spe::to_json_line(r, kMultiplier) == reference_json_line(r));
        }
    }
    SECTION("an empty record and one without proxies") {
        spe::RequestRecord empty;
        CHECK(spe::to_json_line(empty, kMultiplier) == reference_json_line(empty));
        r.proxies.clear();
        r.collector = {};
        CHECK(spe::to_json_line(r, kMultiplier) == reference_json_line(r));
    }
    SECTION("negative and extreme integers") {
        r.collector.connect_us = -1;
        r.collector.ttfb_us = std::numeric_limits<std::int64_t>::min();
        r.collector.bytes = std::numeric_limits<std::uint64_t>::max();
        r.id = std::numeric_limits<std::uint64_t>::max();
        CHECK(spe::to_json_line(r, kMultiplier) == reference_json_line(r));
    }
}

TEST_CASE("a verdict's provenance and claim are written in the records' words (the log schema's enums)") {
    auto r = sample();
    auto written = [&](spe::Provenance provenance, spe::CacheClaim claim) {
        spe::CacheVerdict v;
        v.provenance = provenance;
        v.claim = claim;
        r.proxies[0].measure.cache = v;
        return nlohmann::json::parse(spe::to_json_line(r, kMultiplier))["proxies"][0]["cache"];
    };
    using P = spe::Provenance;
    for (auto [provenance, word] :
         {std::pair{P::none, "none"}, std::pair{P::origin, "origin"}, std::pair{P::unknown, "unknown"},
          std::pair{P::not_modified, "not-modified"}, std::pair{P::corrupt, "corrupt"}})
        CHECK(written(provenance, spe::CacheClaim::none)["provenance"] == word);
    CHECK(written(P::origin, spe::CacheClaim::hit)["claim"] == "hit");
    CHECK(written(P::origin, spe::CacheClaim::miss)["claim"] == "miss");
    CHECK_FALSE(written(P::origin, spe::CacheClaim::none).contains("claim"));  // no claim: left out, as null
    CHECK(spe::CacheVerdict{}.provenance == P::none);
}

TEST_CASE("a capture writes cookies and credentials as digests, unless asked to keep them") {
    auto r = sample();
    r.collector.raw_header =
        "HTTP/1.1 200 OK\r\nSet-Cookie: session=SECRETCOOKIE123; Path=/\r\nContent-Type: text/plain\r\n\r\n";
    r.collector.body_head = "hello";
    auto& p = r.proxies[1];
    p.measure.raw_header =
        "HTTP/1.1 200 OK\r\nset-cookie: session=SECRETCOOKIE123; Path=/\r\nContent-Type: text/html\r\n"
        "Authorization: Bearer SECRETTOKEN456\r\n\r\n";
    const auto& secrets = spe::process_secret_digest();
    const auto cookie = secrets.digest("session=SECRETCOOKIE123; Path=/");

    const auto redacted = spe::capture_text(r, p, false);
    CHECK(redacted.find("SECRET") == std::string::npos);
    CHECK(redacted.find("## Collector reply header\nHTTP/1.1 200 OK\r\nSet-Cookie: " + cookie +
                        "\r\nContent-Type: text/plain\r\n\r\n") != std::string::npos);
    // The same value in both replies: the same digest, so "equal or not" still shows.
    CHECK(redacted.find("set-cookie: " + cookie + "\r\nContent-Type: text/html\r\nAuthorization: " +
                        secrets.digest("Bearer SECRETTOKEN456") + "\r\n") != std::string::npos);
    CHECK(redacted.find("mismatched headers: content-type, etag") != std::string::npos);

    const auto kept = spe::capture_text(r, p, true);  // --capture-secrets
    CHECK(kept.find(r.collector.raw_header) != std::string::npos);
    CHECK(kept.find(p.measure.raw_header) != std::string::npos);
    CHECK(kept.find("hmac:") == std::string::npos);
}

#include "log/record_json.hpp"

#include "log/json_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace spe {
namespace {

std::string http_version(unsigned version) {
    if (version == 11) return "HTTP/1.1";
    if (version == 10) return "HTTP/1.0";
    return fmt::format("HTTP/{}.{}", version / 10, version % 10);
}

void findings(JsonWriter& w, const std::vector<Finding>& list) {
    w.open_array();
    for (const auto& f : list) {
        w.element();
        w.open();
        w.key<"reason">().string(f.reason);
        w.key<"rule">().string(f.rule);
        w.key<"section">().string(f.section);
        w.close();
    }
    w.close_array();
}

/// Header fields as a JSON object, names in sorted order (as nlohmann writes them).
void fields_object(JsonWriter& w, const CacheVerdict::Fields& fields) {
    // Sorted by name through pointers (no copy of the strings); of a repeated name the first is kept.
    std::array<const std::pair<std::string, std::string>*, 32> order{};
    const std::size_t n = std::min(fields.size(), order.size());
    for (std::size_t i = 0; i < n; ++i)
        order[i] = &fields[i];
    std::stable_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n),
                     [](const auto* a, const auto* b) { return a->first < b->first; });
    w.open();
    for (std::size_t i = 0; i < n; ++i) {
        if (i > 0 && order[i]->first == order[i - 1]->first) continue;
        w.element();
        w.string(order[i]->first);
        w.colon();
        w.string(order[i]->second);
    }
    w.close();
}

/// A reply's shown judged fields as a JSON object (names in order), or
/// nothing when it has none.
void shown_fields_object(JsonWriter& w, const CacheHeaders& h) {
    w.open();
    for (const auto& [name, field] : kShownFields)
        if (const auto value = h.get(field)) {
            w.element();
            w.name(name);
            w.colon();
            w.string(*value);
        }
    w.close();
}

bool has_shown_fields(const CacheHeaders& h) {
    return std::any_of(kShownFields.begin(), kShownFields.end(), [&](const auto& f) { return h.get(f.second); });
}

/// The cache-rule judge's verdict: the record's `cache` object. Members
/// that are empty or null are left out: most replies have no finding, and the
/// object is written five times per request at 4-way fan-out.
void cache_object(JsonWriter& w, const CacheVerdict& v) {
    w.open();
    if (!v.advisories.empty()) {
        w.key<"advisories">();
        findings(w, v.advisories);
    }
    if (v.age_s) w.key<"age_s">().number_ms(std::round(*v.age_s * 1000) / 1000);
    if (v.claim != CacheClaim::none) w.key<"claim">().name(to_string(v.claim));
    if (!v.claim_conflict.empty()) w.key<"claim_conflict">().string(v.claim_conflict);
    if (!v.conservative.empty()) w.key<"conservative">().string(v.conservative);
    if (!v.violations.empty()) {
        w.key<"evidence">();
        w.open();
        w.key<"reference">();
        fields_object(w, v.evidence_reference);
        w.key<"request">();
        fields_object(w, v.evidence_request);
        w.key<"served">();
        fields_object(w, v.evidence_served);
        w.close();
    }
    if (!v.exercised.empty()) {
        w.key<"exercised">();
        w.open_array();
        for (auto rule : v.exercised) {
            w.element();
            w.name(rule);
        }
        w.close_array();
    }
    if (!v.fetch.empty()) w.key<"fetch">().string({v.fetch.data(), v.fetch.size()});
    if (v.fetched_at) w.key<"fetched_at">().number_ms(*v.fetched_at);
    if (v.origin && has_shown_fields(*v.origin)) {
        w.key<"origin">();
        shown_fields_object(w, *v.origin);
    }
    // Every field name of that fetch (Set-Cookie, Content-Type ...): a repro case's stand-in origin sends them all.
    if (!v.origin_connection.empty()) w.key<"origin_connection">().string(v.origin_connection);
    if (v.origin && !v.origin->field_names.empty()) w.key<"origin_fields">().string(v.origin->field_names.names());
    w.key<"provenance">().name(to_string(v.provenance));
    w.key<"reused">().boolean(v.reused);
    if (!v.unjudged.empty()) w.key<"unjudged">().string(v.unjudged);
    if (v.validated_at) w.key<"validated_at">().number_ms(*v.validated_at);
    if (v.validated_length) w.key<"validated_length">().integer(*v.validated_length);
    if (!v.violations.empty()) {
        w.key<"violations">();
        findings(w, v.violations);
    }
    w.close();
}

/// The interim (1xx) replies before the final one: [{"at_us":N,"status":103}, ...].
/// Record ids, as a JSON array (after its key).
void id_array(JsonWriter& w, const std::vector<std::uint64_t>& ids) {
    w.open_array();
    for (const auto id : ids) {
        w.element();
        w.integer(id);
    }
    w.close_array();
}

void interim_array(JsonWriter& w, const std::vector<Interim>& interim) {
    w.key<"interim">();
    w.open_array();
    for (const auto& i : interim) {
        w.element();
        w.open();
        w.key<"at_us">().integer(i.at_us);
        w.key<"status">().integer(i.status);
        w.close();
    }
    w.close_array();
}

/// The members of a measure every reply has, in key order, around `middle`
/// (the members that sort between "md5" and "retried").
template <class Middle>
void measure_members(JsonWriter& w, const Measure& m, Middle&& middle) {
    w.key<"bytes">().integer(m.bytes);
    if (m.cache) {
        w.key<"cache">();
        cache_object(w, *m.cache);
    }
    w.key<"connect_us">().integer(m.connect_us);
    w.key<"error">();
    m.error == LegError::none ? w.null() : w.string(to_string(m.error));
    w.key<"error_detail">().string_or_null(m.error_detail);
    w.key<"fetch">();
    m.fetch ? w.string(*m.fetch) : w.null();
    w.key<"header_bytes">().integer(m.header_bytes);
    w.key<"http_version">();
    m.version ? w.string(http_version(m.version)) : w.null();
    if (!m.interim.empty()) interim_array(w, m.interim);  // left out when there were none
    w.key<"md5">();
    m.md5 ? w.string(*m.md5) : w.null();
    middle();
    w.key<"retried">().boolean(m.retried);
    w.key<"status">().integer(m.status);
    w.key<"total_us">().integer(m.total_us);
    w.key<"ttfb_us">().integer(m.ttfb_us);
}

}  // namespace

std::string to_json_line(const RequestRecord& r, std::string_view multiplier) {
    std::string out;
    // A judged record is about 700 bytes plus 530 per proxy: one allocation for the line.
    out.reserve(768 + 640 * r.proxies.size());
    JsonWriter w(out);
    w.open();
    w.key<"client">().string(r.client);
    if (r.client_held_us) w.key<"client_held_us">().integer(*r.client_held_us);  // absent: no hold
    w.key<"client_status">().integer(r.client_status);
    w.key<"collector">();
    w.open();
    measure_members(w, r.collector, [] {});
    w.close();
    w.key<"id">().integer(r.id);
    if (r.intercepted) w.key<"intercepted">().boolean(true);
    w.key<"method">().string(r.method);
    w.key<"multiplier">().name(multiplier);  // --name: which Multiplier wrote the record
    w.key<"note">().string_or_null(r.note);
    w.key<"proxies">();
    w.open_array();
    for (const auto& p : r.proxies) {
        w.element();
        w.open();
        measure_members(w, p.measure, [&] {
            w.key<"mismatched_headers">();
            w.open_array();
            for (const auto& h : p.mismatched_headers) {
                w.element();
                w.string(h);
            }
            w.close_array();
            w.key<"name">().string(p.name);
            if (!p.overtook.empty()) id_array(w.key<"overtook">(), p.overtook);  // absent: in the client's order
            w.key<"position">().integer(p.position);
            if (p.queued_us) w.key<"queued_us">().integer(*p.queued_us);
            w.key<"result">().string(to_string(p.result));
        });
        if (!p.waited_for.empty()) id_array(w.key<"waited_for">(), p.waited_for);  // after ttfb_us: keys in order
        w.close();
    }
    w.close_array();
    if (!r.request_headers.empty()) {
        w.key<"request_headers">();
        fields_object(w, r.request_headers);
    }
    w.key<"tag">().string_or_null(r.tag);
    w.key<"ts">().number(std::round(r.ts * 1e6) / 1e6);
    w.key<"url">().string(r.url);
    w.key<"validation">().boolean(r.validation);
    w.key<"version">().string(r.version);
    w.close();
    return out;
}

}  // namespace spe

#include "http/reply_header.hpp"
#include "core/ascii.hpp"

#include <boost/beast/http/status.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <array>
#include <sstream>

namespace spe {

namespace {

/// The judged field an unknown-to-Beast name is, if any (compared by first letter, then in full).
std::optional<CacheField> extension_field(std::string_view name) {
    if (name.empty()) return std::nullopt;
    const char first = ascii_lower(name[0]);
    if (first == 'c' && spe::iequals(name, "Cache-Status")) return CacheField::cache_status;
    if (first != 'x') return std::nullopt;
    if (spe::iequals(name, "X-Cache")) return CacheField::x_cache;
    if (spe::iequals(name, kValidationStampHeader)) return CacheField::validated;
    if (spe::iequals(name, kReplyToHeader)) return CacheField::reply_to;
    if (spe::iequals(name, kParentStampHeader)) return CacheField::parent;
    return std::nullopt;
}

std::optional<CacheField> judged_field(const FieldView& f) {
    namespace http = boost::beast::http;
    switch (f.name()) {
        case http::field::cache_control:
            return CacheField::cache_control;
        case http::field::expires:
            return CacheField::expires;
        case http::field::date:
            return CacheField::date;
        case http::field::last_modified:
            return CacheField::last_modified;
        case http::field::etag:
            return CacheField::etag;
        case http::field::vary:
            return CacheField::vary;
        case http::field::age:
            return CacheField::age;
        case http::field::content_encoding:
            return CacheField::content_encoding;
        case http::field::unknown:
            return extension_field(f.name_string());
        default:
            return std::nullopt;
    }
}

}  // namespace

CacheHeaders take_cache_headers(FieldViews fields) {
    namespace http = boost::beast::http;
    CacheHeaders h;
    // One pass over the fields (a lookup per name costs a dozen tree searches
    // per reply), then the values in one buffer.
    // Every judged value, however many (no more than the header limit holds): a cap would keep
    // different ones of Beast's fields (repeats held together) and of the proxy parser's (in
    // arrival order), which must give the same.
    boost::container::small_vector<std::pair<CacheField, std::string_view>, 32> found;
    for (const auto& f : fields) {
        if (f.name() == http::field::set_cookie) h.set_cookie = true;
        h.field_names.add(f.name(), f.name_string());
        if (const auto which = judged_field(f)) found.emplace_back(*which, f.value());
    }
    h.assign({found.data(), found.size()});
    return h;
}

void take_header(Measure& m, unsigned status, unsigned version, FieldViews fields, const HeaderPolicy& policy,
                 bool cache_fields) {
    m.status = status;
    m.version = version;
    m.headers = policy.select(fields);
    // The first of each, as a lookup by name finds it; neither name is known to Beast.
    bool fetch_found = false;
    bool refusal_found = false;
    for (const auto& f : fields) {
        if (f.name() != http::field::unknown) continue;
        if (!fetch_found && spe::iequals(f.name_string(), kFetchStampHeader)) {
            m.fetch = std::string(f.value());
            fetch_found = true;
        } else if (!refusal_found && spe::iequals(f.name_string(), kReplayRefusedHeader)) {
            // The replay port's refusal of a proxy's copy of an unsafe request, passed on by the proxy.
            m.replay_refusal = std::string(f.value());
            refusal_found = true;
        }
    }
    if (cache_fields) m.cache_headers = take_cache_headers(fields);
}

void take_header(Measure& m, const http::response_header<>& h, const HeaderPolicy& policy, bool cache_fields) {
    take_header(m, h.result_int(), h.version(), field_views(h), policy, cache_fields);
}

void note_interim(Measure& m, unsigned status, Clock::time_point started) {
    // A peer may send any number of them (a 102 every few seconds keeps a slow
    // reply alive); the record keeps the first few.
    if (m.interim.size() < kMaxInterims) m.interim.push_back({status, micros_since(started)});
}

std::string header_text(const http::response_header<>& h) {
    std::ostringstream out;
    out << h;
    return out.str();
}

std::string header_text(unsigned version, unsigned status, std::string_view reason, FieldViews fields) {
    if (reason.empty()) reason = http::obsolete_reason(static_cast<http::status>(status));
    std::string out = "HTTP/x.x ddd ";
    out[5] = static_cast<char>('0' + version / 10);
    out[7] = static_cast<char>('0' + version % 10);
    out[9] = static_cast<char>('0' + status / 100);
    out[10] = static_cast<char>('0' + status / 10 % 10);
    out[11] = static_cast<char>('0' + status % 10);
    out.append(reason).append("\r\n");
    // Beast's fields keep a repeated field beside the ones of its name before it (fields.hpp,
    // insert: "keep duplicate fields together in the list") and write them so: each name at
    // its first arrival, with all its fields in arrival order.
    const auto same_name = [](const FieldView& a, const FieldView& b) {
        return spe::iequals(a.name_string(), b.name_string());
    };
    for (auto first = fields.begin(); first != fields.end(); ++first) {
        if (std::any_of(fields.begin(), first, [&](const FieldView& f) { return same_name(f, *first); })) continue;
        for (auto f = first; f != fields.end(); ++f)
            if (same_name(*f, *first)) out.append(f->name_string()).append(": ").append(f->value()).append("\r\n");
    }
    out.append("\r\n");
    return out;
}

}  // namespace spe

#include "http/reply_header.hpp"
#include "core/ascii.hpp"
#include "core/name_list.hpp"

#include <boost/beast/http/write.hpp>
#include <boost/container/static_vector.hpp>

#include <array>
#include <bitset>
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

std::optional<CacheField> judged_field(const boost::beast::http::fields::value_type& f) {
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

/// The lowercase name of every field Beast knows, by its number, made once.
const std::string& known_lower_name(boost::beast::http::field f) {
    namespace http = boost::beast::http;
    static const auto names = [] {
        std::array<std::string, static_cast<std::size_t>(http::field::xref) + 1> out;
        for (std::size_t i = 1; i < out.size(); ++i)  // 0 is field::unknown
            append_new_name(out[i], http::to_string(static_cast<http::field>(i)));
        return out;
    }();
    return names[static_cast<std::size_t>(f)];
}

}  // namespace

CacheHeaders take_cache_headers(const boost::beast::http::fields& fields) {
    namespace http = boost::beast::http;
    CacheHeaders h;
    h.field_names.reserve(256);  // a dozen names or so: one allocation
    // One pass over the fields (a lookup per name costs a dozen tree searches
    // per reply), then the values in one buffer.
    boost::container::static_vector<std::pair<CacheField, std::string_view>, 32> found;
    // A name Beast knows is listed once by its number (the parser matched it without regard to
    // case, so no unknown name equals it); only unknown names are looked for in the list.
    std::bitset<static_cast<std::size_t>(http::field::xref) + 1> listed;
    for (const auto& f : fields) {
        if (f.name() == http::field::set_cookie) h.set_cookie = true;
        if (const auto id = static_cast<std::size_t>(f.name()); f.name() == http::field::unknown || id >= listed.size())
            add_name(h.field_names, f.name_string());
        else if (!listed.test(id)) {
            listed.set(id);
            if (!h.field_names.empty()) h.field_names += ' ';
            h.field_names += known_lower_name(f.name());
        }
        if (const auto which = judged_field(f); which && found.size() < found.capacity())
            found.emplace_back(*which, f.value());
    }
    h.assign({found.data(), found.size()});
    return h;
}

void take_header(Measure& m, const http::response_header<>& h, const HeaderPolicy& policy, bool cache_fields) {
    m.status = h.result_int();
    m.version = h.version();
    m.headers = policy.select(h);
    if (auto stamp = h.find(kFetchStampHeader); stamp != h.end()) m.fetch = std::string(stamp->value());
    // The replay port's refusal of a proxy's copy of an unsafe request, passed on by the proxy.
    if (auto refused = h.find(kReplayRefusedHeader); refused != h.end())
        m.replay_refusal = std::string(refused->value());
    if (cache_fields) m.cache_headers = take_cache_headers(h);
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

}  // namespace spe

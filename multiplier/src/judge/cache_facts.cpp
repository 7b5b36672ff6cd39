#include "judge/cache_facts.hpp"
#include "core/ascii.hpp"

#include "http/header_policy.hpp"
#include "http/secret_digest.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/container/static_vector.hpp>

#include <array>
#include <cctype>

namespace spe {
void CacheHeaders::set(CacheField f, std::string_view value) {
    auto& s = spans_[index(f)];
    s = {static_cast<std::uint32_t>(text_.size()), static_cast<std::uint32_t>(value.size()), true};
    text_.append(value);
}

void CacheHeaders::assign(std::span<const std::pair<CacheField, std::string_view>> values) {
    // Sized once and written in place: one allocation and one copy per value
    // (this runs for every reply). Repeats follow their field, as Beast keeps them.
    std::size_t size = 0;
    for (const auto& [field, value] : values)
        size += value.size() + 2;
    text_.resize(size);
    std::size_t at = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const auto& [field, value] = values[i];
        auto& s = spans_[index(field)];
        if (s.present && s.offset + s.length != at) {  // a repeat after another field: the general way
            text_.resize(at);
            for (; i < values.size(); ++i)
                append(values[i].first, values[i].second);
            return;
        }
        if (s.present) {
            text_.replace(at, 2, ", ");
            at += 2;
            s.length += static_cast<std::uint32_t>(value.size() + 2);
        } else {
            s = {static_cast<std::uint32_t>(at), static_cast<std::uint32_t>(value.size()), true};
        }
        value.copy(text_.data() + at, value.size());
        at += value.size();
    }
    text_.resize(at);
}

void CacheHeaders::append(CacheField f, std::string_view value) {
    auto& s = spans_[index(f)];
    if (!s.present) return set(f, value);
    if (s.offset + s.length != text_.size()) {  // not the last value written: move it to the end first
        const auto at = static_cast<std::uint32_t>(text_.size());
        text_.append(text_, s.offset, s.length);
        s.offset = at;
    }
    text_.append(", ").append(value);
    s.length = static_cast<std::uint32_t>(text_.size() - s.offset);
}

namespace {

char ascii_lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// Field names compared as HTTP does (length first: most differ there).
bool same_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && spe::iequals(a, b);
}

/// The judged field an unknown-to-Beast name is, if any (compared by first letter, then in full).
std::optional<CacheField> extension_field(std::string_view name) {
    if (name.empty()) return std::nullopt;
    const char first = ascii_lower(name[0]);
    if (first == 'c' && same_name(name, "Cache-Status")) return CacheField::cache_status;
    if (first != 'x') return std::nullopt;
    if (same_name(name, "X-Cache")) return CacheField::x_cache;
    if (same_name(name, kValidationStampHeader)) return CacheField::validated;
    if (same_name(name, kReplyToHeader)) return CacheField::reply_to;
    if (same_name(name, kParentStampHeader)) return CacheField::parent;
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

/// Adds a field name to a space-separated list of lowercase names, unless listed already.
void add_name(std::string& names, std::string_view name) {
    std::string_view rest = names;
    while (!rest.empty()) {
        const auto space = rest.find(' ');
        if (same_name(rest.substr(0, space), name)) return;
        if (space == std::string_view::npos) break;
        rest.remove_prefix(space + 1);
    }
    if (!names.empty()) names += ' ';
    for (const char c : name)
        names += ascii_lower(c);
}

}  // namespace

CacheHeaders take_cache_headers(const boost::beast::http::fields& fields) {
    CacheHeaders h;
    h.field_names.reserve(256);  // a dozen names or so: one allocation
    // One pass over the fields (a lookup per name costs a dozen tree searches
    // per reply), then the values in one buffer.
    boost::container::static_vector<std::pair<CacheField, std::string_view>, 32> found;
    for (const auto& f : fields) {
        if (f.name() == boost::beast::http::field::set_cookie) h.set_cookie = true;
        add_name(h.field_names, f.name_string());
        if (const auto which = judged_field(f); which && found.size() < found.capacity())
            found.emplace_back(*which, f.value());
    }
    h.assign({found.data(), found.size()});
    return h;
}

namespace {

/// Calls each(name, value) for every field line of a serialized header block
/// (the start line skipped, values trimmed).
template <class Each>
void for_each_field(std::string_view block, Each each) {
    std::size_t pos = block.find("\r\n");
    while (pos != std::string_view::npos && pos + 2 < block.size()) {
        const auto start = pos + 2;
        const auto end = block.find("\r\n", start);
        const auto line = block.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
        pos = end;
        if (const auto colon = line.find(':'); colon != std::string_view::npos)
            each(line.substr(0, colon), trim(line.substr(colon + 1)));
    }
}

}  // namespace

std::optional<std::string> find_field(std::string_view block, std::string_view name) {
    std::optional<std::string> out;
    for_each_field(block, [&](std::string_view field, std::string_view value) {
        if (!spe::iequals(field, name)) return;
        if (out)
            out->append(", ").append(value);
        else
            out.emplace(value);
    });
    return out;
}

namespace {

/// The request fields the judge reads, lowercase, in the order a record lists them.
constexpr std::array<std::string_view, 13> kRequestFields = {
    "cache-control", "pragma", "if-none-match",   "if-modified-since", "if-match", "if-unmodified-since",
    "if-range",      "range",  "accept-language", "accept-encoding",   "accept",   "authorization",
    "cookie"};

/// The index of a lowercase name in kRequestFields, or -1.
constexpr int known_index(std::string_view lower_name) {
    for (std::size_t i = 0; i < kRequestFields.size(); ++i)
        if (kRequestFields[i] == lower_name) return static_cast<int>(i);
    return -1;
}

/// A judged field's slot, found at compile time.
consteval std::size_t slot_of(std::string_view lower_name) {
    const int i = known_index(lower_name);
    if (i < 0) throw "not a judged request field";
    return static_cast<std::size_t>(i);
}

/// A received field name's index in kRequestFields, or -1 (most fields, Host, User-Agent,
/// X-..., stop at the first letter).
int request_field_index(std::string_view name) {
    const char first = ascii_lower(name.empty() ? ' ' : name[0]);
    if (first != 'c' && first != 'p' && first != 'i' && first != 'r' && first != 'a') return -1;
    for (std::size_t i = 0; i < kRequestFields.size(); ++i)
        if (kRequestFields[i][0] == first && same_name(name, kRequestFields[i])) return static_cast<int>(i);
    return -1;
}

}  // namespace

RequestFacts request_facts(std::string_view method, std::string_view url, std::string_view block) {
    RequestFacts r;
    r.method = method;
    r.url = url;
    r.header_block = block;
    // One slot per judged field (repeated fields joined): the record lists them in kRequestFields' order.
    std::array<std::optional<std::string>, kRequestFields.size()> found;
    for_each_field(block, [&](std::string_view name, std::string_view value) {
        const int i = request_field_index(name);
        if (i < 0) return;
        auto& slot = found[static_cast<std::size_t>(i)];
        if (slot)
            slot->append(", ").append(value);
        else
            slot.emplace(value);
    });
    if (const auto& cc = found[slot_of("cache-control")]) {
        r.has_cache_control = true;
        r.cc = parse_cache_control(*cc);
    }
    if (const auto& pragma = found[slot_of("pragma")]) r.pragma_no_cache = has_token(*pragma, "no-cache");
    r.authorization = found[slot_of("authorization")].has_value();
    r.if_none_match = found[slot_of("if-none-match")];
    r.if_modified_since = found[slot_of("if-modified-since")];
    r.fields.reserve(4);
    for (std::size_t i = 0; i < found.size(); ++i)  // credentials and cookies only as present
        if (found[i])
            r.fields.emplace_back(std::string(kRequestFields[i]),
                                  is_secret_field(kRequestFields[i]) ? std::string("(present)") : std::move(*found[i]));
    return r;
}

namespace {

/// A field value as Vary matching compares it (RFC 9111 4.1): comma-separated
/// items trimmed and lowercased, joined by ",".
std::string normalized(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    while (!value.empty()) {
        const auto comma = value.find(',');
        if (const auto item = trim(value.substr(0, comma)); !item.empty()) {
            if (!out.empty()) out += ',';
            for (char c : item)
                out += ascii_lower(c);
        }
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
    return out;
}

}  // namespace

std::optional<std::string> request_field(const RequestFacts& request, std::string_view lower_name) {
    // Credentials and cookies never leave as they are: the keyed digest of the
    // normalized value stands for them (equal values, equal digests).
    if (is_secret_field(lower_name)) {
        const auto value = find_field(request.header_block, lower_name);
        if (!value) return value;
        return process_secret_digest().digest(normalized(*value));
    }
    // The judged fields were read in one pass; other names need the header block again.
    if (known_index(lower_name) >= 0) {
        for (const auto& [name, value] : request.fields)
            if (name == lower_name) return value;
        return std::nullopt;
    }
    return find_field(request.header_block, lower_name);
}

std::vector<std::string> vary_names(std::string_view vary) {
    std::vector<std::string> names;
    while (!vary.empty()) {
        const auto comma = vary.find(',');
        const auto item = trim(vary.substr(0, comma));
        if (!item.empty()) names.push_back(to_lower(item));
        if (comma == std::string_view::npos) break;
        vary.remove_prefix(comma + 1);
    }
    return names;
}

std::optional<std::string> selecting_value(const RequestFacts& request, std::string_view lower_name) {
    auto value = request_field(request, lower_name);
    if (!value || is_secret_field(lower_name)) return value;  // a secret's digest is of the normalized value already
    return normalized(*value);
}

VaryValues vary_values(const RequestFacts& request, const std::vector<std::string>& names) {
    VaryValues out;
    out.reserve(names.size());
    for (const auto& n : names)
        out.emplace_back(n, n == "*" ? std::nullopt : selecting_value(request, n));
    return out;
}

}  // namespace spe

#include "judge/cache_facts.hpp"
#include "core/ascii.hpp"

#include "http/field_list.hpp"
#include "http/header_policy.hpp"
#include "http/secret_digest.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/container/static_vector.hpp>

#include <array>
#include <cctype>

namespace spe {
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
        if (kRequestFields[i][0] == first && spe::iequals(name, kRequestFields[i])) return static_cast<int>(i);
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
    if (const auto& pragma = found[slot_of("pragma")]) r.pragma_no_cache = lists_token(*pragma, "no-cache");
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

/// A field value as Vary matching compares it (RFC 9111 4.1): its list members
/// lowercased, joined by ",".
std::string normalized(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (const auto member : FieldList(value)) {
        if (!out.empty()) out += ',';
        append_lower(out, member);
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
    for (const auto name : FieldList(vary))
        names.push_back(to_lower(name));
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

#include "cache_facts.hpp"

#include "header_policy.hpp"

#include <boost/beast/core/string.hpp>

#include <array>
#include <cctype>

namespace spe {
namespace {}  // namespace

CacheHeaders take_cache_headers(const boost::beast::http::fields& fields) {
    namespace http = boost::beast::http;
    CacheHeaders h;
    auto add = [](std::optional<std::string>& to, std::string_view value) {
        if (to)
            to->append(", ").append(value);
        else
            to.emplace(value);
    };
    // One pass over the fields (a lookup per name costs a dozen tree searches per reply).
    for (const auto& f : fields) {
        switch (f.name()) {
            case http::field::cache_control:
                add(h.cache_control, f.value());
                break;
            case http::field::expires:
                add(h.expires, f.value());
                break;
            case http::field::date:
                add(h.date, f.value());
                break;
            case http::field::last_modified:
                add(h.last_modified, f.value());
                break;
            case http::field::etag:
                add(h.etag, f.value());
                break;
            case http::field::vary:
                add(h.vary, f.value());
                break;
            case http::field::age:
                add(h.age, f.value());
                break;
            case http::field::content_encoding:
                add(h.content_encoding, f.value());
                break;
            case http::field::set_cookie:
                h.set_cookie = true;
                break;
            default: {
                const auto name = f.name_string();
                if (boost::beast::iequals(name, "Cache-Status"))
                    add(h.cache_status, f.value());
                else if (boost::beast::iequals(name, "X-Cache"))
                    add(h.x_cache, f.value());
                else if (boost::beast::iequals(name, kValidationStampHeader))
                    add(h.validated, f.value());
                else if (boost::beast::iequals(name, kReplyToHeader))
                    add(h.reply_to, f.value());
            }
        }
    }
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
        if (!boost::beast::iequals(field, name)) return;
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

/// Appends `value` to field `name` of `fields` (repeated fields joined with ", ").
void add_value(std::vector<std::pair<std::string, std::string>>& fields, std::string_view name,
               std::string_view value) {
    for (auto& [n, v] : fields)
        if (n == name) {
            v.append(", ").append(value);
            return;
        }
    fields.emplace_back(std::string(name), std::string(value));
}

std::optional<std::string> value_of(const std::vector<std::pair<std::string, std::string>>& fields,
                                    std::string_view name) {
    for (const auto& [n, v] : fields)
        if (n == name) return v;
    return std::nullopt;
}

}  // namespace

RequestFacts request_facts(std::string method, std::string url, std::string_view block) {
    RequestFacts r;
    r.method = std::move(method);
    r.url = std::move(url);
    r.header_block = block;
    std::vector<std::pair<std::string, std::string>> found;
    for_each_field(block, [&](std::string_view name, std::string_view value) {
        // Every judged name starts with one of these letters: most fields (Host, User-Agent, X-...) stop here.
        const char first = static_cast<char>(std::tolower(static_cast<unsigned char>(name.empty() ? ' ' : name[0])));
        if (first != 'c' && first != 'p' && first != 'i' && first != 'r' && first != 'a') return;
        for (auto known : kRequestFields)
            if (known[0] == first && boost::beast::iequals(name, known)) {
                add_value(found, known, value);
                break;
            }
    });
    if (auto cc = value_of(found, "cache-control")) {
        r.has_cache_control = true;
        r.cc = parse_cache_control(*cc);
        r.no_store = r.cc.no_store;
    }
    if (auto pragma = value_of(found, "pragma")) r.pragma_no_cache = has_token(*pragma, "no-cache");
    r.authorization = value_of(found, "authorization").has_value();
    r.if_none_match = value_of(found, "if-none-match");
    r.if_modified_since = value_of(found, "if-modified-since");
    for (auto known : kRequestFields)  // in the fixed order; credentials and cookies only as present
        if (auto v = value_of(found, known))
            r.fields.emplace_back(std::string(known),
                                  known == "authorization" || known == "cookie" ? std::string("(present)") : *v);
    return r;
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

std::optional<std::string> selecting_value(std::string_view block, std::string_view lower_name) {
    auto value = find_field(block, lower_name);
    if (!value) return value;
    std::string out;
    for (auto part : vary_names(*value)) {  // comma-separated items, trimmed and lowercased
        if (!out.empty()) out += ',';
        out += part;
    }
    return out;
}

VaryValues vary_values(std::string_view block, const std::vector<std::string>& names) {
    VaryValues out;
    out.reserve(names.size());
    for (const auto& n : names)
        out.emplace_back(n, n == "*" ? std::nullopt : selecting_value(block, n));
    return out;
}

}  // namespace spe

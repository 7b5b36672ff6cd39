#include "cache_facts.hpp"

#include "header_policy.hpp"

#include <boost/beast/core/string.hpp>

namespace spe {
namespace {

std::optional<std::string> joined(const boost::beast::http::fields& fields, std::string_view name) {
    std::optional<std::string> out;
    const auto [first, last] = fields.equal_range(name);
    for (auto f = first; f != last; ++f) {
        if (out)
            *out += ", ";
        else
            out.emplace();
        *out += f->value();
    }
    return out;
}

}  // namespace

CacheHeaders take_cache_headers(const boost::beast::http::fields& fields) {
    namespace http = boost::beast::http;
    CacheHeaders h;
    h.cache_control = joined(fields, "Cache-Control");
    h.expires = joined(fields, "Expires");
    h.date = joined(fields, "Date");
    h.last_modified = joined(fields, "Last-Modified");
    h.etag = joined(fields, "ETag");
    h.vary = joined(fields, "Vary");
    h.age = joined(fields, "Age");
    h.content_encoding = joined(fields, "Content-Encoding");
    h.cache_status = joined(fields, "Cache-Status");
    h.x_cache = joined(fields, "X-Cache");
    h.validated = joined(fields, kValidationStampHeader);
    h.reply_to = joined(fields, kReplyToHeader);
    h.set_cookie = fields.find(http::field::set_cookie) != fields.end();
    return h;
}

std::optional<std::string> find_field(std::string_view block, std::string_view name) {
    std::optional<std::string> out;
    std::size_t pos = block.find("\r\n");  // skip the start line
    while (pos != std::string_view::npos && pos + 2 < block.size()) {
        const auto start = pos + 2;
        const auto end = block.find("\r\n", start);
        const auto line = block.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
        const auto colon = line.find(':');
        if (colon != std::string_view::npos && boost::beast::iequals(line.substr(0, colon), name)) {
            if (out)
                *out += ", ";
            else
                out.emplace();
            *out += trim(line.substr(colon + 1));
        }
        pos = end;
    }
    return out;
}

RequestFacts request_facts(std::string method, std::string url, std::string_view block) {
    RequestFacts r;
    r.method = std::move(method);
    r.url = std::move(url);
    r.header_block = block;
    if (auto cc = find_field(block, "Cache-Control")) {
        r.has_cache_control = true;
        r.cc = parse_cache_control(*cc);
        r.no_store = r.cc.no_store;
    }
    if (auto pragma = find_field(block, "Pragma")) r.pragma_no_cache = has_token(*pragma, "no-cache");
    r.authorization = find_field(block, "Authorization").has_value();
    r.if_none_match = find_field(block, "If-None-Match");
    r.if_modified_since = find_field(block, "If-Modified-Since");
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

// What the cache-rule judge reads from a reply and from a request: the raw
// fields, taken once from each reply header (cheap copies of a few values),
// and the request's caching facts, parsed from its serialized header only
// when a record is judged (so the client's path pays nothing).
#pragma once

#include "cache_control.hpp"

#include <boost/beast/http/fields.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spe {

/// The reply fields RFC 9111 decisions depend on, as received (absent: nullopt).
struct CacheHeaders {
    std::optional<std::string> cache_control;
    std::optional<std::string> expires;
    std::optional<std::string> date;
    std::optional<std::string> last_modified;
    std::optional<std::string> etag;
    std::optional<std::string> vary;
    std::optional<std::string> age;
    std::optional<std::string> content_encoding;
    std::optional<std::string> cache_status;  // RFC 9211
    std::optional<std::string> x_cache;
    std::optional<std::string> validated;  // X-SPE-Validated
    std::optional<std::string> reply_to;   // X-SPE-Reply-To: the client request (tag) the copy was fetched for
    bool set_cookie = false;
};

/// Takes the judged fields of a reply header (repeated fields joined with ", ").
CacheHeaders take_cache_headers(const boost::beast::http::fields& fields);

/// The value of header `name` in a serialized header block (case-insensitive,
/// repeated fields joined with ", "), or nullopt.
std::optional<std::string> find_field(std::string_view header_block, std::string_view name);

/// What a request asks of caches.
struct RequestFacts {
    std::string method;
    std::string url;
    CacheControl cc;
    bool has_cache_control = false;
    bool pragma_no_cache = false;
    bool authorization = false;
    bool no_store = false;
    std::optional<std::string> if_none_match;
    std::optional<std::string> if_modified_since;
    std::string_view header_block;  // for the fields a Vary names; valid while the request lives
    /// The fields caches decide by, lowercase names, as received (Authorization
    /// and Cookie only as "(present)"): the record's request_headers.
    std::vector<std::pair<std::string, std::string>> fields;

    /// no-cache in Cache-Control, or Pragma: no-cache without Cache-Control (RFC 9111 5.4).
    bool no_cache() const { return cc.no_cache || cc.no_cache_fields || (!has_cache_control && pragma_no_cache); }
};

/// One pass over a serialized request header (the judge reads a dozen fields of every request).
RequestFacts request_facts(std::string method, std::string url, std::string_view header_block);

/// The lowercase names a Vary value lists ("*" stays "*").
std::vector<std::string> vary_names(std::string_view vary);

/// A selecting header's value, normalized as RFC 9111 4.1 allows (whitespace
/// around commas and at the ends removed, lowercased), or nullopt when absent.
std::optional<std::string> selecting_value(std::string_view header_block, std::string_view lower_name);

/// The selecting values of `names` in a request: what a stored variant was chosen by.
using VaryValues = std::vector<std::pair<std::string, std::optional<std::string>>>;
VaryValues vary_values(std::string_view header_block, const std::vector<std::string>& names);

}  // namespace spe

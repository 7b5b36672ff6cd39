// What the cache-rule judge reads from a request: its caching facts, parsed
// from its serialized header only when a record is judged (so the client's
// path pays nothing). A reply's judged fields are taken with its header
// (core/cache_headers.hpp, http/reply_header.hpp).
#pragma once

#include "core/cache_headers.hpp"
#include "judge/cache_control.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spe {

/// The value of header `name` in a serialized header block (case-insensitive,
/// repeated fields joined with ", "), or nullopt.
std::optional<std::string> find_field(std::string_view header_block, std::string_view name);

/// What a request asks of caches.
struct RequestFacts {
    std::string_view method;  // the views: valid while the request lives
    std::string_view url;
    CacheControl cc;
    bool has_cache_control = false;
    bool pragma_no_cache = false;
    bool authorization = false;
    std::optional<std::string> if_none_match;
    std::optional<std::string> if_modified_since;
    std::string_view header_block;  // for the fields a Vary names
    /// The fields caches decide by, lowercase names, as received (Authorization
    /// and Cookie only as "(present)"): the record's request_headers.
    std::vector<std::pair<std::string, std::string>> fields;

    /// no-cache in Cache-Control, or Pragma: no-cache without Cache-Control (RFC 9111 5.4).
    bool no_cache() const { return cc.no_cache || cc.no_cache_fields || (!has_cache_control && pragma_no_cache); }
};

/// One pass over a serialized request header (the judge reads a dozen fields of every request).
RequestFacts request_facts(std::string_view method, std::string_view url, std::string_view header_block);

/// A request field's value (lowercase name; repeated fields joined), or nullopt.
/// Cookie, Authorization and Proxy-Authorization give the keyed digest of the
/// value normalized as selecting_value() does (secret_digest.hpp), never the value.
std::optional<std::string> request_field(const RequestFacts& request, std::string_view lower_name);

/// The lowercase names a Vary value lists ("*" stays "*").
std::vector<std::string> vary_names(std::string_view vary);

/// A selecting header's value, normalized as RFC 9111 4.1 allows (whitespace
/// around commas and at the ends removed, lowercased), or nullopt when absent;
/// for a credential or cookie, the keyed digest of that normalized value.
std::optional<std::string> selecting_value(const RequestFacts& request, std::string_view lower_name);

/// The selecting values of `names` in a request: what a stored variant was chosen by.
using VaryValues = std::vector<std::pair<std::string, std::optional<std::string>>>;
VaryValues vary_values(const RequestFacts& request, const std::vector<std::string>& names);

}  // namespace spe

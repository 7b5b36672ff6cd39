// Which headers cross the Multiplier and which are compared: one table for the
// hop-by-hop set (RFC 9110 section 7.6.1), one list for what validation ignores.
#pragma once

#include "core/compared_headers.hpp"
#include "http/field_view.hpp"

#include <boost/beast/http/fields.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spe {

/// The request tag the Multiplier puts on the upstream copy of each request
/// ("<process id in hex>-<record id>"), so the Collector can tell which
/// client request a fetch belongs to.
inline constexpr std::string_view kRequestTagHeader = "X-SPE-Request";
/// A client's name for itself among others at its address (a load generator's users): each keeps its own
/// order across its connections (--order client). Read by the Multiplier, never sent on.
inline constexpr std::string_view kClientHeader = "X-SPE-Client";
/// The Collector's stamp on every reply: which origin fetch it came from. Recorded, never
/// compared, not relayed to the client unless --client-fetch-stamp.
inline constexpr std::string_view kFetchStampHeader = "X-SPE-Fetch";
/// On the upstream copy of a request read inside an intercepted TLS tunnel: its
/// http URL stands for the https one (the Collector's patch 0014 turns it back).
inline constexpr std::string_view kSchemeHeader = "X-SPE-Scheme";
/// The Collector's note on each reply to a tagged request: the tag of the client request it answers.
inline constexpr std::string_view kReplyToHeader = "X-SPE-Reply-To";
/// The Collector's stamp on a 304 and on the copies it refreshes: when the origin last confirmed a stored copy.
inline constexpr std::string_view kValidationStampHeader = "X-SPE-Validated";
/// The Collector's note on every reply (patch 0020): when it sent it, the Age and Date it sent and the
/// names of its fields. A proxy stores it with its copy: what its parent gave it (parent_stamp.hpp).
inline constexpr std::string_view kParentStampHeader = "X-SPE-Parent";
/// The Collector's prefix for a field the origin sent that its own caching withheld from the client
/// (patch 0021: the Set-Cookie Squid removes from its hits), as the proxies under test got it:
/// "X-SPE-Origin-Set-Cookie" is compared as "Set-Cookie" in the reference, and never relayed.
inline constexpr std::string_view kOriginFieldPrefix = "X-SPE-Origin-";
/// On the replay port's 502 for a proxy's copy of an unsafe request it would not answer: why.
inline constexpr std::string_view kReplayRefusedHeader = "X-SPE-Replay-Refused";

/// Removes the Collector's stamps (X-SPE-Fetch, -Validated, -Reply-To, -Parent): for the record, not the client.
void erase_collector_stamps(boost::beast::http::fields& fields);

/// Removes the Collector's X-SPE-Origin-* fields: what its caching withheld from the client (another
/// request's Set-Cookie) is for the comparison only, never for a client.
void erase_withheld_fields(boost::beast::http::fields& fields);

/// The name a field of the reference reply is compared as: an X-SPE-Origin-<name> field as <name>
/// (lowercase in, lowercase out; other names unchanged).
std::string_view compared_name(std::string_view lower_name);

/// True for headers that describe one connection only and never travel on.
bool is_hop_by_hop(std::string_view name);

/// Removes the hop-by-hop headers, including those named in Connection.
void strip_hop_by_hop(boost::beast::http::fields& fields);

/// The default names (case-insensitive; a trailing '*' matches any suffix)
/// that legitimately differ between hops and are never compared.
const std::vector<std::string>& default_ignored_headers();

/// Decides which end-to-end headers the validator compares.
class HeaderPolicy {
public:
    /// `compare`: when not empty, only these names are compared.
    /// `ignore`: names (or prefixes ending in '*') never compared.
    HeaderPolicy(std::vector<std::string> compare, std::vector<std::string> ignore);
    HeaderPolicy();  // default ignore list, compare everything else

    bool is_compared(std::string_view name) const;

    /// The compared subset of `fields`, lowercased, repeated names joined, sorted.
    ComparedHeaders select(FieldViews fields) const;
    ComparedHeaders select(const boost::beast::http::fields& fields) const { return select(field_views(fields)); }

private:
    /// Lowercase names and prefixes ("x-cache*"), the names kept by length: a name unknown to Beast
    /// (every X- field of every reply) is compared with the few of its length, not with them all.
    class Patterns {
    public:
        explicit Patterns(const std::vector<std::string>& patterns);
        bool empty() const { return empty_; }
        bool matches(std::string_view lower_name) const;

    private:
        std::vector<std::vector<std::string>> names_by_length_;
        std::vector<std::string> prefixes_;  // without the '*'
        bool empty_ = true;
    };
    bool is_compared_lower(std::string_view lower_name) const;
    Patterns compare_;
    Patterns ignore_;
    // For every header name Beast knows, indexed by http::field, worked out
    // once (select() runs for every reply): its lowercase name if it is
    // compared, empty if not.
    std::vector<std::string> known_compared_;
};

std::string to_lower(std::string_view s);

/// Appends "1.1 <via_name>" (with the version the message arrived in) to Via.
void append_via(boost::beast::http::fields& fields, unsigned received_version, const std::string& via_name);

/// Whether a message keeps its connection open, by its first Connection field's value (empty when it
/// has none): HTTP/1.1 unless it lists close, HTTP/1.0 only if it lists keep-alive (RFC 9112 9.3).
/// The same answer as Beast's message::keep_alive(), read through http/field_list.hpp: Beast's
/// parser lets through only a Connection that is a list of tokens, on which the two readings agree.
bool connection_keeps_alive(unsigned version, std::string_view connection);

}  // namespace spe

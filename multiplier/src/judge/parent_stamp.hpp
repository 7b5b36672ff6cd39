// The Collector's X-SPE-Parent header (patch 0020): what the parent of a proxy
// under test sent with a reply, as it left the parent. The proxy stores it with
// its copy, so a reply the proxy serves from its store says what the proxy
// received: the judge holds a proxy to that, not to what the origin sent the
// Collector (which may have answered from its own store, with its own Age).
//   X-SPE-Parent: t=<unix s.ms>; age="<Age>"; date="<Date>"; interim="<statuses>"; connection="<names>";
//                 fields="<names>"
// (interim, patch 0021: the interim responses it sent before this reply, "103 102"; absent: none;
// connection, patch 0023: the fields it sent that its Connection listed, which fields leaves out)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spe {

struct ParentStamp {
    double time = 0;                  // unix seconds when the parent sent the reply
    std::optional<std::string> age;   // the Age it sent, as sent; nullopt: none
    std::optional<std::string> date;  // the Date it sent, as sent; nullopt: none
    std::string fields;               // the lowercase names of every field it sent, each once, space-separated
    std::string connection;           // the lowercase names of the fields it sent for its hop only (Connection's)
    std::vector<unsigned> interim;    // the status of each interim response it sent before the reply, in order

    /// Whether the parent sent a field of this lowercase name.
    bool sent(std::string_view lower_name) const;
};

/// The stamp, or nullopt when the value lacks a valid `t=` or a quoted
/// parameter is not closed. Unknown parameters are ignored (a later patch may add some).
std::optional<ParentStamp> parse_parent_stamp(std::string_view value);

}  // namespace spe

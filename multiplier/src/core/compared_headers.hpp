// The end-to-end header fields of a reply the validator compares (which ones:
// http/header_policy.hpp): part of every measure in the record.
#pragma once

#include <string>
#include <vector>

namespace spe {

/// A header as compared by the validator: lowercase name, values joined with ", ".
struct ComparedHeader {
    std::string name;
    std::string value;
    bool operator==(const ComparedHeader&) const = default;
};
using ComparedHeaders = std::vector<ComparedHeader>;  // sorted by name

}  // namespace spe

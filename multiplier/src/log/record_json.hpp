// The record as one line of JSON Lines: the log's schema (docs/log-format.md,
// docs/multiplier-log.schema.json), members in key order.
#pragma once

#include "core/measurement.hpp"

#include <string>
#include <string_view>

namespace spe {

/// One JSON Lines record (no trailing newline), written by the Multiplier named `multiplier` (a valid --name:
/// written as it is).
std::string to_json_line(const RequestRecord& record, std::string_view multiplier);

}  // namespace spe

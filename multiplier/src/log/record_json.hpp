// The record as one line of JSON Lines: the log's schema (docs/log-format.md,
// docs/multiplier-log.schema.json), members in key order.
#pragma once

#include "core/measurement.hpp"

#include <string>

namespace spe {

/// One JSON Lines record (no trailing newline).
std::string to_json_line(const RequestRecord& record);

}  // namespace spe

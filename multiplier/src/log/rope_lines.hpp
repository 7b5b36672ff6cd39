// ROPE's text log: one line for the Collector and one per proxy under test
// (the paper's Figure 3), for the tools that read ROPE's format.
#pragma once

#include "core/measurement.hpp"

#include <string>

namespace spe {

/// ROPE text lines (the Collector's first, then one per proxy), each ending in '\n'.
std::string to_rope_lines(const RequestRecord& record, long pid);

}  // namespace spe

#include "metrics/exposition.hpp"

#include <fmt/format.h>

namespace spe {
namespace {

/// Backslash and line feed escaped, and the double quote too when `quote` (label values; HELP text leaves it).
std::string escape(std::string_view text, bool quote) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '\\' || (quote && c == '"')) out += '\\';
        if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

}  // namespace

std::string escape_label_value(std::string_view value) {
    return escape(value, true);
}

void Exposition::family(std::string_view name, std::string_view type, std::string_view help) {
    fmt::format_to(std::back_inserter(text_), "# HELP {} {}\n# TYPE {} {}\n", name, escape(help, false), name, type);
}

void Exposition::series(std::string_view name, std::string_view suffix, const Labels& labels, std::string_view le) {
    text_ += name;
    text_ += suffix;
    if (labels.empty() && le.empty()) return;
    char sep = '{';
    for (const auto& [label, value] : labels) {
        fmt::format_to(std::back_inserter(text_), "{}{}=\"{}\"", sep, label, escape_label_value(value));
        sep = ',';
    }
    if (!le.empty()) fmt::format_to(std::back_inserter(text_), "{}le=\"{}\"", sep, le);
    text_ += '}';
}

void Exposition::sample(std::string_view name, const Labels& labels, std::uint64_t value) {
    series(name, "", labels, "");
    fmt::format_to(std::back_inserter(text_), " {}\n", value);
}

void Exposition::sample(std::string_view name, const Labels& labels, double value) {
    series(name, "", labels, "");
    fmt::format_to(std::back_inserter(text_), " {}\n", value);
}

void Exposition::histogram(std::string_view name, const Labels& labels, std::span<const double> bounds,
                           std::span<const std::uint64_t> counts, double sum) {
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        cumulative += i < counts.size() ? counts[i] : 0;
        series(name, "_bucket", labels, fmt::format("{}", bounds[i]));
        fmt::format_to(std::back_inserter(text_), " {}\n", cumulative);
    }
    if (counts.size() > bounds.size()) cumulative += counts[bounds.size()];
    series(name, "_bucket", labels, "+Inf");
    fmt::format_to(std::back_inserter(text_), " {}\n", cumulative);
    series(name, "_sum", labels, "");
    fmt::format_to(std::back_inserter(text_), " {}\n", sum);
    series(name, "_count", labels, "");
    fmt::format_to(std::back_inserter(text_), " {}\n", cumulative);
}

}  // namespace spe

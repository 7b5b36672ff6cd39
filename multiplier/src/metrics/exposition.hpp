// The Prometheus text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/), written
// directly: a family's # HELP and # TYPE lines, then its samples. Debian 12
// has no package of a C++ client library (prometheus-cpp), and the format is a
// few lines of text (docs/architecture.md).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spe {

using Label = std::pair<std::string_view, std::string_view>;  // name, value
using Labels = std::vector<Label>;

/// A label value as the format writes it: backslash, double quote and line feed escaped.
std::string escape_label_value(std::string_view value);

class Exposition {
public:
    /// Starts a family: `type` is counter, gauge or histogram. Each family once, before its samples.
    void family(std::string_view name, std::string_view type, std::string_view help);
    void sample(std::string_view name, const Labels& labels, std::uint64_t value);
    void sample(std::string_view name, const Labels& labels, double value);
    /// A histogram's series: `counts[i]` observations in bucket i alone (at most `bounds[i]`, above the
    /// bucket before it), the last one above every bound; written cumulative, with le="+Inf", _sum and _count.
    void histogram(std::string_view name, const Labels& labels, std::span<const double> bounds,
                   std::span<const std::uint64_t> counts, double sum);

    const std::string& text() const { return text_; }

private:
    void series(std::string_view name, std::string_view suffix, const Labels& labels, std::string_view le);

    std::string text_;
};

}  // namespace spe

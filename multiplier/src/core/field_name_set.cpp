#include "core/field_name_set.hpp"
#include "core/ascii.hpp"
#include "core/name_list.hpp"

namespace spe {

namespace http = boost::beast::http;

std::size_t FieldNameSet::bit_of(http::field id) {
    const auto bit = static_cast<std::size_t>(id);
    return id == http::field::unknown || bit >= kKnown ? kKnown : bit;
}

void FieldNameSet::add(http::field id, std::string_view name) {
    if (const auto bit = bit_of(id); bit < kKnown)
        known_.set(bit);
    else
        add_name(unknown_, name);
}

void FieldNameSet::add(std::string_view name) {
    if (!name.empty()) add(http::string_to_field(name), name);
}

void FieldNameSet::add_list(std::string_view list) {
    for_each_name(list, [this](std::string_view name) { add(name); });
}

FieldNameSet FieldNameSet::of(std::string_view list) {
    FieldNameSet set;
    set.add_list(list);
    return set;
}

bool FieldNameSet::operator==(const FieldNameSet& other) const {
    if (known_ != other.known_ || unknown_.size() != other.unknown_.size()) return false;
    // Each list names each once: as long and every name of one in the other is the same set.
    bool same = true;
    for_each_name(unknown_, [&](std::string_view name) { same = same && name_listed(other.unknown_, name); });
    return same;
}

std::string FieldNameSet::names() const {
    std::string out;
    for (std::size_t bit = 0; bit < kKnown; ++bit) {
        if (!known_.test(bit)) continue;
        if (!out.empty()) out += ' ';
        append_lower(out, http::to_string(static_cast<http::field>(bit)));
    }
    if (!unknown_.empty()) out.append(out.empty() ? "" : " ").append(unknown_);
    return out;
}

bool FieldNameSet::contains(std::string_view name) const {
    if (const auto bit = bit_of(http::string_to_field(name)); bit < kKnown) return known_.test(bit);
    return name_listed(unknown_, name);
}

}  // namespace spe

#include "core/field_name_set.hpp"
#include "core/ascii.hpp"
#include "core/name_list.hpp"

#include <algorithm>
#include <array>
#include <bit>

namespace spe {

namespace http = boost::beast::http;

namespace {

/// Whether a lowercase, space-separated list names `lower` (lowercase too): found where it stands alone.
bool listed_lowercase(std::string_view list, std::string_view lower) {
    for (auto at = list.find(lower); at != std::string_view::npos; at = list.find(lower, at + 1)) {
        const auto end = at + lower.size();
        if ((at == 0 || list[at - 1] == ' ') && (end == list.size() || list[end] == ' ')) return true;
    }
    return false;
}

}  // namespace

const std::array<std::string, FieldNameSet::kKnown>& FieldNameSet::lowercase_known() {
    static const auto names = [] {
        std::array<std::string, kKnown> out;
        for (std::size_t bit = 0; bit < kKnown; ++bit)
            append_lower(out[bit], http::to_string(static_cast<http::field>(bit)));
        return out;
    }();
    return names;
}

std::size_t FieldNameSet::bit_of(http::field id) {
    const auto bit = static_cast<std::size_t>(id);
    return id == http::field::unknown || bit >= kKnown ? kKnown : bit;
}

void FieldNameSet::add(http::field id, std::string_view name) {
    if (const auto bit = bit_of(id); bit < kKnown)
        known_[bit / kWordBits] |= std::uint64_t{1} << (bit % kWordBits);
    else
        add_unknown(name);
}

void FieldNameSet::add_unknown(std::string_view name) {
    // Every reply has a few names Beast does not know (X-Cache, SPE's stamps): lowercased once on the
    // stack, after the space that joins it to the list, and looked for as a whole, rather than compared
    // name by name without regard to case.
    std::array<char, 65> joined;
    if (name.empty() || name.size() >= joined.size()) return add_name(unknown_, name);
    joined[0] = ' ';
    std::transform(name.begin(), name.end(), joined.begin() + 1, ascii_lower);
    const std::string_view lower(joined.data() + 1, name.size());
    if (listed_lowercase(unknown_, lower)) return;
    if (unknown_.empty()) {
        unknown_.reserve(kUnknownRoom);  // one allocation for a reply's few
        unknown_ = lower;
    } else {
        unknown_.append(joined.data(), name.size() + 1);
    }
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

bool FieldNameSet::empty() const {
    return unknown_.empty() && std::all_of(known_.begin(), known_.end(), [](std::uint64_t w) { return w == 0; });
}

bool FieldNameSet::operator==(const FieldNameSet& other) const {
    if (known_ != other.known_ || unknown_.size() != other.unknown_.size()) return false;
    // Each list names each once: as long and every name of one in the other is the same set.
    bool same = true;
    for_each_name(unknown_, [&](std::string_view name) { same = same && name_listed(other.unknown_, name); });
    return same;
}

std::string FieldNameSet::names() const {
    const auto& lower = lowercase_known();
    std::string out;
    out.reserve(256);
    for (std::size_t word = 0; word < known_.size(); ++word)
        for (auto bits = known_[word]; bits != 0; bits &= bits - 1) {
            const auto bit = word * kWordBits + static_cast<std::size_t>(std::countr_zero(bits));
            if (!out.empty()) out += ' ';
            out += lower[bit];
        }
    if (!unknown_.empty()) out.append(out.empty() ? "" : " ").append(unknown_);
    return out;
}

bool FieldNameSet::contains(std::string_view name) const {
    if (const auto bit = bit_of(http::string_to_field(name)); bit < kKnown)
        return (known_[bit / kWordBits] >> (bit % kWordBits) & 1) != 0;
    return name_listed(unknown_, name);
}

}  // namespace spe

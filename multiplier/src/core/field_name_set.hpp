// The names of a reply's fields, as a set: what a proxy kept of the fields its parent sent
// (X-SPE-Parent's list) and which of a qualified no-cache's or private's names it served are judged
// by it. Taken from every reply, asked only for the few that carry such a list: a name Beast knows is
// one bit (its parser already matched it without regard to case); only other names are kept as text.
#pragma once

#include <boost/beast/http/field.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace spe {

class FieldNameSet {
public:
    /// Adds a field's name; `id`: Beast's number for it (field::unknown when it has none), as its parser gives.
    void add(boost::beast::http::field id, std::string_view name);
    /// Adds a name, looking up its number.
    void add(std::string_view name);
    /// Adds every name of a space-separated list.
    void add_list(std::string_view list);
    /// The set of a space-separated list of names.
    static FieldNameSet of(std::string_view list);

    /// Whether a field of that name was added (without regard to case).
    bool contains(std::string_view name) const;
    bool empty() const;
    /// The names, lowercase and space-separated: those Beast knows in its order, then the others as added.
    std::string names() const;
    /// The same names, in whatever order they came.
    bool operator==(const FieldNameSet& other) const;

private:
    static constexpr std::size_t kKnown = static_cast<std::size_t>(boost::beast::http::field::xref) + 1;
    static constexpr std::size_t kWordBits = 64;
    static constexpr std::size_t kUnknownRoom = 64;  // a reply's unknown names: X-Cache and SPE's stamps
    /// The bit of a name Beast knows, or kKnown for any other name.
    static std::size_t bit_of(boost::beast::http::field id);
    /// Beast's names, lowercased once: names() writes a dozen of them per request.
    static const std::array<std::string, kKnown>& lowercase_known();
    void add_unknown(std::string_view name);

    // Words rather than a std::bitset: names() visits the set bits (a dozen of Beast's 350 names) a word
    // at a time; it runs for the Collector's reply of every request (the record's origin_fields).
    std::array<std::uint64_t, (kKnown + kWordBits - 1) / kWordBits> known_{};
    std::string unknown_;  // lowercase, space-separated, each once (core/name_list.hpp)
};

}  // namespace spe

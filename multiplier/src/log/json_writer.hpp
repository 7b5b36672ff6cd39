// A JSON writer for one record line, written by hand: building an
// nlohmann::json tree per record (a std::map per object, a heap node per
// value) cost about a third of the Multiplier's CPU per request. The output is
// byte-identical to nlohmann::json::dump() of the same tree when members are
// written in sorted key order (record_json.cpp does; same number and string
// forms); tests/unit/test_result_log.cpp checks that.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spe {

/// A member name as written before its value, `,"name":`, made at compile time.
template <std::size_t N>
struct MemberName {
    std::array<char, N + 3> text{};
    consteval MemberName(const char (&name)[N]) {  // implicit, so that key<"name">() reads well
        text[0] = ',';
        text[1] = '"';
        for (std::size_t i = 0; i + 1 < N; ++i)
            text[i + 2] = name[i];
        text[N + 1] = '"';
        text[N + 2] = ':';
    }
};

class JsonWriter {
public:
    explicit JsonWriter(std::string& out) : out_(out) {}

    void open() { out_ += '{', first_ = true; }
    void close() { out_ += '}', first_ = false; }
    void open_array() { out_ += '[', first_ = true; }
    void close_array() { out_ += ']', first_ = false; }
    /// Starts a member: the comma (if needed) and "key":, in one append (the
    /// names are known at compile time; a record has about 80 members).
    template <MemberName name>
    JsonWriter& key() {
        out_.append(name.text.data() + (first_ ? 1 : 0), name.text.size() - (first_ ? 1 : 0));
        first_ = true;  // the value follows without a comma
        return *this;
    }
    /// After a member name written as a string (names not known at compile time).
    void colon() { out_ += ':', first_ = true; }
    void element() {
        if (!first_) out_ += ',';
        first_ = false;
    }
    void null() { out_ += "null", first_ = false; }
    void boolean(bool b) { out_ += b ? "true" : "false", first_ = false; }
    template <class Int>
    void integer(Int v) {
        std::array<char, 24> buf{};
        auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
        out_.append(buf.data(), res.ptr);
        first_ = false;
    }
    template <class Int>
    void integer(const std::optional<Int>& v) {
        v ? integer(*v) : null();
    }
    void number(double v) {
        if (!std::isfinite(v)) return null();
        std::array<char, 64> buf{};
        auto* end = nlohmann::detail::to_chars(buf.data(), buf.data() + buf.size(), v);
        out_.append(buf.data(), end);
        first_ = false;
    }
    /// A non-negative number of at most three decimals (times and ages in ms
    /// resolution), written as nlohmann's shortest form would (trailing zeros
    /// trimmed, ".0" when whole) with integer formatting: the judge writes
    /// several per reply, and the general double formatting costs ten times more.
    void number_ms(double v) {
        if (!std::isfinite(v) || v < 0 || v >= 1e15) return number(v);
        // Rounded by adding a half (llround is a library call): any value this gets wrong is not a whole
        // number of ms, which the check below sends to the general form anyway.
        const auto ms = static_cast<std::uint64_t>(v * 1000 + 0.5);
        if (static_cast<double>(ms) / 1000 != v) return number(v);  // not a whole number of ms: the general form
        std::array<char, 32> buf;
        char* end = std::to_chars(buf.data(), buf.data() + 24, ms / 1000).ptr;
        // The fraction's digits, trailing zeros trimmed ("0" when whole).
        const auto frac = static_cast<unsigned>(ms % 1000);
        end[0] = '.';
        end[1] = static_cast<char>('0' + frac / 100);
        end[2] = static_cast<char>('0' + frac / 10 % 10);
        end[3] = static_cast<char>('0' + frac % 10);
        end += frac == 0 ? 2 : frac % 10 != 0 ? 4 : frac % 100 != 0 ? 3 : 2;
        out_.append(buf.data(), end);  // one append
        first_ = false;
    }
    void string(std::string_view s);
    /// A string the program itself names (a rule's id, a claim, a provenance: ASCII letters, digits,
    /// `-` and `_`), written without the scan for characters to escape: a judged record has a dozen.
    void name(std::string_view s) {
        assert(std::none_of(s.begin(), s.end(), [](char c) { return c == '"' || c == '\\' || c < 0x20; }));
        quoted(s);
    }
    /// The string, or null when it is empty.
    void string_or_null(std::string_view s) { s.empty() ? null() : string(s); }

private:
    /// `s` between quotes, as it is (nothing in it needs escaping), in one append.
    void quoted(std::string_view s) {
        const auto at = out_.size();
        out_.resize(at + s.size() + 2);
        out_[at] = '"';
        s.copy(out_.data() + at + 1, s.size());
        out_[at + 1 + s.size()] = '"';
        first_ = false;
    }

    std::string& out_;
    bool first_ = true;
};

}  // namespace spe

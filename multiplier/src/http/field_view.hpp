// One field of a reply header as the Multiplier reads it: Beast's number for
// its name, the name as received, the value. Both ways a reply header is held
// give it: Beast's fields (the Collector's reply, which is relayed) and the
// proxy reply parser's copy (proxy_reply_parser.hpp, which builds no fields),
// so the compared headers and the judge's fields are taken by one code for both.
#pragma once

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/container/small_vector.hpp>

#include <span>
#include <string_view>

namespace spe {

/// A field's name and value, viewed where they are held; named as Beast's
/// fields::value_type does.
class FieldView {
public:
    FieldView(boost::beast::http::field name, std::string_view name_string, std::string_view value)
        : name_(name), name_string_(name_string), value_(value) {}

    boost::beast::http::field name() const { return name_; }
    std::string_view name_string() const { return name_string_; }
    std::string_view value() const { return value_; }

private:
    boost::beast::http::field name_;
    std::string_view name_string_;
    std::string_view value_;
};

/// A header's fields in arrival order.
using FieldViews = std::span<const FieldView>;
/// Room for a reply's fields without an allocation (a reply has a dozen or so).
class FieldViewList : public boost::container::small_vector<FieldView, 32> {
public:
    // Boost's small_vector is no contiguous range to std::span: said here.
    operator FieldViews() const { return {data(), size()}; }
};

/// Views of `fields` in arrival order, valid while `fields` is unchanged.
inline FieldViewList field_views(const boost::beast::http::fields& fields) {
    FieldViewList out;
    for (const auto& f : fields)
        out.emplace_back(f.name(), f.name_string(), f.value());
    return out;
}

}  // namespace spe

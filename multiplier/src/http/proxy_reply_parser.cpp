#include "http/proxy_reply_parser.hpp"
#include "core/ascii.hpp"

#include <boost/beast/http/rfc7230.hpp>

#include <algorithm>

namespace spe {

namespace http = boost::beast::http;

namespace {

/// `s` without spaces and tabs around it: what Beast's fields keep of a value (fields.hpp, new_element).
std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

/// Whether the comma-separated `list` has `token`, parsed as Beast's message::keep_alive parses
/// Connection (token_list), compared with spe::iequals: Beast's reads a byte past its arguments
/// when they differ only in case (core/ascii.hpp).
bool lists_token(std::string_view list, std::string_view token) {
    const http::token_list tokens{list};
    return std::any_of(tokens.begin(), tokens.end(), [&](std::string_view t) { return spe::iequals(t, token); });
}

}  // namespace

std::uint32_t ProxyReplyParser::keep(std::string_view s) {
    const auto at = static_cast<std::uint32_t>(text_.size());
    text_.insert(text_.end(), s.begin(), s.end());
    return at;
}

void ProxyReplyParser::on_response_impl(int code, std::string_view reason, int version, boost::beast::error_code& ec) {
    ec = {};
    status_ = static_cast<unsigned>(code);
    version_ = static_cast<unsigned>(version);
    keep(reason);
    reason_size_ = static_cast<std::uint32_t>(reason.size());
    // Without a Connection field, HTTP/1.1 keeps the connection and HTTP/1.0 does not.
    header_keep_alive_ = version_ >= 11;
}

void ProxyReplyParser::on_field_impl(http::field name, std::string_view name_string, std::string_view value,
                                     boost::beast::error_code& ec) {
    ec = {};
    value = trim_ows(value);
    if (name == http::field::connection && !connection_seen_) {
        connection_seen_ = true;
        header_keep_alive_ = version_ >= 11 ? !lists_token(value, "close") : lists_token(value, "keep-alive");
    }
    const auto name_at = keep(name_string);
    const auto value_at = keep(value);
    fields_.push_back({name, name_at, static_cast<std::uint32_t>(name_string.size()), value_at,
                       static_cast<std::uint32_t>(value.size())});
}

FieldViewList ProxyReplyParser::fields() const {
    FieldViewList out;
    for (const auto& f : fields_)
        out.emplace_back(f.name, text(f.name_at, f.name_size), text(f.value_at, f.value_size));
    return out;
}

std::size_t ProxyReplyParser::on_body_impl(std::string_view body, boost::beast::error_code& ec) {
    ec = {};
    body_.put(body.data(), body.size());
    return body.size();
}

std::size_t ProxyReplyParser::on_chunk_body_impl(std::uint64_t, std::string_view body, boost::beast::error_code& ec) {
    ec = {};
    body_.put(body.data(), body.size());
    return body.size();
}

}  // namespace spe

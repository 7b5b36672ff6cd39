#include "http/proxy_reply_parser.hpp"
#include "core/ascii.hpp"

#include "http/header_policy.hpp"

namespace spe {

namespace http = boost::beast::http;

ProxyReplyParser::ProxyReplyParser() = default;

void ProxyReplyParser::on_response_impl(int code, std::string_view reason, int version, boost::beast::error_code&) {
    status_ = static_cast<unsigned>(code);
    version_ = static_cast<unsigned>(version);
    reason_ = kept_.keep(reason);
    // Without a Connection field, HTTP/1.1 keeps the connection and HTTP/1.0 does not.
    header_keep_alive_ = version_ >= 11;
    if (capped_status_ != 0 && status_ != capped_status_) body_limit(other_status_limit_);
}

// The value comes trimmed of optional whitespace (detail/basic_parser.ipp, parse_field: an
// obs-fold's lines trimmed too, joined with one space), as Beast's fields keep it.
void ProxyReplyParser::on_field_impl(http::field name, std::string_view name_string, std::string_view value,
                                     boost::beast::error_code&) {
    if (name == http::field::connection && !connection_seen_) {
        connection_seen_ = true;
        header_keep_alive_ = connection_keeps_alive(version_, value);
    }
    fields_.emplace_back(name, kept_.keep(name_string), kept_.keep(value));
}

std::size_t ProxyReplyParser::on_body_impl(std::string_view body, boost::beast::error_code&) {
    body_.put(body.data(), body.size());
    return body.size();
}

std::size_t ProxyReplyParser::on_chunk_body_impl(std::uint64_t, std::string_view body, boost::beast::error_code&) {
    body_.put(body.data(), body.size());
    return body.size();
}

}  // namespace spe

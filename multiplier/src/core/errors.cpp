#include "core/errors.hpp"

#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>

namespace spe {

std::string_view to_string(LegError e) {
    switch (e) {
        case LegError::none:
            return "none";
        case LegError::refused:
            return "refused";
        case LegError::timeout:
            return "timeout";
        case LegError::reset:
            return "reset";
        case LegError::closed:
            return "closed";
        case LegError::truncated:
            return "truncated";
        case LegError::bad_header:
            return "bad header";
        case LegError::header_too_large:
            return "header too large";
        case LegError::body_too_large:
            return "body too large";
        case LegError::bad_body:
            return "bad body";
        case LegError::aborted:
            return "aborted";
        case LegError::busy:
            return "busy";
        case LegError::extra_data:
            return "extra data";
        case LegError::not_sent:
            return "not sent";
        case LegError::replay_refused:
            return "replay refused";
    }
    return "unknown";
}

bool is_no_response(LegError e) {
    switch (e) {
        case LegError::refused:
        case LegError::timeout:
        case LegError::reset:
        case LegError::closed:
        case LegError::aborted:
        case LegError::busy:
            return true;
        default:
            return false;
    }
}

LegError classify(const boost::system::error_code& ec, bool got_header) {
    namespace http = boost::beast::http;
    namespace aerr = boost::asio::error;
    if (!ec) return LegError::none;
    if (ec == boost::beast::error::timeout) return LegError::timeout;
    if (ec == aerr::connection_refused || ec == aerr::host_unreachable || ec == aerr::network_unreachable ||
        ec == aerr::host_not_found)
        return LegError::refused;
    if (ec == aerr::connection_reset || ec == aerr::broken_pipe) return LegError::reset;
    if (ec == aerr::operation_aborted) return LegError::aborted;
    if (ec == http::error::end_of_stream || ec == aerr::eof) return got_header ? LegError::truncated : LegError::closed;
    if (ec == http::error::partial_message) return got_header ? LegError::truncated : LegError::bad_header;
    if (ec == http::error::header_limit) return LegError::header_too_large;
    // More unparsed bytes than the read buffer may hold (e.g. endless chunk extensions).
    if (ec == http::error::buffer_overflow) return got_header ? LegError::bad_body : LegError::header_too_large;
    if (ec == http::error::body_limit) return LegError::body_too_large;
    if (ec == http::error::bad_chunk || ec == http::error::bad_chunk_extension || ec == http::error::short_read)
        return LegError::bad_body;
    if (ec.category() == http::make_error_code(http::error::bad_version).category())
        return got_header ? LegError::bad_body : LegError::bad_header;
    return got_header ? LegError::truncated : LegError::closed;
}

}  // namespace spe

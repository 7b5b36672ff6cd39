// Parsing what a connection has already read, before asking the socket for more.
#pragma once

#include "core/net.hpp"
#include "http/read_buffer.hpp"

#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>

namespace spe {

/// Parses what a connection has already buffered, as Beast's reads do first,
/// but without their posted completion: a reply usually arrives whole with the
/// read that measured its first byte. Stops at the end of the header (unless
/// the parser is eager), at the end of the message, at an error, or when the
/// buffer is used up; an asynchronous read then goes on from there. Returns
/// the bytes consumed.
template <bool isRequest>
std::size_t parse_buffered(http::basic_parser<isRequest>& p, ReadBuffer& buffer, error_code& ec) {
    std::size_t used = 0;
    while (buffer.size() > 0 && !p.is_done() && (p.eager() || !p.is_header_done())) {
        const auto n = p.put(buffer.data(), ec);
        buffer.consume(n);
        used += n;
        if (ec || n == 0) break;
    }
    if (ec == http::error::need_more) ec = {};
    return used;
}

}  // namespace spe

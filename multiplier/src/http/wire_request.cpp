#include "http/wire_request.hpp"

#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/serializer.hpp>

#include <stdexcept>

namespace spe {

WireRequest::WireRequest(Request message) : method_(message.method()) {
    // Beast's serializer produces the header exactly as http::write would.
    http::request_serializer<http::string_body> sr(message);
    sr.split(true);
    boost::system::error_code ec;
    while (!ec && !sr.is_header_done()) {
        sr.next(ec, [&](boost::system::error_code&, const auto& buffers) {
            std::size_t n = 0;
            for (auto b : beast::buffers_range_ref(buffers)) {
                header_.append(static_cast<const char*>(b.data()), b.size());
                n += b.size();
            }
            sr.consume(n);
        });
    }
    if (ec) throw std::logic_error("serializing a request header: " + ec.message());
    body_ = std::move(message.body());
}

}  // namespace spe

#include "io/client_connection.hpp"

#include <utility>

namespace spe {
namespace {

std::string address_of(const tcp::socket& s) {
    error_code ec;
    auto ep = s.remote_endpoint(ec);
    if (ec) return "-";
    auto a = ep.address();
    if (a.is_v6() && a.to_v6().is_v4_mapped()) a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
    return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(ep.port());
}

}  // namespace

ClientConnection::ClientConnection(tcp::socket socket, std::size_t buffer_limit)
    : transport(std::move(socket)), stream(transport), buffer(buffer_limit), address(address_of(transport.socket())) {
    error_code ec;
    transport.socket().set_option(tcp::no_delay(true), ec);
}

}  // namespace spe

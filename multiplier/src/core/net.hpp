// Shorthands for the Asio/Beast types used across the data path.
#pragma once

#include <utility>  // Asio 1.74's awaitable.hpp uses std::exchange without including it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/string_body.hpp>

#include "core/message_types.hpp"
#include "core/steady_clock.hpp"

namespace spe {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
template <class T>
using awaitable = asio::awaitable<T>;

/// Completion token for co_await that stores the error in `ec` instead of throwing.
inline auto with_ec(error_code& ec) {
    return asio::redirect_error(asio::use_awaitable, ec);
}

}  // namespace spe

// Namespace shorthands and the request type shared by the data path and the
// pure policy code (which must build without coroutines, e.g. for fuzzing).
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace spe {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using Request = http::request<http::string_body>;

}  // namespace spe

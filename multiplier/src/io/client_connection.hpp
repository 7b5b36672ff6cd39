// One client connection as the sessions that serve it in turn hold it: the
// downstream session (plain HTTP), and for a CONNECT a tunnel or an
// interception, to which it hands the connection with the bytes it has read
// but not used. The TCP stream, the stream the HTTP code reads and writes (TLS
// over the TCP one once a tunnel is intercepted), those bytes, the address.
#pragma once

#include "http/read_buffer.hpp"
#include "io/client_stream.hpp"
#include "io/timed_stream.hpp"

#include <string>

namespace spe {

struct ClientConnection {
    /// `socket` must already be bound to the connection's strand; `buffer_limit`:
    /// read_buffer_limit() of the config.
    ClientConnection(tcp::socket socket, std::size_t buffer_limit);
    ClientConnection(const ClientConnection&) = delete;
    ClientConnection& operator=(const ClientConnection&) = delete;

    /// The address without its port.
    std::string ip() const { return address.substr(0, address.rfind(':')); }

    TimedStream transport;      // the TCP stream, where the deadlines are
    ClientStream stream;        // `transport`, or TLS over it once a tunnel is intercepted
    ReadBuffer buffer;          // read from the client, not used yet (a pipelined request, a ClientHello)
    const std::string address;  // "ip:port" ("[ip]:port" for IPv6), "-" when unknown
};

}  // namespace spe

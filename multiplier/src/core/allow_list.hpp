// Client allow-list: CIDR blocks (IPv4 and IPv6) a client address must match.
#pragma once

#include <boost/asio/ip/address.hpp>

#include <string>
#include <vector>

namespace spe {

class AllowList {
public:
    /// Adds "a.b.c.d/n", "x::y/n" or a bare address. Throws std::invalid_argument.
    void add(const std::string& cidr);
    bool allows(const boost::asio::ip::address& addr) const;
    bool empty() const { return blocks_.empty(); }
    bool operator==(const AllowList&) const = default;

private:
    struct Block {
        boost::asio::ip::address_v6::bytes_type prefix{};
        unsigned bits = 0;  // over the IPv6 (or v4-mapped) form
        bool operator==(const Block&) const = default;
    };
    std::vector<Block> blocks_;
};

}  // namespace spe

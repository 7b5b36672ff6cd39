#include "core/allow_list.hpp"

#include <stdexcept>

namespace spe {
namespace ip = boost::asio::ip;

namespace {
// Every address is compared in its IPv6 form, so IPv4 blocks match both plain
// and v4-mapped client addresses.
ip::address_v6 as_v6(const ip::address& a) {
    return a.is_v4() ? ip::make_address_v6(ip::v4_mapped, a.to_v4()) : a.to_v6();
}

bool prefix_equal(const ip::address_v6::bytes_type& a, const ip::address_v6::bytes_type& b, unsigned bits) {
    for (unsigned i = 0; i < 16 && bits > 0; ++i) {
        unsigned take = bits >= 8 ? 8 : bits;
        auto mask = static_cast<unsigned char>(0xff << (8 - take));
        if ((a[i] & mask) != (b[i] & mask)) return false;
        bits -= take;
    }
    return true;
}
}  // namespace

void AllowList::add(const std::string& cidr) {
    auto slash = cidr.find('/');
    boost::system::error_code ec;
    auto addr = ip::make_address(cidr.substr(0, slash), ec);
    if (ec) throw std::invalid_argument("not an IP address or CIDR block: '" + cidr + "'");
    unsigned max_bits = addr.is_v4() ? 32 : 128;
    unsigned bits = max_bits;
    if (slash != std::string::npos) {
        try {
            std::size_t used = 0;
            bits = static_cast<unsigned>(std::stoul(cidr.substr(slash + 1), &used));
            if (used != cidr.size() - slash - 1) throw std::invalid_argument("trailing text");
        } catch (const std::exception&) {
            throw std::invalid_argument("bad prefix length in '" + cidr + "'");
        }
        if (bits > max_bits) throw std::invalid_argument("prefix length too long in '" + cidr + "'");
    }
    blocks_.push_back({as_v6(addr).to_bytes(), addr.is_v4() ? bits + 96 : bits});
}

bool AllowList::allows(const ip::address& addr) const {
    auto bytes = as_v6(addr).to_bytes();
    for (const auto& b : blocks_)
        if (prefix_equal(b.prefix, bytes, b.bits)) return true;
    return false;
}

}  // namespace spe

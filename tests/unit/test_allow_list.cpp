#include "core/allow_list.hpp"

#include <catch2/catch.hpp>

using spe::AllowList;
namespace ip = boost::asio::ip;

TEST_CASE("allow-list matches IPv4 blocks, also for v4-mapped clients") {
    AllowList list;
    list.add("127.0.0.0/8");
    list.add("10.1.2.0/24");
    CHECK(list.allows(ip::make_address("127.0.0.1")));
    CHECK(list.allows(ip::make_address("127.255.1.9")));
    CHECK(list.allows(ip::make_address("::ffff:127.0.0.1")));
    CHECK(list.allows(ip::make_address("10.1.2.200")));
    CHECK_FALSE(list.allows(ip::make_address("10.1.3.1")));
    CHECK_FALSE(list.allows(ip::make_address("128.0.0.1")));
    CHECK_FALSE(list.allows(ip::make_address("::1")));
}

TEST_CASE("allow-list handles IPv6, bare addresses and odd prefix lengths") {
    AllowList list;
    list.add("::1");
    list.add("fd00::/9");
    list.add("192.168.1.7");
    list.add("172.16.0.0/12");
    CHECK(list.allows(ip::make_address("::1")));
    CHECK(list.allows(ip::make_address("fd7f::1")));
    CHECK_FALSE(list.allows(ip::make_address("fd80::1")));
    CHECK(list.allows(ip::make_address("192.168.1.7")));
    CHECK_FALSE(list.allows(ip::make_address("192.168.1.8")));
    CHECK(list.allows(ip::make_address("172.31.255.255")));
    CHECK_FALSE(list.allows(ip::make_address("172.32.0.0")));
}

TEST_CASE("allow-list rejects malformed blocks with a message") {
    AllowList list;
    CHECK_THROWS_WITH(list.add("nonsense/8"), Catch::Contains("not an IP address"));
    CHECK_THROWS_WITH(list.add("10.0.0.0/33"), Catch::Contains("too long"));
    CHECK_THROWS_WITH(list.add("10.0.0.0/x"), Catch::Contains("bad prefix"));
    CHECK(list.empty());
}

// classify() against the IANA special-purpose registries and the policy's
// stances (address.h): every range at its edges, and the addresses just outside.
#include <string>

#include <gtest/gtest.h>

#include "taskyon/capability/address.h"

namespace taskyon::capability {
namespace {

IpAddress ip(std::string_view text) {
  auto a = IpAddress::parse(text);
  EXPECT_TRUE(a.has_value()) << text;
  return a.value_or(IpAddress{});
}

std::string class_of(std::string_view text) { return std::string(address_class_name(classify(ip(text)).cls)); }
std::string prefix_of(std::string_view text) { return std::string(classify(ip(text)).prefix); }

TEST(CapabilityAddress, ParsesStrictTextForms) {
  EXPECT_EQ(ip("93.184.215.14").to_string(), "93.184.215.14");
  EXPECT_EQ(ip("0.0.0.0").to_string(), "0.0.0.0");
  EXPECT_EQ(ip("255.255.255.255").v4_value(), 0xffffffffu);
  EXPECT_EQ(ip("::ffff:169.254.169.254").to_string(), "::ffff:a9fe:a9fe");
  EXPECT_EQ(ip("2001:0DB8:0:0:0:0:0:1").to_string(), "2001:db8::1");
  EXPECT_EQ(ip("::").to_string(), "::");
  EXPECT_EQ(ip("1:0:0:2:0:0:0:3").to_string(), "1:0:0:2::3");
  EXPECT_TRUE(ip("::1").is_v6());
  for (std::string_view bad : {"", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.256", "0x7f.0.0.1", "127.1", "1.2.3.4.",
                               "[::1]", "fe80::1%eth0", "::1::", "1:2:3:4:5:6:7:8:9", " 1.2.3.4", "1.2.3.-4"}) {
    EXPECT_FALSE(IpAddress::parse(bad).has_value()) << bad;
  }
}

TEST(CapabilityAddress, Ipv4SpecialPurposeRanges) {
  struct Row {
    std::string_view address, cls, prefix;
  };
  const Row rows[] = {
      {"0.0.0.0", "unspecified", "0.0.0.0/8"},
      {"0.255.255.255", "unspecified", "0.0.0.0/8"},
      {"10.0.0.0", "private", "10.0.0.0/8"},
      {"10.255.255.255", "private", "10.0.0.0/8"},
      {"100.64.0.0", "private", "100.64.0.0/10"},
      {"100.127.255.255", "private", "100.64.0.0/10"},
      {"127.0.0.0", "loopback", "127.0.0.0/8"},
      {"127.255.255.255", "loopback", "127.0.0.0/8"},
      {"169.254.0.0", "link_local", "169.254.0.0/16"},
      {"169.254.255.255", "link_local", "169.254.0.0/16"},
      {"172.16.0.0", "private", "172.16.0.0/12"},
      {"172.31.255.255", "private", "172.16.0.0/12"},
      {"192.0.0.0", "private", "192.0.0.0/29"},
      {"192.0.0.8", "private", "192.0.0.8/32"},
      {"192.0.0.9", "private", "192.0.0.0/24"},  // PCP anycast: refused with its /24 (stance)
      {"192.0.0.10", "private", "192.0.0.0/24"},
      {"192.0.0.171", "private", "192.0.0.170/31"},
      {"192.0.0.255", "private", "192.0.0.0/24"},
      {"192.0.2.0", "private", "192.0.2.0/24"},
      {"192.88.99.255", "private", "192.88.99.0/24"},
      {"192.168.0.0", "private", "192.168.0.0/16"},
      {"192.168.255.255", "private", "192.168.0.0/16"},
      {"198.18.0.0", "private", "198.18.0.0/15"},
      {"198.19.255.255", "private", "198.18.0.0/15"},
      {"198.51.100.7", "private", "198.51.100.0/24"},
      {"203.0.113.255", "private", "203.0.113.0/24"},
      {"224.0.0.0", "private", "224.0.0.0/4"},
      {"239.255.255.255", "private", "224.0.0.0/4"},
      {"240.0.0.0", "private", "240.0.0.0/4"},
      {"255.255.255.254", "private", "240.0.0.0/4"},
      {"255.255.255.255", "private", "255.255.255.255/32"},
      {"169.254.169.254", "metadata", "169.254.169.254/32"},
      {"169.254.170.2", "metadata", "169.254.170.2/32"},
      {"169.254.170.23", "metadata", "169.254.170.23/32"},
      {"100.100.100.200", "metadata", "100.100.100.200/32"},
      {"168.63.129.16", "metadata", "168.63.129.16/32"},
      {"192.0.0.192", "metadata", "192.0.0.192/32"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(std::string(row.address));
    EXPECT_EQ(class_of(row.address), row.cls);
    EXPECT_EQ(prefix_of(row.address), row.prefix);
    EXPECT_FALSE(classify(ip(row.address)).source.empty());
  }
  // Just outside, and the globally reachable special-purpose blocks.
  for (std::string_view global : {"1.0.0.0", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
                                  "126.255.255.255", "128.0.0.0", "169.253.255.255", "169.255.0.0", "172.15.255.255",
                                  "172.32.0.0", "192.0.1.0", "192.0.3.0", "192.31.196.1", "192.52.193.1",
                                  "192.88.98.255", "192.88.100.0", "192.167.255.255", "192.169.0.0", "192.175.48.1",
                                  "198.17.255.255", "198.20.0.0", "198.51.99.255", "203.0.112.255", "203.0.114.0",
                                  "223.255.255.255", "168.63.129.15", "168.63.129.17", "8.8.8.8"}) {
    EXPECT_EQ(class_of(global), "global") << global;
  }
}

TEST(CapabilityAddress, Ipv6SpecialPurposeRanges) {
  struct Row {
    std::string_view address, cls, prefix;
  };
  const Row rows[] = {
      {"::", "unspecified", "::/128"},
      {"::1", "loopback", "::1/128"},
      {"::2", "ipv6_special", "::/96"},
      {"::a9fe:a9fe", "ipv6_special", "::/96"},
      {"::ffff:0:0", "ipv6_special", "::ffff:0:0/96"},
      {"::ffff:8.8.8.8", "ipv6_special", "::ffff:0:0/96"},  // public IPv4 inside: still refused (stance)
      {"::ffff:0:7f00:1", "ipv6_special", "::ffff:0:0:0/96"},
      {"::1:0:0:1", "ipv6_special", "outside 2000::/3"},
      {"64:ff9b::8.8.8.8", "ipv6_special", "64:ff9b::/96"},
      {"64:ff9b:1::1", "ipv6_special", "64:ff9b:1::/48"},
      {"100::1", "ipv6_special", "100::/64"},
      {"100:0:0:1::1", "ipv6_special", "100:0:0:1::/64"},
      {"2001::1", "ipv6_special", "2001::/32"},
      {"2001:0:4136:e378:8000:63bf:3fff:fdd2", "ipv6_special", "2001::/32"},
      {"2001:2::1", "ipv6_special", "2001:2::/48"},
      {"2001:3::1", "ipv6_special", "2001::/23"},
      {"2001:4:112::1", "ipv6_special", "2001::/23"},
      {"2001:1ff:ffff::1", "ipv6_special", "2001::/23"},
      {"2001:db8::1", "ipv6_special", "2001:db8::/32"},
      {"2002::1", "ipv6_special", "2002::/16"},
      {"2002:808:808::1", "ipv6_special", "2002::/16"},
      {"3fff::1", "ipv6_special", "3fff::/20"},
      {"3fff:fff:ffff::1", "ipv6_special", "3fff::/20"},
      {"5f00::1", "ipv6_special", "5f00::/16"},
      {"4000::1", "ipv6_special", "outside 2000::/3"},
      {"1fff:ffff::1", "ipv6_special", "outside 2000::/3"},
      {"fc00::", "private", "fc00::/7"},
      {"fdff:ffff::1", "private", "fc00::/7"},
      {"fe80::1", "link_local", "fe80::/10"},
      {"febf:ffff::1", "link_local", "fe80::/10"},
      {"fec0::1", "ipv6_special", "fec0::/10"},
      {"ff02::1", "ipv6_special", "ff00::/8"},
      {"fd00:ec2::254", "metadata", "fd00:ec2::254/128"},
      {"fd00:ec2::23", "metadata", "fd00:ec2::23/128"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(std::string(row.address));
    EXPECT_EQ(class_of(row.address), row.cls);
    EXPECT_EQ(prefix_of(row.address), row.prefix);
  }
  for (std::string_view global : {"2001:200::1", "2001:4860:4860::8888", "2001:db7:ffff::1", "2001:db9::1",
                                  "2003::1", "2606:4700:4700::1111", "2620:4f:8000::1", "3ffe::1", "3fff:1000::1",
                                  "2620:fe::fe"}) {
    EXPECT_EQ(class_of(global), "global") << global;
  }
}

TEST(CapabilityAddress, EmbeddedIpv4ForExplanations) {
  auto embedded = [](std::string_view text) {
    auto v4 = embedded_ipv4(ip(text));
    return v4 ? v4->to_string() : std::string("none");
  };
  EXPECT_EQ(embedded("::ffff:127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(embedded("::ffff:0.0.0.0"), "0.0.0.0");
  EXPECT_EQ(embedded("::a9fe:a9fe"), "169.254.169.254");
  EXPECT_EQ(embedded("::ffff:0:7f00:1"), "127.0.0.1");
  EXPECT_EQ(embedded("64:ff9b::a00:1"), "10.0.0.1");
  EXPECT_EQ(embedded("2002:c0a8:101::1"), "192.168.1.1");
  EXPECT_EQ(embedded("2001:0:4136:e378:8000:63bf:80ff:fffe"), "127.0.0.1");  // Teredo client, inverted
  EXPECT_EQ(embedded("::1"), "none");
  EXPECT_EQ(embedded("::"), "none");
  EXPECT_EQ(embedded("2606:4700:4700::1111"), "none");
  EXPECT_EQ(embedded("10.0.0.1"), "none");
}

}  // namespace
}  // namespace taskyon::capability

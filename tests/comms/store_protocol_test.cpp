// The rendezvous store's wire encoding (comms/store_protocol.hpp): little-endian integers at
// their extremes, and key lists — round trips, and every malformed or oversized list refused.
#include "comms/store_protocol.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mixle::comms {
namespace {

std::string_view view(const std::vector<char>& bytes) { return {bytes.data(), bytes.size()}; }

TEST(StoreProtocol, IntegersAreLittleEndianAtEveryByte) {
  std::vector<char> out;
  wire::put_u32(out, 0x04030201u);
  EXPECT_EQ(out, (std::vector<char>{1, 2, 3, 4}));
  for (const std::uint32_t v : {0u, 1u, 0x80000000u, 0xFFFFFFFFu, 0x4D585354u}) {
    out.clear();
    wire::put_u32(out, v);
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(wire::get_u32(out.data()), v);
  }
  out.clear();
  wire::put_i64(out, 0x0807060504030201);
  EXPECT_EQ(out, (std::vector<char>{1, 2, 3, 4, 5, 6, 7, 8}));
  for (const std::int64_t v : {std::int64_t{0}, std::int64_t{-1}, std::numeric_limits<std::int64_t>::min(),
                               std::numeric_limits<std::int64_t>::max(), std::int64_t{-300}}) {
    out.clear();
    wire::put_i64(out, v);
    ASSERT_EQ(out.size(), 8u);
    EXPECT_EQ(wire::get_i64(out.data()), v);
  }
  EXPECT_EQ(wire::kRequestHeaderBytes, 17u);  // op u8, arg i64, key_len u32, value_len u32
  EXPECT_EQ(wire::kReplyHeaderBytes, 13u);    // status u8, arg i64, value_len u32
}

// The wire format docs/distributed.md documents: a build that changed one of these would not
// speak to a peer built before it.
TEST(StoreProtocol, TheConstantsAreTheDocumentedOnes) {
  EXPECT_EQ(wire::kHandshakeMagic, 0x4D585354u);  // "MXST"
  EXPECT_EQ(wire::kVersion, 1u);
  EXPECT_EQ(wire::kMaxTokenBytes, 1024u);
  EXPECT_EQ(wire::kMaxKeyBytes, 4096u);
  EXPECT_EQ(wire::kMaxValueBytes, 64u << 20);
  EXPECT_EQ(wire::kMaxWaitKeys, 65536u);
  EXPECT_EQ(wire::kAccepted, 0xA5);
  EXPECT_EQ(wire::kRefused, 0x5A);
  const std::pair<wire::Op, int> ops[] = {{wire::Op::set, 1},   {wire::Op::get, 2},  {wire::Op::add, 3},
                                          {wire::Op::check, 4}, {wire::Op::wait, 5}, {wire::Op::lost, 6},
                                          {wire::Op::bye, 7}};
  for (const auto& [op, code] : ops) EXPECT_EQ(static_cast<int>(op), code);
  const std::pair<wire::Status, int> statuses[] = {{wire::Status::ok, 0},
                                                   {wire::Status::not_found, 1},
                                                   {wire::Status::timed_out, 2},
                                                   {wire::Status::bad_request, 3}};
  for (const auto& [status, code] : statuses) EXPECT_EQ(static_cast<int>(status), code);
}

TEST(StoreProtocol, KeyListsRoundTrip) {
  const std::vector<std::vector<std::string>> lists = {
      {}, {""}, {"a"}, {"rank/0", "rank/1", ""}, {std::string(wire::kMaxKeyBytes, 'k'), "x"}};
  for (const auto& keys : lists) {
    const std::vector<char> bytes = wire::encode_keys(keys);
    std::size_t size = 4;
    for (const auto& k : keys) size += 4 + k.size();
    EXPECT_EQ(bytes.size(), size);
    std::vector<std::string> back{"left over"};
    ASSERT_TRUE(wire::decode_keys(view(bytes), back)) << keys.size() << " keys";
    EXPECT_EQ(back, keys);
  }
}

TEST(StoreProtocol, MalformedKeyListsAreRefused) {
  std::vector<std::string> keys;
  const std::vector<char> two = wire::encode_keys({"ab", "c"});
  for (std::size_t cut = 0; cut < two.size(); ++cut)  // every truncation, the count's too
    EXPECT_FALSE(wire::decode_keys(std::string_view(two.data(), cut), keys)) << cut << " bytes";
  std::vector<char> longer = two;
  longer.push_back('x');  // a byte past the last key
  EXPECT_FALSE(wire::decode_keys(view(longer), keys));
  // A key of kMaxKeyBytes is read; one byte more is refused before it is copied.
  std::vector<char> big;
  wire::put_u32(big, 1);
  wire::put_u32(big, wire::kMaxKeyBytes + 1);
  big.resize(big.size() + wire::kMaxKeyBytes + 1, 'k');
  EXPECT_FALSE(wire::decode_keys(view(big), keys));
  // At most kMaxWaitKeys keys: that many empty ones are read, one more is refused.
  std::vector<char> many;
  wire::put_u32(many, wire::kMaxWaitKeys);
  many.resize(4 + 4 * std::size_t{wire::kMaxWaitKeys}, 0);
  ASSERT_TRUE(wire::decode_keys(view(many), keys));
  EXPECT_EQ(keys.size(), wire::kMaxWaitKeys);
  many.clear();
  wire::put_u32(many, wire::kMaxWaitKeys + 1);
  many.resize(4 + 4 * (std::size_t{wire::kMaxWaitKeys} + 1), 0);
  EXPECT_FALSE(wire::decode_keys(view(many), keys));
}

}  // namespace
}  // namespace mixle::comms

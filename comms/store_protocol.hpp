// Wire format of the rendezvous store (internal to comms/; documented in docs/distributed.md).
//
// All integers are little-endian. A connection starts with a handshake:
//   client → server: magic u32 kHandshakeMagic, version u32, token_len u32 (≤ kMaxTokenBytes),
//                    token bytes, rank i32 (−1 for a client that is not a rank)
//   server → client: status u8 (kAccepted or kRefused); on kRefused the server closes.
// Then requests, each answered by one reply, in the order they were sent (a client may send
// requests before reading the replies to earlier ones — except during a wait, when a client
// that sends anything is dropped):
//   request: op u8, arg i64, key_len u32 (≤ kMaxKeyBytes), value_len u32 (≤ kMaxValueBytes),
//            key bytes, value bytes
//   reply:   status u8, arg i64, value_len u32, value bytes
// A length field above its bound, an unknown op or a short read closes that connection only,
// before anything of the announced size is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace mixle::comms::wire {

inline constexpr std::uint32_t kHandshakeMagic = 0x4D585354;  // "MXST"
inline constexpr std::uint32_t kVersion = 1;
inline constexpr std::uint32_t kMaxTokenBytes = 1024;
inline constexpr std::uint32_t kMaxKeyBytes = 4096;         // 4 KiB
inline constexpr std::uint32_t kMaxValueBytes = 64u << 20;  // 64 MiB
inline constexpr std::uint32_t kMaxWaitKeys = 65536;

inline constexpr std::uint8_t kAccepted = 0xA5;
inline constexpr std::uint8_t kRefused = 0x5A;

enum class Op : std::uint8_t {
  set = 1,    // key, value → ok
  get = 2,    // key → ok + value, or not_found
  add = 3,    // key, arg = delta → ok, arg = new value (stored as decimal text)
  check = 4,  // value = key list → ok, arg = 1 when every key exists else 0
  wait = 5,   // value = key list, arg = timeout in ms → ok when all exist, or timed_out
  lost = 6,   // → ok, value = i32 list of ranks whose connection closed without goodbye
  bye = 7,    // → ok; the connection then closes and its rank is not reported lost
};

enum class Status : std::uint8_t { ok = 0, not_found = 1, timed_out = 2, bad_request = 3 };

inline constexpr std::size_t kRequestHeaderBytes = 1 + 8 + 4 + 4;
inline constexpr std::size_t kReplyHeaderBytes = 1 + 8 + 4;

inline void put_u32(std::vector<char>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
inline void put_i64(std::vector<char>& out, std::int64_t v) {
  auto u = static_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xFF));
}
inline std::uint32_t get_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
inline std::int64_t get_i64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return static_cast<std::int64_t>(v);
}

/// Encodes a key list as count u32, then (len u32, bytes) per key.
inline std::vector<char> encode_keys(const std::vector<std::string>& keys) {
  std::vector<char> out;
  put_u32(out, static_cast<std::uint32_t>(keys.size()));
  for (const auto& k : keys) {
    put_u32(out, static_cast<std::uint32_t>(k.size()));
    out.insert(out.end(), k.begin(), k.end());
  }
  return out;
}

/// Decodes a key list; false when it is malformed or breaks a bound.
inline bool decode_keys(std::string_view in, std::vector<std::string>& keys) {
  if (in.size() < 4) return false;
  std::uint32_t count = get_u32(in.data());
  if (count > kMaxWaitKeys) return false;
  std::size_t pos = 4;
  keys.clear();
  for (std::uint32_t i = 0; i < count; ++i) {
    if (in.size() - pos < 4) return false;
    std::uint32_t len = get_u32(in.data() + pos);
    pos += 4;
    if (len > kMaxKeyBytes || in.size() - pos < len) return false;
    keys.emplace_back(in.substr(pos, len));
    pos += len;
  }
  return pos == in.size();
}

}  // namespace mixle::comms::wire

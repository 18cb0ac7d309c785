// Byte counts for people: "512 B", "1.5 GiB".
#pragma once

#include <cstdint>
#include <string>

namespace mixle::host {

/// `bytes` in B, KiB, MiB, GiB, TiB or PiB, one decimal above bytes ("0 B", "16.0 MiB").
std::string bytes_text(std::uint64_t bytes);

}  // namespace mixle::host

#include "host/bytes_text.hpp"

#include <iomanip>
#include <sstream>

namespace mixle::host {

std::string bytes_text(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  std::ostringstream out;
  if (u == 0)
    out << bytes << " B";
  else
    out << std::fixed << std::setprecision(1) << v << " " << units[u];
  return out.str();
}

}  // namespace mixle::host

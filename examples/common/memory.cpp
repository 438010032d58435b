#include "examples/common/memory.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "tensor/error.h"

namespace qkv::examples {

int64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

std::string format_bytes(double bytes) {
  char text[32];
  if (bytes >= 1024.0 * 1024 * 1024)
    std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  else
    std::snprintf(text, sizeof text, "%.0f MiB", bytes / (1024.0 * 1024));
  return text;
}

void check_fits(const std::string& program, double needed, const std::string& what, const std::string& options) {
  const int64_t available = available_memory_bytes();
  if (available > 0 && needed > static_cast<double>(available))
    throw ValueError(program + ": training this model would take about " + format_bytes(needed) + " (" + what +
                     "), more than the " + format_bytes(static_cast<double>(available)) +
                     " this machine has available: lower " + options);
}

}  // namespace qkv::examples

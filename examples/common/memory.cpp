#include "examples/common/memory.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "tensor/error.h"

namespace qkv::examples {

int64_t available_memory_bytes() {
  int64_t available = 0;
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") available = kib * 1024;
  }
  // A limit on the process (ulimit -v, -d) is less memory than the machine's.
  for (const int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    rlimit limit{};
    if (getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      const int64_t most = static_cast<int64_t>(std::min<rlim_t>(limit.rlim_cur, INT64_MAX));
      available = available == 0 ? most : std::min(available, most);
    }
  }
  return available;
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

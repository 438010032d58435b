#include "examples/common/config_fields.h"

#include <cmath>
#include <sstream>

namespace qkv::examples {

std::string option_of(const std::string& key) {
  std::string option = key;
  std::replace(option.begin(), option.end(), '_', '-');
  return key + " (--" + option + ")";
}

void check_int(const std::string& key, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi)
    throw ValueError(option_of(key) + " is " + std::to_string(value) + "; expected " + std::to_string(lo) + " .. " +
                     std::to_string(hi));
}

void check_number(const std::string& key, double value, double lo, double hi, bool open_lo) {
  if (!std::isfinite(value) || value < lo || value > hi || (open_lo && value == lo)) {
    std::ostringstream s;
    s << option_of(key) << " is " << value << "; expected a number in " << (open_lo ? "(" : "[") << lo << ", " << hi
      << "]";
    throw ValueError(s.str());
  }
}

void check_name(const std::string& key, const std::string& value, const std::vector<std::string>& known) {
  if (std::find(known.begin(), known.end(), value) != known.end()) return;
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  throw ValueError(option_of(key) + " is '" + value + "'; expected one of " + list);
}

}  // namespace qkv::examples

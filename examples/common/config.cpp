#include "examples/common/config.h"

#include <cmath>
#include <sstream>

namespace qkv::examples {

std::string Field::option_name() const {
  if (!option.empty()) return option;
  std::string name = key;
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

std::string option_of(const std::string& key) {
  return key + " (--" + Field{key, "", ""}.option_name() + ")";
}

void check_int(const std::string& key, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi)
    throw ValueError(option_of(key) + " is " + std::to_string(value) + "; expected " + std::to_string(lo) +
                     " .. " + std::to_string(hi));
}

void check_number(const std::string& key, double value, double lo, double hi, bool open_lo) {
  if (!std::isfinite(value) || value < lo || value > hi || (open_lo && value == lo)) {
    std::ostringstream s;
    s << option_of(key) << " is " << value << "; expected a number in " << (open_lo ? "(" : "[") << lo << ", "
      << hi << "]";
    throw ValueError(s.str());
  }
}

void check_name(const std::string& key, const std::string& value, const std::vector<std::string>& known) {
  if (std::find(known.begin(), known.end(), value) != known.end()) return;
  throw ValueError(option_of(key) + " is '" + value + "'; expected one of " + join(known, ", "));
}

std::string differences(const io::Json& a, const io::Json& b, const std::string& a_name,
                        const std::string& b_name) {
  std::string diff;
  for (const auto& [key, value] : a.as_object()) {
    const io::Json* other = b.find(key);
    if (other && *other == value) continue;
    diff += (diff.empty() ? "" : "; ") + key + ": " + io::to_json(value) + " in " + a_name + ", " +
            (other ? io::to_json(*other) : std::string("nothing")) + " in " + b_name;
  }
  for (const auto& [key, value] : b.as_object())
    if (!a.find(key))
      diff += (diff.empty() ? "" : "; ") + key + ": nothing in " + a_name + ", " + io::to_json(value) +
              " in " + b_name;
  return diff;
}

}  // namespace qkv::examples

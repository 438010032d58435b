#include "gradcheck_registry.h"

namespace qkv::testing {

std::vector<GradcheckEntry>& gradcheck_registry() {
  static std::vector<GradcheckEntry> entries;
  return entries;
}

}  // namespace qkv::testing

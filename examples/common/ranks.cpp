#include "examples/common/ranks.h"

#include <iostream>
#include <optional>

#include "tensor/error.h"

namespace qkv::examples {
namespace {
std::optional<dist::World> the_world;
}

dist::World& world() {
  if (!the_world) throw StateError("examples::world(): start_world was not called");
  return *the_world;
}

bool world_started() { return the_world.has_value(); }

bool start_world(int& argc, char**& argv, const std::string& program) {
  try {
    the_world.emplace(argc, argv);
    return true;
  } catch (const std::exception& e) {
    fail(program, e.what());
    return false;
  }
}

int fail(const std::string& program, const std::string& what, bool every_rank) {
  const bool many = the_world && the_world->size() > 1;
  // One write of the whole line, so that the ranks' lines do not interleave.
  const std::string line = (what.starts_with(program) ? "" : program + ": ") +
                           (many ? "(rank " + std::to_string(the_world->rank()) + " of " +
                                       std::to_string(the_world->size()) + ") "
                                 : "") +
                           what + "\n";
  std::cerr << line << std::flush;
  if (many && !every_rank) the_world->group().abort(1);
  return 1;
}

GeneratorState keyed_stream(uint64_t seed, uint64_t stream, int64_t step) {
  uint64_t key = seed ^ (0x9e3779b97f4a7c15ULL * (stream + 1));  // the golden ratio's bits spread the streams
  key ^= key >> 31;
  return {key, static_cast<uint64_t>(step) << 32};
}

}  // namespace qkv::examples

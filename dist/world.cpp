#include "dist/world.h"

#include <cstdlib>

#include "dist/mpi_group.h"

namespace qkv::dist {

bool World::launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

World::World(int& argc, char**& argv) {
  if (launched_by_mpirun()) {
    mpi_initialize(argc, argv);  // throws, naming what to install, in a build without MPI
    mpi_ = true;
    group_ = std::make_unique<MpiGroup>();
  } else {
    group_ = std::make_unique<LocalGroup>();
  }
}

World::~World() {
  group_.reset();
  if (mpi_) mpi_finalize();
}

}  // namespace qkv::dist

// The process group a program runs in, chosen by how it was started:
//
//   build/examples/tagger train ...                 a group of one (LocalGroup)
//   mpirun -np 2 build/examples/tagger train ...    the MPI job's two processes (MpiGroup)
//
// Make one World at the start of main and keep it until the end: it initializes MPI when the
// program was started by mpirun (Open MPI's launcher sets OMPI_COMM_WORLD_SIZE in each process's
// environment) and finalizes it when destroyed. A plain run never touches MPI, so it starts as fast
// as before and needs no MPI at run time.
#pragma once

#include <memory>

#include "dist/process_group.h"

namespace qkv::dist {

class World {
 public:
  World(int& argc, char**& argv);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  ProcessGroup& group() { return *group_; }
  int rank() const { return group_->rank(); }
  int size() const { return group_->size(); }
  // Rank 0, the one that prints, writes files and draws figures.
  bool is_root() const { return group_->rank() == 0; }

  // Whether this process was started by mpirun (or another launcher that sets Open MPI's or PMIx's
  // rank variables).
  static bool launched_by_mpirun();

 private:
  std::unique_ptr<ProcessGroup> group_;
  bool mpi_ = false;
};

}  // namespace qkv::dist

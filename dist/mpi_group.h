// The MPI backend of ProcessGroup: the processes of an MPI job, MPI_COMM_WORLD, with Open MPI's
// collectives (MPI_Allreduce, MPI_Bcast, MPI_Allgather, MPI_Barrier, MPI_Iallreduce). Built when
// CMake finds MPI; dist::World makes it when the program was started by mpirun.
//
// Errors are returned, not fatal (MPI_ERRORS_RETURN), and thrown as qkv::Error naming the
// collective. A rank that throws must not leave the others waiting in a collective: the programs
// end the job with abort() (MPI_Abort) when a rank fails.
#pragma once

#include "dist/process_group.h"

namespace qkv::dist {

class MpiGroup final : public ProcessGroup {
 public:
  MpiGroup();  // MPI must be initialized (dist::World does it)
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  void barrier() override;
  std::unique_ptr<Work> all_reduce_sum_async(std::span<float> x) override;
  [[noreturn]] void abort(int code) override;

 protected:
  void all_reduce_sum_raw(void* x, int64_t n, DType type) override;
  void broadcast_raw(void* x, int64_t n, DType type, int root) override;
  void all_gather_raw(const void* mine, void* all, int64_t n, DType type) override;
  std::unique_ptr<Work> all_gather_async_raw(const float* mine, float* all, int64_t n) override;

 private:
  int rank_ = 0;
  int size_ = 1;
};

// MPI_Init_thread (MPI_THREAD_FUNNELED: only the thread that calls backward talks to MPI; OpenMP's
// threads never do) and MPI_Finalize, for dist::World.
void mpi_initialize(int& argc, char**& argv);
void mpi_finalize();

}  // namespace qkv::dist

// dist/mpi_group.h for a build without MPI: World never makes an MpiGroup, and says why when a
// program is started by mpirun.
#include "dist/mpi_group.h"

#include <cstdlib>

#include "tensor/error.h"

namespace qkv::dist {
namespace {
[[noreturn]] void missing() {
  throw Error("dist: this build of qkv has no MPI backend. Install Open MPI (Debian: openmpi-bin libopenmpi-dev, "
              "or ./qkv setup --mpi) and build again");
}
}  // namespace

MpiGroup::MpiGroup() { missing(); }
void MpiGroup::barrier() { missing(); }
std::unique_ptr<Work> MpiGroup::all_reduce_sum_async(std::span<float>) { missing(); }
void MpiGroup::abort(int code) { std::exit(code); }
void MpiGroup::all_reduce_sum_raw(void*, int64_t, DType) { missing(); }
void MpiGroup::broadcast_raw(void*, int64_t, DType, int) { missing(); }
void MpiGroup::all_gather_raw(const void*, void*, int64_t, DType) { missing(); }
std::unique_ptr<Work> MpiGroup::all_gather_async_raw(const float*, float*, int64_t) { missing(); }
void mpi_initialize(int&, char**&) { missing(); }
void mpi_finalize() {}

}  // namespace qkv::dist

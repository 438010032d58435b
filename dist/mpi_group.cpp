#include "dist/mpi_group.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "tensor/error.h"

namespace qkv::dist {
namespace {

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(std::string("dist (MPI): ") + call + " failed: " + std::string(text, static_cast<size_t>(length)));
}

MPI_Datatype mpi_type(DType type) {
  switch (type) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    case DType::Int64: return MPI_INT64_T;
    case DType::UInt64: return MPI_UINT64_T;
  }
  throw ValueError("dist (MPI): unknown element type");
}

// MPI counts are ints.
int count_of(int64_t n, const char* call) {
  if (n < 0 || n > INT_MAX)
    throw ValueError(std::string("dist (MPI): ") + call + " of " + std::to_string(n) +
                     " elements; MPI takes at most " + std::to_string(INT_MAX) + " at once");
  return static_cast<int>(n);
}

class MpiWork final : public Work {
 public:
  explicit MpiWork(const char* call) : call_(call) {}
  MPI_Request* request() { return &request_; }
  void wait() override {
    if (done_) return;
    done_ = true;  // finished or failed: either way never waited for again
    check(MPI_Wait(&request_, MPI_STATUS_IGNORE), call_);
  }
  bool test() override {
    if (done_) return true;
    int flag = 0;
    const int code = MPI_Test(&request_, &flag, MPI_STATUS_IGNORE);
    done_ = flag != 0 || code != MPI_SUCCESS;
    check(code, call_);
    return done_;
  }
  ~MpiWork() override {
    // A collective cannot be cancelled: one dropped unfinished is waited for, so that its buffer
    // outlives it; one that failed is not (waiting on it could hang).
    if (!done_) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }

 private:
  const char* call_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool done_ = false;
};

}  // namespace

MpiGroup::MpiGroup() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw StateError("dist::MpiGroup: MPI is not initialized (create a dist::World first)");
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

void MpiGroup::barrier() { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

void MpiGroup::all_reduce_sum_raw(void* x, int64_t n, DType type) {
  check(MPI_Allreduce(MPI_IN_PLACE, x, count_of(n, "MPI_Allreduce"), mpi_type(type), MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
}

void MpiGroup::broadcast_raw(void* x, int64_t n, DType type, int root) {
  check(MPI_Bcast(x, count_of(n, "MPI_Bcast"), mpi_type(type), root, MPI_COMM_WORLD), "MPI_Bcast");
}

void MpiGroup::all_gather_raw(const void* mine, void* all, int64_t n, DType type) {
  const int count = count_of(n, "MPI_Allgather");
  check(MPI_Allgather(mine, count, mpi_type(type), all, count, mpi_type(type), MPI_COMM_WORLD), "MPI_Allgather");
}

std::unique_ptr<Work> MpiGroup::all_reduce_sum_async(std::span<float> x) {
  auto work = std::make_unique<MpiWork>("MPI_Iallreduce");
  check(MPI_Iallreduce(MPI_IN_PLACE, x.data(), count_of(static_cast<int64_t>(x.size()), "MPI_Iallreduce"), MPI_FLOAT,
                       MPI_SUM, MPI_COMM_WORLD, work->request()),
        "MPI_Iallreduce");
  return work;
}

std::unique_ptr<Work> MpiGroup::all_gather_async_raw(const float* mine, float* all, int64_t n) {
  auto work = std::make_unique<MpiWork>("MPI_Iallgather");
  const int count = count_of(n, "MPI_Iallgather");
  check(MPI_Iallgather(mine, count, MPI_FLOAT, all, count, MPI_FLOAT, MPI_COMM_WORLD, work->request()),
        "MPI_Iallgather");
  return work;
}

void MpiGroup::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this only tells the compiler so
}

void mpi_initialize(int& argc, char**& argv) {
  int provided = 0;
  check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    throw Error("dist (MPI): the MPI library does not allow threads (MPI_THREAD_FUNNELED), which qkv's OpenMP "
                "kernels need beside it");
  }
}

void mpi_finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace qkv::dist

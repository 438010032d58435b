// A process group: the ranks that train one model together, and the collectives they call.
//
//   rank()  this process's number, 0 … size()-1        size()  how many processes
//   all_reduce_sum(x)   every rank's x becomes the elementwise sum of all ranks' x
//   broadcast(x, root)  every rank's x becomes root's x
//   all_gather(mine, all)   all = the ranks' `mine`, one after the other in rank order
//   barrier()           returns once every rank has called it
//
// Every rank must call the same collectives, in the same order, with buffers of the same length
// (a broadcast's or all-reduce's); a rank that calls a different one, or none, makes the others
// wait forever. The asynchronous all-reduce starts the reduction and returns a Work to wait on:
// the data-parallel reducer (dist/reducer.h) starts one per bucket of gradients while backward is
// still computing the next.
//
// Two backends, so that one program runs with and without mpirun:
//   LocalGroup  a group of one (every collective leaves the data as it is), for a plain run;
//   MpiGroup    the processes of an MPI job (Open MPI), dist/mpi_group.h: qkv writes no transport.
// dist::World (dist/world.h) picks the one that applies.
//
// Reduction order. MPI promises that every rank gets the same sum, not which order the library
// adds the ranks' values in: it picks an algorithm (and so an order of float additions) by message
// size and group size. all_reduce_sum_fixed_order is the plain reduction beside it: gather every
// rank's values and add them in rank order, the same order at every size and on every library
// (at the price of size() times the memory and traffic, measured in docs/distributed.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace qkv::dist {

// A collective started and not yet finished. wait() blocks until it is (and must be called before
// its buffers are read or freed); test() lets the library progress it and says whether it is done.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  virtual bool test() = 0;
};

enum class DType { Float32, Float64, Int64, UInt64 };

template <class T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::UInt64; }

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "local" or "mpi": for messages and logs.
  virtual std::string backend() const = 0;

  template <class T>
  void all_reduce_sum(std::span<T> x) {
    all_reduce_sum_raw(x.data(), static_cast<int64_t>(x.size()), dtype_of<T>());
  }
  template <class T>
  void broadcast(std::span<T> x, int root) {
    check_root(root, "broadcast");
    broadcast_raw(x.data(), static_cast<int64_t>(x.size()), dtype_of<T>(), root);
  }
  // all.size() must be size() · mine.size().
  template <class T>
  void all_gather(std::span<const T> mine, std::span<T> all) {
    check_gather(mine.size(), all.size());
    all_gather_raw(mine.data(), all.data(), static_cast<int64_t>(mine.size()), dtype_of<T>());
  }
  virtual void barrier() = 0;

  // Starts summing x over the ranks; x must stay alive and untouched until the Work is waited on.
  virtual std::unique_ptr<Work> all_reduce_sum_async(std::span<float> x) = 0;
  // The same sum added in rank order: x = x₀ + x₁ + … + x_{size-1}, left to right, on every rank.
  // The plain reduction (see above); scratch holds size() · x.size() floats while it runs.
  std::unique_ptr<Work> all_reduce_sum_fixed_order_async(std::span<float> x);
  void all_reduce_sum_fixed_order(std::span<float> x) { all_reduce_sum_fixed_order_async(x)->wait(); }

  // Ends every process of the group now, with `code`: what a rank does when it cannot go on and
  // the others may be waiting for it in a collective. A group of one exits.
  [[noreturn]] virtual void abort(int code) = 0;

 protected:
  ProcessGroup() = default;
  virtual void all_reduce_sum_raw(void* x, int64_t n, DType type) = 0;
  virtual void broadcast_raw(void* x, int64_t n, DType type, int root) = 0;
  virtual void all_gather_raw(const void* mine, void* all, int64_t n, DType type) = 0;
  virtual std::unique_ptr<Work> all_gather_async_raw(const float* mine, float* all, int64_t n) = 0;

 private:
  void check_root(int root, const char* op) const;
  void check_gather(size_t mine, size_t all) const;
};

// A group of one process: rank 0 of 1. Collectives copy or do nothing; nothing waits.
class LocalGroup final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "local"; }
  void barrier() override {}
  std::unique_ptr<Work> all_reduce_sum_async(std::span<float> x) override;
  [[noreturn]] void abort(int code) override;

 protected:
  void all_reduce_sum_raw(void*, int64_t, DType) override {}
  void broadcast_raw(void*, int64_t, DType, int) override {}
  void all_gather_raw(const void* mine, void* all, int64_t n, DType type) override;
  std::unique_ptr<Work> all_gather_async_raw(const float* mine, float* all, int64_t n) override;
};

// Bytes of one element of `type`.
size_t dtype_size(DType type);

}  // namespace qkv::dist

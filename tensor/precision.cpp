#include "tensor/precision.h"

#include <atomic>
#include <string>

#include "tensor/error.h"

namespace qkv {
namespace {

std::atomic<MatmulPrecision> g_precision{MatmulPrecision::highest};

}  // namespace

void set_matmul_precision(MatmulPrecision precision) {
  if (precision != MatmulPrecision::highest && precision != MatmulPrecision::medium)
    throw ValueError("set_matmul_precision: " + std::to_string(static_cast<int>(precision)) +
                     " is not a MatmulPrecision (highest or medium)");
  if (precision == MatmulPrecision::medium && !bf16_matmul_available())
    throw ValueError(
        "set_matmul_precision(medium): this build has no bfloat16 kernel; it needs a CPU with AVX512_BF16 "
        "and a build for it (QKV_NATIVE=ON, the default, on that CPU)");
  g_precision.store(precision, std::memory_order_relaxed);
}

MatmulPrecision get_matmul_precision() { return g_precision.load(std::memory_order_relaxed); }

}  // namespace qkv

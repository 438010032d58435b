// How float32 matrix products are computed, after PyTorch's torch.set_float32_matmul_precision.
//
//   highest  float32 operands, float32 accumulation: the default, and what every test of an op
//            against PyTorch assumes.
//   medium   each operand rounded to bfloat16 (float32's 8 exponent bits, 8 significant bits:
//            relative error up to 2⁻⁸) and the products summed in float32. On a CPU with
//            AVX512_BF16 one instruction does 32 multiply-adds of bfloat16 pairs where a float32
//            FMA does 16, so large products run up to twice as fast (docs/PERFORMANCE.md).
//
// The setting applies to the products the GEMM kernel computes (Linear, matmul, attention, the
// GRU's gates), on every thread, from the next call on; products of fewer than
// kernels::kMinBf16Product multiply-adds stay in float32, where bfloat16 would be slower. Tensors stay
// float32: only the inputs of the multiplications are rounded. Mixed-precision training in this sense keeps
// its accuracy because the sums, the optimizer and everything around the products stay in float32.
#pragma once

namespace qkv {

enum class MatmulPrecision { highest, medium };

// Whether this build can compute medium products: built for a CPU with AVX512_BF16
// (-march=native on, for example, AMD Zen 4 or Intel Sapphire Rapids).
bool bf16_matmul_available();

// ValueError for medium when bf16_matmul_available() is false, and for a value that is not one of
// the enum's (a cast integer).
void set_matmul_precision(MatmulPrecision precision);
MatmulPrecision get_matmul_precision();

// Sets the precision for its scope and puts back the one before it.
class MatmulPrecisionGuard {
 public:
  explicit MatmulPrecisionGuard(MatmulPrecision precision) : before_(get_matmul_precision()) {
    set_matmul_precision(precision);
  }
  ~MatmulPrecisionGuard() { set_matmul_precision(before_); }
  MatmulPrecisionGuard(const MatmulPrecisionGuard&) = delete;
  MatmulPrecisionGuard& operator=(const MatmulPrecisionGuard&) = delete;

 private:
  MatmulPrecision before_;
};

}  // namespace qkv

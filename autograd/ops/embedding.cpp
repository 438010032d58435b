// embedding (autograd/ops/embedding.h) and embedding_reference, its composed reference: a row
// lookup whose backward adds each output row's gradient into the row it was read from, skipping
// padding_idx, whose vector must stay as it is. The op reads the rows in parallel and writes the
// weight's gradient column by column; the reference is index_select.
#include "autograd/ops/embedding.h"

#include <algorithm>
#include <string>

#include "autograd/function.h"
#include "autograd/ops/adjoint.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/kernels/parallel.h"
#include "tensor/reference_mode.h"

namespace qkv {

Tensor embedding_reference(const IndexTensor& ids, const Tensor& weight, std::optional<int64_t> padding_idx) {
  const int64_t N = ids.numel(), V = weight.size(0);
  const int64_t pad = !padding_idx ? -1 : *padding_idx < 0 ? *padding_idx + V : *padding_idx;
  // The ids are copied, as the op copies them: a caller may refill its id buffer before backward.
  Tensor rows = weight.index_select(0, ids.clone().reshape({N}));  // (N, D)
  if (padding_idx) {  // where a row is the padding row, its value detached: no gradient goes back
    std::vector<float> is_pad(static_cast<size_t>(N));
    for (int64_t j = 0; j < N; ++j) is_pad[static_cast<size_t>(j)] = ids.data()[j] == pad ? 1.0f : 0.0f;
    rows = where(tensor(is_pad, {N, 1}), rows.detach(), rows);
  }
  Shape out_shape = ids.shape();
  out_shape.push_back(weight.size(1));
  return rows.reshape(out_shape);
}

// ids (...) → (..., D), weight (V, D)
Tensor embedding(const IndexTensor& ids, const Tensor& weight, std::optional<int64_t> padding_idx) {
  if (weight.dim() != 2)
    throw ShapeError("embedding: weight must be 2-d (num_embeddings, embedding_dim), got shape " +
                     shape_str(weight.shape()));
  const int64_t V = weight.size(0), D = weight.size(1), N = ids.numel();
  if (padding_idx) {
    if (*padding_idx < -V || *padding_idx >= V)
      throw IndexError("embedding: padding_idx " + std::to_string(*padding_idx) +
                       " is out of range for a vocabulary of " + std::to_string(V));
    if (*padding_idx < 0) *padding_idx += V;
  }
  const int64_t* id = ids.data();
  for (int64_t j = 0; j < N; ++j)
    if (id[j] < 0 || id[j] >= V)
      throw IndexError("embedding: id " + std::to_string(id[j]) + " is out of range for a vocabulary of " +
                       std::to_string(V) + " (ids must be in [0, " + std::to_string(V) + "))");
  if (reference_mode()) return embedding_reference(ids, weight, padding_idx);
  const autograd::Op op("embedding");
  Shape out_shape = ids.shape();
  out_shape.push_back(D);
  const Tensor w = weight.detach().contiguous();
  Tensor out = Tensor::empty(out_shape);
  kernels::parallel_for(N, N * D, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) std::copy(w.data() + id[j] * D, w.data() + (id[j] + 1) * D, out.data() + j * D);
  });
  // The ids are copied: a caller may refill its id buffer with the next batch before backward.
  const IndexTensor kept = ids.clone();
  return op.record(out, {weight}, {},
      [ids = kept, pad = padding_idx.value_or(-1), V, D, N](const Tensor& g, const autograd::BackwardContext&)
          -> std::vector<Tensor> {
        // In the forward pass this was out[j] = weight[ids[j]], so dweight[ids[j]] += dout[j].
        // A row read several times sums its gradients in j order; threads split the columns, so
        // the order (and the result) does not depend on the thread count.
        Tensor dw = zeros({V, D});
        const Tensor gc = g.contiguous();
        const int64_t* ix = ids.data();
        kernels::parallel_for(D, N * D, [&](int64_t c0, int64_t c1) {
          for (int64_t j = 0; j < N; ++j) {
            if (ix[j] == pad) continue;
            float* dst = dw.data() + ix[j] * D;
            const float* src = gc.data() + j * D;
            for (int64_t c = c0; c < c1; ++c) dst[c] += src[c];
          }
        });
        return {dw};
      },
      [ids = kept, pad = padding_idx.value_or(-1), V, D, N](const Tensor& g, const autograd::BackwardContext&)
          -> std::vector<Tensor> {
        // dweight = index_add of g's rows at the ids, the padding row's left out.
        const IndexTensor flat = ids.reshape({N});
        Tensor rows = g.reshape({N, D});
        if (pad >= 0) {
          std::vector<float> is_pad(static_cast<size_t>(N));
          for (int64_t j = 0; j < N; ++j) is_pad[static_cast<size_t>(j)] = flat[j] == pad ? 1.0f : 0.0f;
          rows = rows.masked_fill(tensor(is_pad, {N, 1}), 0.0f);
        }
        return {index_add({V, D}, 0, flat, rows)};
      });
}

}  // namespace qkv

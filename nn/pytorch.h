// PyTorch state_dicts by name: the conversion between a PyTorch module's state_dict and the qkv
// module that computes the same function. docs/pytorch.md has the table, layer by layer.
//
// Most layers need none: Linear, Embedding, LayerNorm, GRUCell, GRU and Conv1d name and shape
// their tensors as torch.nn does (Conv1d differs in its input layout only). Two differ:
//   MultiHeadAttention       torch.nn.MultiheadAttention packs the query, key and value weights
//                            into in_proj_weight (3D, D) and in_proj_bias (3D), rows in the order
//                            q, k, v (q_proj_weight, k_proj_weight, v_proj_weight when kdim or
//                            vdim differ from D); out_proj is qkv's W_o.
//   TransformerEncoderBlock  torch.nn.TransformerEncoderLayer names its parts self_attn, linear1,
//                            linear2, norm1, norm2; qkv's are attention, ffn.dense1, ffn.dense2,
//                            and addnorm1.ln, addnorm2.ln (post-norm) or norm1, norm2 (pre-norm).
//   TransformerDecoderBlock  torch.nn.TransformerDecoderLayer's self_attn, multihead_attn, linear1,
//                            linear2, norm1..3 are qkv's attention1, attention2, ffn.dense1,
//                            ffn.dense2, and addnorm1..3.ln (post-norm) or norm1..3 (pre-norm).
//   TransformerEncoder,      torch.nn.TransformerEncoder's and TransformerDecoder's layers.{i} are
//   TransformerDecoder       qkv's blocks.{i}; qkv's also hold the embedding, the position scheme and
//                            (the decoder) the output layer, which PyTorch's leave to the caller
//                            (load those with strict = false, or separately). torch.nn.Transformer's
//                            encoder.* and decoder.* are qkv's Transformer's.
// These functions walk the qkv module's tree and convert the entries under every such layer,
// wherever it sits; every other entry passes through unchanged. So, for a PyTorch model whose
// layers mirror a qkv model's:
//
//   model.load_state_dict(nn::from_torch_state_dict(model, io::read_safetensors("torch.safetensors")));
//   io::save_safetensors("for_torch.safetensors", nn::to_torch_state_dict(model));
//
// from_torch_state_dict throws ValueError naming the key when a packed tensor cannot be split in
// three, and naming both keys when two entries would become one (in_proj_weight beside
// q_proj_weight, out_proj beside W_o, layers.0 beside blocks.0): the input mixes two models' names,
// and neither may silently win. Whether the result fits the model is for load_state_dict to
// check, which lists every missing, unexpected and mis-shaped key.
#pragma once

#include "nn/module.h"

namespace qkv::nn {

// torch_state's entries under qkv's names for `model`. Tensors are shared or sliced, not copied.
StateDict from_torch_state_dict(const Module& model, const StateDict& torch_state);

// model.state_dict() under PyTorch's names; packed tensors are new, the others are the model's own.
StateDict to_torch_state_dict(const Module& model);

}  // namespace qkv::nn

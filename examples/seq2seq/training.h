// Training and evaluating the date translator: batches with teacher forcing, one optimizer step,
// greedy translation of whole splits, the scores, and checkpoints that rebuild the model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "examples/seq2seq/dates.h"
#include "examples/seq2seq/model.h"
#include "optim/optimizer.h"

namespace seq2seq {

// A pair as ids, both ending in <eos>.
struct Example {
  std::vector<int64_t> source, target;
};

std::vector<Example> encode_pairs(const std::vector<DatePair>& pairs, const qkv::data::Vocab& src_vocab,
                                  const qkv::data::Vocab& tgt_vocab);

// One training batch, d2l's (X, X_valid_len, Y, Y_valid_len) plus the decoder's input:
struct Batch {
  IndexTensor source, source_valid_lens;  // (B, T), (B)
  IndexTensor dec_input;                  // (B, S): <bos> then the target without its last id
  IndexTensor target, target_valid_lens;  // (B, S) ids ending in <eos>, padded; (B)
  // On several ranks: the target tokens of the whole global batch this one is a rank's share of.
  int64_t global_tokens = 0;
  bool empty() const { return !source.defined() || source.numel() == 0; }
};

// Batches of similar source lengths, so little of the encoder's work is padding: the examples
// are shuffled, cut into pools of 32 batches, each pool is sorted by source length, cut into
// batches, and the batches are shuffled. A function of `seed` (pass seed + epoch).
// On several ranks (docs/distributed.md), every rank cuts the same global batches and keeps rows
// rank, rank + ranks, … of each (dist::shard): a rank's batch may have a row fewer, or none (empty()).
std::vector<Batch> make_batches(const std::vector<Example>& examples, int64_t batch_size, uint64_t seed,
                                int64_t pad_id, int64_t bos_id, int rank = 0, int ranks = 1);

// One step of teacher-forced training: the masked cross-entropy of the logits against the target
// (the mean over real target tokens, <eos> included), backward, gradient clipping at clip_norm,
// optimizer step. Returns the loss.
float train_step(Seq2Seq& model, qkv::optim::Optimizer& optimizer, const Batch& batch, double clip_norm);

struct Score {
  int64_t count = 0;
  double exact_match = 0;  // fraction of predictions equal to the target
  double bleu = 0;         // mean of bleu_chars(prediction, target, 2)
};

struct Evaluation {
  Score score;
  std::vector<std::string> predictions;  // in the order of the pairs
  std::vector<Translation> translations;
};

// Greedy translation of every pair (in batches of similar lengths), and the scores.
Evaluation evaluate(Seq2Seq& model, const std::vector<DatePair>& pairs, int64_t batch_size = 256);

// The longest translation decoding produces: 10 characters of "yyyy-mm-dd" and <eos>, with room.
inline constexpr int64_t kMaxOutputLen = 16;

// ---- checkpoints --------------------------------------------------------------------------------

// The model's configuration as the checkpoint's config text, one "key=value" per line, with the
// two alphabets so that a checkpoint from a program with other vocabularies is refused.
std::string config_text(const ModelConfig& config);
// Throws qkv::FormatError for a missing or malformed key, or alphabets other than this program's.
ModelConfig parse_config(const std::string& text);

// The largest sizes a model may have, far above what the dates need (E 32, H 64, L 2): a config
// beyond them is a mistake or hostile, and would take the memory or the time of the machine.
inline constexpr int64_t kMaxEmbedSize = 4096, kMaxHiddens = 4096, kMaxLayers = 16;
// ValueError, prefixed with `where`, naming the first size out of its range (1 to the limit above),
// a dropout outside [0, 1), or vocabulary sizes other than this program's.
void check_model_config(const ModelConfig& config, const std::string& where);

// A model rebuilt from a checkpoint written by save_checkpoint with config_text(model.config).
// Throws what io::read_checkpoint throws, FormatError from parse_config, ValueError from
// check_model_config, and FormatError when the config's sizes are not those of the tensors (the
// layers their names count, the widths their shapes show): all before a model is built.
std::unique_ptr<Seq2Seq> load_model(const std::filesystem::path& path);

}  // namespace seq2seq

#include "examples/tagger/evaluate.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <ostream>

#include "autograd/grad_mode.h"
#include "data/batching.h"
#include "nn/functional/loss.h"
#include "tensor/error.h"

namespace tagger {

using qkv::data::Vocab;

namespace {

constexpr int kNameColumns = 32;

// `text` padded with spaces to `columns` characters: counted as characters, not bytes, since
// "±" is two bytes of UTF-8 and one column.
std::string pad(const std::string& text, int columns) {
  int used = 0;
  for (unsigned char ch : text) used += (ch & 0xC0) != 0x80;
  return text + std::string(static_cast<size_t>(std::max(0, columns - used)), ' ');
}

}  // namespace

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * fraction);
  return buf;
}

Evaluation evaluate(TaggerModel& model, const Vocabs& vocabs, const TagLexicon& lexicon,
                    const std::vector<TaggedSentence>& sentences, int64_t batch_size) {
  const bool was_training = model.is_training();
  check_lengths("evaluated", sentences);
  const Encoded enc = encode(vocabs, sentences);
  model.eval();
  qkv::NoGradGuard no_grad;
  const int64_t C = vocabs.tags.size();
  Evaluation result;
  result.predicted.resize(sentences.size());
  result.confusion.assign(C, std::vector<int64_t>(C, 0));
  double loss_sum = 0;
  int64_t tokens = 0;
  const auto batches = qkv::data::make_batches(
      enc.words, enc.tags, {.batch_size = batch_size, .shuffle = false, .pad_id = vocabs.words.pad_id()});
  for (const qkv::data::Batch& b : batches) {
    const BatchTensors t = to_tensors(b, sentences, model.reads_chars());
    const Tensor logits = model.forward(t.input);
    loss_sum +=
        qkv::nn::functional::sequence_cross_entropy(logits, t.targets, t.input.valid_lens).item() * t.tokens;
    tokens += t.tokens;
    const IndexTensor pred = logits.argmax(-1);
    for (int64_t i = 0; i < b.batch_size; ++i) {
      const int64_t s = b.indices[i];
      for (int64_t j = 0; j < b.valid_lens[i]; ++j) {
        const int64_t p = pred[i * b.max_len + j];
        ++result.confusion[enc.tags[s][j]][p];
        result.predicted[s].push_back(vocabs.tags.token(p));
      }
    }
  }
  result.loss = loss_sum / std::max<int64_t>(tokens, 1);
  result.score = score_tags(lexicon, sentences, result.predicted);
  model.train(was_training);
  return result;
}

std::vector<std::vector<std::string>> predict(Run& run,
                                              const std::vector<std::vector<std::string>>& sentences) {
  qkv::NoGradGuard no_grad;
  run.model->eval();
  std::vector<std::vector<int64_t>> ids;
  std::vector<TaggedSentence> words;  // untagged
  for (size_t i = 0; i < sentences.size(); ++i) {
    const auto& s = sentences[i];
    if (s.empty()) throw qkv::ValueError("tagger predict: sentence " + std::to_string(i + 1) + " is empty");
    if (s.size() > static_cast<size_t>(kMaxSentenceLength)) {
      throw qkv::ValueError("tagger predict: sentence " + std::to_string(i + 1) + " has " +
                            std::to_string(s.size()) + " tokens; the tagger takes at most " +
                            std::to_string(kMaxSentenceLength));
    }
    std::vector<int64_t> sentence_ids;
    for (const std::string& w : s) sentence_ids.push_back(run.vocabs.word_id(w));
    ids.push_back(std::move(sentence_ids));
    words.push_back({s, {}});
  }
  std::vector<std::vector<std::string>> out(sentences.size());
  const auto batches = qkv::data::make_batches(
      ids, {}, {.batch_size = 64, .shuffle = false, .pad_id = run.vocabs.words.pad_id()});
  for (const qkv::data::Batch& b : batches) {
    const BatchTensors t = to_tensors(b, words, run.model->reads_chars());
    const IndexTensor pred = run.model->forward(t.input).argmax(-1);
    for (int64_t i = 0; i < b.batch_size; ++i) {
      for (int64_t j = 0; j < b.valid_lens[i]; ++j)
        out[b.indices[i]].push_back(run.vocabs.tags.token(pred[i * b.max_len + j]));
    }
  }
  return out;
}

void print_evaluation(std::ostream& out, const Evaluation& e, const Vocab& tags,
                      const std::string& no_lexicon) {
  const int64_t C = tags.size();
  out << "accuracy " << percent(e.score.overall.value()) << " of " << e.score.overall.total << " tokens; ";
  if (no_lexicon.empty())
    out << "ambiguous " << percent(e.score.ambiguous.value()) << " of " << e.score.ambiguous.total << "; ";
  out << "tag-changing repeats " << percent(e.score.repeated.value()) << " of " << e.score.repeated.total;
  if (no_lexicon.empty())
    out << "; unseen words " << percent(e.score.unseen.value()) << " of " << e.score.unseen.total;
  out << "; loss " << e.loss << "\n";
  if (!no_lexicon.empty()) out << "(ambiguous and unseen words not measured: " << no_lexicon << ")\n";
  out << "\n";
  // Recall: of the tokens whose gold tag is t, the share tagged t. Precision: of the tokens tagged
  // t, the share whose gold tag is t.
  out << "per tag:  recall  precision       F1     gold  predicted\n";
  for (int64_t g = 0; g < C; ++g) {
    int64_t gold = 0, predicted = 0;
    for (int64_t p = 0; p < C; ++p) gold += e.confusion[g][p], predicted += e.confusion[p][g];
    if (gold == 0 && predicted == 0) continue;
    const double hits = static_cast<double>(e.confusion[g][g]);
    const double recall = gold ? hits / gold : 0, precision = predicted ? hits / predicted : 0;
    const double f1 = recall + precision > 0 ? 2 * recall * precision / (recall + precision) : 0;
    out << "  " << std::left << std::setw(6) << tags.token(g) << std::right << std::setw(8) << percent(recall)
        << std::setw(11) << percent(precision) << std::setw(9) << percent(f1) << std::setw(9) << gold
        << std::setw(11) << predicted << "\n";
  }
  out << "\nconfusion matrix (rows gold, columns predicted):\n      ";
  for (int64_t p = 0; p < C; ++p) out << std::setw(6) << tags.token(p).substr(0, 5);
  out << "\n";
  for (int64_t g = 0; g < C; ++g) {
    out << std::left << std::setw(6) << tags.token(g).substr(0, 5) << std::right;
    for (int64_t p = 0; p < C; ++p) out << std::setw(6) << e.confusion[g][p];
    out << "\n";
  }
}

void print_score_header(std::ostream& out, const std::string& first_column, const std::string& extra) {
  out << "  " << pad(first_column, kNameColumns) << std::right << std::setw(9) << "overall" << std::setw(11)
      << "ambiguous" << std::setw(11) << "repeated" << std::setw(9) << "unseen" << extra << "\n";
}

void print_score_row(std::ostream& out, const std::string& name, const TaggingScore& s,
                     const std::string& extra) {
  out << "  " << pad(name, kNameColumns) << std::right << std::setw(9) << percent(s.overall.value())
      << std::setw(11) << percent(s.ambiguous.value()) << std::setw(11) << percent(s.repeated.value())
      << std::setw(9) << (s.unseen.total > 0 ? percent(s.unseen.value()) : "-") << extra << "\n";
}

}  // namespace tagger

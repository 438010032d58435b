// Evaluation and prediction: a model tags sentences in eval mode, and the result is scored and
// reported (accuracy overall, on ambiguous words and on tag-changing repeats; per tag; confusions).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "examples/tagger/corpus.h"
#include "examples/tagger/dataset.h"
#include "examples/tagger/model.h"
#include "examples/tagger/run_dir.h"

namespace tagger {

struct Evaluation {
  double loss = 0;
  TaggingScore score;
  std::vector<std::vector<std::string>> predicted;  // per sentence, per token
  std::vector<std::vector<int64_t>> confusion;      // [gold][predicted] counts, tag-vocab order
};

// Tags `sentences` in eval mode, batch by batch, without building a graph.
Evaluation evaluate(TaggerModel& model, const Vocabs& vocabs, const TagLexicon& lexicon,
                    const std::vector<TaggedSentence>& sentences, int64_t batch_size);

// Tags whitespace-separated sentences with a loaded run.
std::vector<std::vector<std::string>> predict(Run& run,
                                              const std::vector<std::vector<std::string>>& sentences);

// The eval subcommand's report: overall and per-tag accuracy and the confusion matrix as text.
// A non-empty `no_lexicon` says why the evaluation had no training data to tell ambiguous and
// unseen words by: those two figures are left out, with the reason.
void print_evaluation(std::ostream& out, const Evaluation& evaluation, const qkv::data::Vocab& tags,
                      const std::string& no_lexicon = "");

// The accuracy tables of `train` and `ablate`: a header and one row per tagger, columns overall,
// ambiguous and repeated; `extra` is appended to the line (ablate's tokens/s).
void print_score_header(std::ostream& out, const std::string& first_column, const std::string& extra = "");
void print_score_row(std::ostream& out, const std::string& name, const TaggingScore& score,
                     const std::string& extra = "");

// "99.68%": a fraction as a percentage with two decimals.
std::string percent(double fraction);

}  // namespace tagger

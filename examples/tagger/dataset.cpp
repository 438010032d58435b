#include "examples/tagger/dataset.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <unordered_map>

#include "data/conll.h"
#include "examples/tagger/brown.h"
#include "tensor/error.h"

namespace tagger {

using qkv::data::Vocab;

std::vector<TaggedSentence> read_tagged(const std::string& path) {
  const bool conllu = path.size() >= 7 && path.compare(path.size() - 7, 7, ".conllu") == 0;
  auto sentences = conllu ? qkv::data::read_conllu(path) : qkv::data::read_conll(path);
  if (sentences.empty()) throw qkv::ValueError("tagger: " + path + " holds no sentences");
  return sentences;
}

Data load_data(const Config& config) {
  const std::string &train_path = config.train_file, &dev_path = config.dev_file,
                    &test_path = config.test_file;
  Data data;
  if (config.corpus == "brown") {
    qkv::data::BrownCorpus brown = load_brown(config.corpus_cache);
    data.train = std::move(brown.train);
    data.dev = std::move(brown.dev);
    data.test = std::move(brown.test);
    data.description = "Brown Corpus, universal tags, split by document (" + config.corpus_cache + ")";
    return data;
  }
  if (train_path.empty() && dev_path.empty() && test_path.empty()) {
    Corpus corpus =
        generate_corpus(config.seed, {config.train_sentences, config.dev_sentences, config.test_sentences});
    data.train = std::move(corpus.train);
    data.dev = std::move(corpus.dev);
    data.test = std::move(corpus.test);
    data.description = "built-in corpus, seed " + std::to_string(config.seed);
    return data;
  }
  if (train_path.empty() || dev_path.empty() || test_path.empty()) {
    throw qkv::ValueError(
        "tagger: give all three of --train, --dev and --test, or none for the built-in corpus");
  }
  data.train = read_tagged(train_path);
  data.dev = read_tagged(dev_path);
  data.test = read_tagged(test_path);
  data.description = train_path + ", " + dev_path + ", " + test_path;
  return data;
}

namespace {

std::string lowercased(std::string word) {
  for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return word;
}

}  // namespace

bool lowercases_words(const Config& config) { return config.char_filters > 0; }

int64_t Vocabs::word_id(const std::string& word) const {
  return words.encode({lowercase ? lowercased(word) : word})[0];
}

Vocabs build_vocabs(const Data& data, const Config& config) {
  const bool lowercase = lowercases_words(config);
  std::map<std::string, int64_t> words, tags;
  for (const TaggedSentence& s : data.train) {
    for (const std::string& w : s.words) ++words[lowercase ? lowercased(w) : w];
  }
  for (const auto* split : {&data.train, &data.dev, &data.test}) {
    for (const TaggedSentence& s : *split) {
      for (const std::string& t : s.tags) ++tags[t];
    }
  }
  return Vocabs{Vocab(words, config.min_freq), Vocab(tags, 1, {}), lowercase};
}

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

qkv::data::TokenizerStyle tokenizer_style_for(const Config& config) {
  if (config.corpus == "brown") return qkv::data::TokenizerStyle::Brown;
  if (config.train_file.empty()) return qkv::data::TokenizerStyle::Whitespace;
  return qkv::data::TokenizerStyle::UD;
}

Encoded encode(const Vocabs& vocabs, const std::vector<TaggedSentence>& sentences) {
  Encoded out;
  for (size_t i = 0; i < sentences.size(); ++i) {
    const TaggedSentence& s = sentences[i];
    for (const std::string& tag : s.tags) {
      if (vocabs.tags.contains(tag)) continue;
      std::string known;
      for (const std::string& t : vocabs.tags.tokens()) known += (known.empty() ? "" : " ") + t;
      throw qkv::ValueError("tagger: sentence " + std::to_string(i + 1) + " has the tag \"" + tag +
                            "\", which the model was not trained with (it knows " + known + ")");
    }
    std::vector<int64_t> ids;
    for (const std::string& w : s.words) ids.push_back(vocabs.word_id(w));
    out.words.push_back(std::move(ids));
    out.tags.push_back(vocabs.tags.encode(s.tags));
  }
  return out;
}

void check_lengths(const char* split, const std::vector<TaggedSentence>& sentences) {
  for (size_t i = 0; i < sentences.size(); ++i) {
    const size_t n = sentences[i].words.size();
    if (n > static_cast<size_t>(kMaxSentenceLength)) {
      throw qkv::ValueError(std::string("tagger: ") + split + " sentence " + std::to_string(i + 1) + " has " +
                            std::to_string(n) + " tokens; the tagger takes at most " +
                            std::to_string(kMaxSentenceLength));
    }
  }
}

std::vector<int64_t> char_ids(const std::string& word) {
  const int64_t n = static_cast<int64_t>(word.size());
  std::vector<int64_t> ids{kCharBegin};
  for (int64_t i = 0; i < n; ++i) {
    if (n > kMaxWordBytes && i == kMaxWordBytes / 2) i = n - kMaxWordBytes / 2;  // skip the middle
    ids.push_back(static_cast<unsigned char>(word[static_cast<size_t>(i)]) + 1);
  }
  ids.push_back(kCharEnd);
  return ids;
}

namespace {

// The characters of the distinct forms among `sentences`, and each token's row (input.form_rows).
void add_chars(ModelInput& input, const std::vector<const std::vector<std::string>*>& sentences) {
  const int64_t B = input.ids.size(0), T = input.ids.size(1);
  std::unordered_map<std::string, int64_t> row_of;
  std::vector<std::vector<int64_t>> forms;
  std::vector<int64_t> rows(static_cast<size_t>(B * T), -1);
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<std::string>& words = *sentences[static_cast<size_t>(b)];
    for (size_t t = 0; t < words.size(); ++t) {
      auto [it, added] = row_of.try_emplace(words[t], static_cast<int64_t>(forms.size()));
      if (added) forms.push_back(char_ids(words[t]));
      rows[static_cast<size_t>(b * T) + t] = it->second;
    }
  }
  const int64_t U = static_cast<int64_t>(forms.size());
  int64_t L = 1;
  for (const auto& f : forms) L = std::max(L, static_cast<int64_t>(f.size()));
  std::vector<int64_t> chars(static_cast<size_t>(U * L), 0), lens;
  for (int64_t u = 0; u < U; ++u) {
    std::copy(forms[u].begin(), forms[u].end(), chars.begin() + u * L);
    lens.push_back(static_cast<int64_t>(forms[u].size()));
  }
  for (int64_t& r : rows) r = r < 0 ? U : r;  // padding tokens: the zero row after the forms
  input.chars = IndexTensor(std::move(chars), {U, L});
  input.char_lens = IndexTensor(std::move(lens));
  input.form_rows = IndexTensor(std::move(rows));
}

}  // namespace

ModelInput make_input(const Vocabs& vocabs, const std::vector<const std::vector<std::string>*>& sentences,
                      bool chars) {
  const int64_t B = static_cast<int64_t>(sentences.size());
  int64_t T = 1;
  for (const auto* s : sentences) T = std::max(T, static_cast<int64_t>(s->size()));
  std::vector<int64_t> ids(static_cast<size_t>(B * T), vocabs.words.pad_id()), lens;
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<std::string>& words = *sentences[static_cast<size_t>(b)];
    for (size_t t = 0; t < words.size(); ++t) ids[static_cast<size_t>(b * T) + t] = vocabs.word_id(words[t]);
    lens.push_back(static_cast<int64_t>(words.size()));
  }
  ModelInput input;
  input.ids = IndexTensor(std::move(ids), {B, T});
  input.valid_lens = IndexTensor(std::move(lens));
  if (chars) add_chars(input, sentences);
  return input;
}

BatchTensors to_tensors(const qkv::data::Batch& b, const std::vector<TaggedSentence>& sentences, bool chars) {
  BatchTensors t;
  t.input.ids = IndexTensor(b.inputs, {b.batch_size, b.max_len});  // already through the vocabulary
  t.input.valid_lens = IndexTensor(b.valid_lens);
  if (chars) {
    std::vector<const std::vector<std::string>*> words;
    for (int64_t i : b.indices) words.push_back(&sentences[static_cast<size_t>(i)].words);
    add_chars(t.input, words);
  }
  if (!b.targets.empty()) t.targets = IndexTensor(b.targets, {b.batch_size, b.max_len});
  for (int64_t n : b.valid_lens) t.tokens += n;
  return t;
}

}  // namespace tagger

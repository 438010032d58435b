#include "examples/tagger/dataset.h"

#include <map>
#include <sstream>

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

Vocabs build_vocabs(const Data& data, int64_t min_freq) {
  std::map<std::string, int64_t> words, tags;
  for (const TaggedSentence& s : data.train) {
    for (const std::string& w : s.words) ++words[w];
  }
  for (const auto* split : {&data.train, &data.dev, &data.test}) {
    for (const TaggedSentence& s : *split) {
      for (const std::string& t : s.tags) ++tags[t];
    }
  }
  return Vocabs{Vocab(words, min_freq), Vocab(tags, 1, {})};
}

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
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
    out.words.push_back(vocabs.words.encode(s.words));
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

BatchTensors to_tensors(const qkv::data::Batch& b) {
  BatchTensors t;
  t.ids = IndexTensor(b.inputs, {b.batch_size, b.max_len});
  if (!b.targets.empty()) t.targets = IndexTensor(b.targets, {b.batch_size, b.max_len});
  t.valid_lens = IndexTensor(b.valid_lens);
  for (int64_t n : b.valid_lens) t.tokens += n;
  return t;
}

}  // namespace tagger

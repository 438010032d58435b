// Running part of a test in a fresh process: the suite's executable started again with
// `--child NAME ARGS...` (tests/main.cpp) runs the function registered under NAME instead of the
// tests. A test uses it for what only a new process shows: resuming from a checkpoint with nothing
// carried over in memory, or the environment read at startup (QKV_NUM_THREADS).
//
//   QKV_CHILD("print threads", [](const std::vector<std::string>& args) { ...; return 0; });
//   const ChildResult r = run_child("print threads", {}, {"QKV_NUM_THREADS=1"});
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace qkv::testing {

using ChildMain = std::function<int(const std::vector<std::string>& args)>;

struct ChildResult {
  int exit_code = -1;  // -1 when the child did not exit normally (a signal)
  std::string output;  // what it wrote to stdout
  std::string errors;  // what it wrote to stderr
};

// Starts this executable as `--child name args...` with `env` ("KEY=value") added to the current
// environment, waits for it, and returns its exit code and standard output.
ChildResult run_child(const std::string& name, const std::vector<std::string>& args,
                      const std::vector<std::string>& env = {});

// Runs the program at `path` (one the build made, such as the tagger) with `args` and `env` as
// above, and stdin from /dev/null: the command-line tests run the programs users run.
//   const ChildResult r = run_program(kTaggerProgram, {"train", "--lr", "inf"});
ChildResult run_program(const std::string& path, const std::vector<std::string>& args,
                        const std::vector<std::string>& env = {});
#ifdef QKV_TAGGER_PROGRAM
inline const std::string kTaggerProgram = QKV_TAGGER_PROGRAM;
inline const std::string kSeq2SeqProgram = QKV_SEQ2SEQ_PROGRAM;
#endif

// Runs the registered child `name`; called by main for `--child`. Returns its exit code (2 for an
// unknown name).
int child_main(const std::string& name, const std::vector<std::string>& args);

struct ChildRegistrar {
  ChildRegistrar(const std::string& name, ChildMain fn);
};

}  // namespace qkv::testing

#define QKV_CHILD_CONCAT2(a, b) a##b
#define QKV_CHILD_CONCAT(a, b) QKV_CHILD_CONCAT2(a, b)
#define QKV_CHILD(name, fn) \
  static const ::qkv::testing::ChildRegistrar QKV_CHILD_CONCAT(qkv_child_, __LINE__) { name, fn }

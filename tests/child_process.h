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
inline const std::string kLmProgram = QKV_LM_PROGRAM;
inline const std::string kVitProgram = QKV_VIT_PROGRAM;
inline const std::string kGraphProgram = QKV_GRAPH_PROGRAM;
inline const std::string kPotentialProgram = QKV_POTENTIAL_PROGRAM;
#endif

// A program run with pipes on its stdin and stdout, for what only a conversation shows: that it
// answers a line before its input ends (stderr goes to a file, read by finish()).
//   InteractiveProgram p(kTaggerProgram, {"predict", "--run", run});
//   p.write("the dog runs\n");
//   CHECK(p.read_line(10) == "the/DET dog/NOUN runs/VERB");
//   const ChildResult r = p.finish();  // closes stdin, waits
class InteractiveProgram {
 public:
  InteractiveProgram(const std::string& path, const std::vector<std::string>& args);
  ~InteractiveProgram();
  InteractiveProgram(const InteractiveProgram&) = delete;
  InteractiveProgram& operator=(const InteractiveProgram&) = delete;

  void write(const std::string& text);
  // The next line of its output without its newline, or "<timeout>" when none comes within
  // `seconds`, or "<eof>" when its output ends.
  std::string read_line(double seconds);
  // Closes its stdin, waits for it to end, and returns its exit code, the output not read yet and
  // its stderr.
  ChildResult finish();

 private:
  int pid_ = -1, in_ = -1, out_ = -1;
  std::string err_path_, pending_;
};

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

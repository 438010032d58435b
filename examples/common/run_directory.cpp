#include "examples/common/run_directory.h"

#include "tensor/error.h"

namespace qkv::examples {
namespace fs = std::filesystem;

io::DirectoryLock prepare_run_directory(const fs::path& dir, bool resume, const std::string& program,
                                        const std::vector<std::string>& files) {
  // The article as the name is spoken: an lm run, a vit run.
  const bool vowel = !program.empty() && std::string("aefhilmnorsx").find(program[0]) != std::string::npos;
  const std::string a_run = (vowel ? "an " : "a ") + program + " run";
  std::error_code ec;
  if (resume && !fs::is_directory(dir))
    throw ValueError(program + " train --resume: " + dir.string() + " (--run) is not a directory holding " + a_run);
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw ValueError(program + " train: cannot make the run directory " + dir.string() + " (--run): " +
                          (ec ? ec.message() : "it is not a directory"));
  // Checked before the lock too, so that a directory of other files gets no .lock file; and again
  // under it, for a training that started in between.
  const auto check_contents = [&] {
    const bool has_run = fs::exists(dir / "config.json");
    if (resume && !has_run)
      throw ValueError(program + " train --resume: " + dir.string() + " (--run) holds no " + program + " run (no config.json)");
    if (resume) return;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().filename() == ".lock") continue;
      throw ValueError(program + " train: " + dir.string() + " (--run) " +
                            (has_run ? "holds a run (its config.json); --resume continues " + a_run + ", or choose "
                                       "another --run"
                                     : "is not empty and not " + a_run + "; choose an empty or new directory") +
                            " (nothing was changed)");
    }
  };
  check_contents();
  io::DirectoryLock lock = io::DirectoryLock::try_lock(dir);
  if (!lock.locked())
    throw ValueError(program + " train: another training holds the run directory " + dir.string() +
                          " (--run), or it cannot be written; wait for it, or choose another directory");
  check_contents();
  io::remove_temp_files(dir, files);
  io::check_writable(dir, program + " train");
  return lock;
}

io::Json parse_json_of(const std::string& text, const std::string& source) {
  try {
    return io::parse_json(text);
  } catch (const qkv::Error& e) {
    throw ValueError(source + ": " + e.what());
  }
}

}  // namespace qkv::examples

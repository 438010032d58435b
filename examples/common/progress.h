// Training progress: on a terminal, one line redrawn in place with a bar, the figures and an ETA;
// otherwise (a log file, CI) plain lines at a steady pace, so logs stay readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace qkv::examples {

class Progress {
 public:
  // `total` steps make up the bar; `tty` defaults to whether stderr is a terminal.
  Progress(std::string label, int64_t total);
  Progress(std::string label, int64_t total, bool tty);
  // `shown` false: update and finish draw nothing (a quiet training, a rank but 0).
  static Progress shown_if(bool shown, std::string label, int64_t total);
  // Reports that `done` of `total` steps are finished; `stats` is shown after the bar.
  void update(int64_t done, const std::string& stats);
  // Ends the line (on a terminal) and prints a final summary line.
  void finish(const std::string& summary);
  double elapsed_seconds() const;

 private:
  std::string label_;
  int64_t total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  int64_t last_plain_ = -1;  // the tenth of progress last printed as a plain line
  bool shown_ = true;
};

// "1:02:03", "4:05" — for ETAs and durations.
std::string format_duration(double seconds);

}  // namespace qkv::examples

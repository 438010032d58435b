#include "examples/common/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace qkv::examples {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

Progress::Progress(std::string label, int64_t total)
    : Progress(std::move(label), total, isatty(STDERR_FILENO)) {}

Progress::Progress(std::string label, int64_t total, bool tty)
    : label_(std::move(label)),
      total_(total > 0 ? total : 1),
      tty_(tty),
      start_(std::chrono::steady_clock::now()) {}

Progress Progress::shown_if(bool shown, std::string label, int64_t total) {
  Progress p(std::move(label), total);
  p.shown_ = shown;
  return p;
}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::update(int64_t done, const std::string& stats) {
  if (!shown_) return;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = elapsed_seconds();
  const double eta =
      done > 0 ? elapsed * static_cast<double>(total_ - done) / static_cast<double>(done) : NAN;
  if (tty_) {
    // Redraw at most 10 times a second: drawing is not free and the eye can't follow faster.
    if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(kWidth * done / total_);
    std::fprintf(stderr, "\r\033[K%s [%s%s] %lld/%lld %s ETA %s", label_.c_str(),
                 std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(),
                 static_cast<long long>(done), static_cast<long long>(total_), stats.c_str(),
                 format_duration(eta).c_str());
    std::fflush(stderr);
  } else {
    const int64_t tenth = 10 * done / total_;
    if (tenth == last_plain_) return;
    last_plain_ = tenth;
    std::fprintf(stderr, "%s %lld/%lld %s ETA %s\n", label_.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total_), stats.c_str(), format_duration(eta).c_str());
  }
}

void Progress::finish(const std::string& summary) {
  if (!shown_) return;
  if (tty_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s %s (%s)\n", label_.c_str(), summary.c_str(),
               format_duration(elapsed_seconds()).c_str());
}

}  // namespace qkv::examples

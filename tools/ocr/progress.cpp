#include "tools/ocr/progress.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace ckjit::ocr {

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "--";
  const long long t = std::llround(s);
  char buf[32];
  if (t < 60) std::snprintf(buf, sizeof buf, "%llds", t);
  else if (t < 3600) std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, t / 60 % 60);
  return buf;
}

std::string format_progress(size_t done, size_t total, double elapsed_s, int width) {
  if (width < 1) width = 1;
  const double frac = total ? double(done) / double(total) : 1.0;
  const int fill = int(frac * width);
  std::string bar = "[";
  for (int i = 0; i < width; ++i) bar += i < fill ? '=' : (i == fill ? '>' : ' ');
  bar += "]";
  const double rate = elapsed_s > 0 && done > 0 ? double(done) / elapsed_s : 0.0;
  const double eta = rate > 0 ? double(total - std::min(done, total)) / rate : -1.0;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s %zu/%zu pages  %.1f pages/min  ETA %s", bar.c_str(), done, total, rate * 60.0,
                format_duration(eta).c_str());
  return buf;
}

Progress::Progress(size_t total, std::FILE* out, bool tty) : total_(total), out_(out), tty_(tty), start_(now_s()) {
  if (tty_ && total_) std::fprintf(out_, "\r%s", format_progress(0, total_, 0).c_str());
}

void Progress::page_done(const std::string& label, bool ok, double seconds) {
  ++done_;
  const std::string p = format_progress(done_, total_, now_s() - start_);
  // \033[K clears what a longer previous line left on the terminal.
  if (tty_) std::fprintf(out_, "\r%s  %s%s\033[K", p.c_str(), label.c_str(), ok ? "" : " FAILED");
  else std::fprintf(out_, "ocr: %s %s in %.2f s  %s\n", label.c_str(), ok ? "ok" : "FAILED", seconds, p.c_str());
  std::fflush(out_);
}

void Progress::finish() {
  if (tty_ && total_) std::fputc('\n', out_);
}

}  // namespace ckjit::ocr

#pragma once
// Progress of `ckjit ocr` on stderr: a bar redrawn in place on a terminal, a plain line per page
// otherwise (logs of batch jobs), both with pages/min and the ETA of the pages left in this run.
#include <cstddef>
#include <cstdio>
#include <string>

namespace ckjit::ocr {

// "45s", "3m05s", "2h07m"; "--" for an unknown (negative, NaN or infinite) duration.
std::string format_duration(double seconds);

// "[=========>          ] 12/40 pages  51.0 pages/min  ETA 33s": done of total, the rate over
// elapsed seconds (ETA unknown until a page is done), a bar of width characters.
std::string format_progress(size_t done, size_t total, double elapsed_s, int width = 24);

class Progress {
 public:
  // total: pages this run will work on (the skipped ones excluded).
  Progress(size_t total, std::FILE* out, bool tty);
  // One page finished: label ("scan.pdf p3"), its status and seconds.
  void page_done(const std::string& label, bool ok, double seconds);
  void finish();  // ends the bar's line on a terminal

 private:
  size_t total_, done_ = 0;
  std::FILE* out_;
  bool tty_;
  double start_;
};

}  // namespace ckjit::ocr

// Progress on stderr: a live, rewritten line on a terminal; one line per iteration otherwise
// (logs, CI, torchrun). Only the process that owns the output (rank 0) should print.
#pragma once

#include <mixle/fit.hpp>

#include <string>

namespace mixle::host {

class ProgressPrinter {
 public:
  /// `enabled` false prints nothing (--quiet, or not rank 0).
  explicit ProgressPrinter(bool enabled);
  ~ProgressPrinter();
  void iteration(const FitProgress& p);
  /// Ends a live line so later output starts on a fresh line.
  void finish();

 private:
  bool enabled_;
  bool tty_;
  bool live_line_ = false;
};

}  // namespace mixle::host

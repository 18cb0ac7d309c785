#include "host/progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace mixle::host {

ProgressPrinter::ProgressPrinter(bool enabled) : enabled_(enabled), tty_(isatty(STDERR_FILENO) == 1) {}

ProgressPrinter::~ProgressPrinter() { finish(); }

void ProgressPrinter::iteration(const FitProgress& p) {
  if (!enabled_) return;
  char delta[32] = "";
  if (!std::isnan(p.delta)) std::snprintf(delta, sizeof delta, "  Δ %+.3e", p.delta);
  char pairs[48] = "";
  if (p.pairs_per_row > 0) std::snprintf(pairs, sizeof pairs, "  %.3g pairs/row", p.pairs_per_row);
  std::fprintf(stderr, "%s[restart %d] iter %3d/%d  mean log-lik %.6f%s  %.3f s  %.3g rows/s%s%s",
               tty_ ? "\r\033[K" : "", p.restart, p.iteration, p.max_iter, p.mean_loglik, delta, p.seconds,
               p.rows_per_second, pairs, tty_ ? "" : "\n");
  std::fflush(stderr);
  live_line_ = tty_;
}

void ProgressPrinter::finish() {
  if (live_line_) std::fputc('\n', stderr);
  live_line_ = false;
}

}  // namespace mixle::host

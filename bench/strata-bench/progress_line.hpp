// The one-line progress display on the terminal (stderr), rewritten in place.
#pragma once

#include <string>

namespace strata_bench {

class progress_line {
 public:
  progress_line();
  // Replaces the line with `text` and the elapsed time (a new line when not a terminal).
  void show(const std::string& text);
  // Ends the line so later output starts on a fresh one.
  void finish();

 private:
  bool terminal_;
  double start_ns_;
  std::size_t last_width_ = 0;
};

}  // namespace strata_bench

// Options set for one test's scope, whatever the environment says: a test
// states the setting it is written for, and the value before comes back after.
#pragma once

#include "strata/strata.h"

namespace strata_test_heap {

// `option` at `value` for the object's lifetime.
class option_for_test {
 public:
  option_for_test(strata_option_t option, long value)
      : option_(option), saved_(strata_option_get(option)) {
    strata_option_set(option, value);
  }
  ~option_for_test() { strata_option_set(option_, saved_); }
  option_for_test(const option_for_test&) = delete;
  option_for_test& operator=(const option_for_test&) = delete;

 private:
  strata_option_t option_;
  long saved_;
};

// The purge delay a test is written for (memory back after a delay, at once
// or never); what earlier tests left waiting is purged first (a forced collect
// purges whatever the delay), so that no purge of it falls inside a phase
// whose memory the test measures.
class purge_delay_for_test {
 public:
  explicit purge_delay_for_test(long ms) : delay_(STRATA_OPTION_PURGE_DELAY_MS, ms) {
    strata_collect(1);
  }

 private:
  option_for_test delay_;
};

}  // namespace strata_test_heap

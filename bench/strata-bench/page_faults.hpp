// Minor page faults of this process, and their record per round, so a report can show
// whether a layout converges: faults in the first round, none once memory is reused.
#pragma once

#include "recorder.hpp"

namespace strata_bench {

// Minor page faults taken by this process (all threads) since it started.
long long minor_page_faults();

// Records the faults of one round: as the metric "minor page faults" when the round is
// measured, and as the fact "minor page faults, round N" (warm-up rounds counted, from
// 1) either way, so round 1 can be read beside the rounds after it.
void record_round_faults(recorder& out, int round, long long faults, bool measured);

}  // namespace strata_bench

// The leak report at exit (STRATA_PROFILE_LEAKS=1): the sampled stacks that
// hold the most live bytes, with their estimated bytes and blocks.
#pragma once

#include <cstddef>

#include "profile/table.hpp"

namespace strata::profile {

// Print the `top` stacks with the most live bytes to the report output.
void report_leaks(const bucket* buckets, std::size_t count, std::size_t top) noexcept;

}  // namespace strata::profile

// The parts of the misuse matrix, one per component; misuse_matrix.cpp joins
// them into the one list.
#pragma once

#include <vector>

#include "misuse_matrix.hpp"

namespace strata_misuse {

std::vector<row> c_allocation_rows();
std::vector<row> c_heap_rows();
std::vector<row> c_service_rows();
std::vector<row> arena_rows();
std::vector<row> frame_rows();
std::vector<row> session_rows();
std::vector<row> pool_rows();
std::vector<row> bfc_buddy_rows();
std::vector<row> adaptor_rows();
std::vector<row> resource_rows();
std::vector<row> cpu_and_trace_rows();
std::vector<row> override_rows();

}  // namespace strata_misuse

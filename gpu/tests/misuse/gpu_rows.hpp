// The GPU rows of the misuse matrix (tests/misuse/misuse_matrix.hpp's list
// type): the device, its resources and pools, and the C API of
// libstrata-gpu-alloc. Built in gpu/tests, since the host tests may not depend
// on the GPU layer; the GPU matrix test runs them, and docs/misuse.md prints
// them after the host rows.
#pragma once

#include <vector>

#include "misuse_matrix.hpp"

namespace strata_misuse {

std::vector<row> gpu_device_rows();
std::vector<row> gpu_resource_rows();
std::vector<row> gpu_c_api_rows();

// The GPU rows, joined once.
const std::vector<row>& gpu_misuse_rows();

// Headers of gpu/include/strata/gpu that declare no resource or C function,
// each with the reason it has no row.
const std::vector<exempt_header>& gpu_exempt_headers();

}  // namespace strata_misuse

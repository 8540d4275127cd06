// A description of the machine and build a report came from.
#pragma once

#include <string>
#include <vector>

#include "json_writer.hpp"

namespace strata_bench {

// Writes a "machine" object: CPU, caches, memory, kernel, OS, compiler, flags, the
// timer's calibration and the installed version of each named Debian package.
void write_machine_info(json_writer& out, const std::vector<std::string>& packages);

}  // namespace strata_bench

// docs/misuse.md, printed from the misuse matrix's one list.
#pragma once

#include <string>
#include <vector>

#include "misuse_matrix.hpp"

namespace strata_misuse {

// The whole page: for each section of `rows`, a table of its rows' answers per case.
std::string misuse_page(const std::vector<row>& rows);

}  // namespace strata_misuse

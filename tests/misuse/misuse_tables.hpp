// docs/misuse.md, printed from the misuse matrix's one list.
#pragma once

#include <string>

namespace strata_misuse {

// The whole page: for each section, a table of its rows' answers per case.
std::string misuse_page();

}  // namespace strata_misuse

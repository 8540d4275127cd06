// Live bytes as folded stacks ("outer;...;inner bytes" per line), what
// flame-graph tools read.
#pragma once

#include <cstddef>

#include "profile/proto.hpp"
#include "profile/table.hpp"

namespace strata::profile {

// One line per stack with live bytes; frames named by the dynamic symbol
// table, else as object+offset.
void write_folded(sink& out, const bucket* buckets, std::size_t count) noexcept;

}  // namespace strata::profile

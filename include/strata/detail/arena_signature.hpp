// The word at the start of every chunk a strata arena holds (a monotonic_arena,
// the frame allocator's arenas, a session heap's buffer). A chunk is one block
// of its upstream; when that upstream is strata's heap and a program hands
// free() a pointer into the chunk, the heap finds this word at the start of the
// block the pointer falls in and says the pointer is an arena's.
#ifndef STRATA_DETAIL_ARENA_SIGNATURE_HPP
#define STRATA_DETAIL_ARENA_SIGNATURE_HPP

#include <cstdint>

namespace strata::detail {

inline constexpr std::uint64_t arena_chunk_signature = 0x6b6e756863617473;  // "stachunk"

}  // namespace strata::detail

#endif  // STRATA_DETAIL_ARENA_SIGNATURE_HPP

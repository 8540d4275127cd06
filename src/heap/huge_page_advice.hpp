// Transparent huge pages where a heap streams through fresh memory. Where the
// kernel backs only the ranges a program advises (THP mode "madvise", common on
// servers), each 4 KiB of a segment is a page fault of its own: 10,000 blocks of
// 4 KiB written once cost 10,000 faults. A huge page of a segment of many-block
// pages is advised (MADV_HUGEPAGE) as a page is first claimed in it, before
// anything in it is touched, when the heap holds STRATA_HUGE_PAGES_AFTER bytes
// and the huge page below it is all pages carved to their last block and three
// quarters handed out: the heap is filling memory densely, so the next 2 MiB
// come in one fault. A small heap, one whose pages are partly used (most
// programs' mix of classes) and one-block pages (64 KiB and up, which a program
// may touch sparsely) stay in 4 KiB pages: a huge page would hold memory nobody
// uses. The first huge page of a segment
// holds its header, touched as the segment is mapped: it is advised only in a
// segment mapped for a thread whose newest segment was filled so to its end.
#pragma once

#include <cstddef>

#include "heap/segment.hpp"

namespace strata::heap {

// Slices [start, start + count) of segment `seg` are about to hold a page and
// its mapping reaches past them: advise each huge page they reach that nothing
// has touched yet (all its slices free and clean) where the policy above says
// so. Called with the segment's slice bitmaps held.
void advise_untouched_huge_pages(segment* seg, std::size_t start, std::size_t count);

// Before a purge: mark dirty the clean slices of each advised huge page of
// `seg` that holds no page but some dirty slice, and return how many. Once
// anything in a huge page was touched all of it is resident, slices no page
// ever held included, so the purge must take the whole huge page. Called with
// the segment's slice bitmaps held.
std::size_t mark_free_advised_huge_pages_dirty(segment* seg);

// Whether a new segment of many-block pages for `owner` should have all its
// huge pages advised as it is mapped: the owner's newest such segment is
// advised and densely used to its last huge page.
bool streams_into_new_segment(const segment* newest);

// The segment's mapping now ends at `mapped` bytes: its huge pages past that
// are advised no more.
void forget_huge_advice_past(segment* seg, std::size_t mapped);

}  // namespace strata::heap

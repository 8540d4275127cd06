// profile.proto written field by field (see pprof.hpp); field numbers are
// those of pprof's proto/profile.proto.
#include "profile/pprof.hpp"

#include <time.h>

#include <cstring>

namespace strata::profile {

namespace {

// Profile's fields.
enum : std::uint32_t {
  sample_type = 1,
  sample = 2,
  mapping_field = 3,
  location = 4,
  string_table = 6,
  time_nanos = 9,
  period_type = 11,
  period = 12,
  default_sample_type = 14,
};

// The fixed strings, in string-table order; mapping paths follow.
constexpr const char* fixed_strings[] = {
    "", "alloc_objects", "count", "alloc_space", "bytes", "inuse_objects", "inuse_space", "space",
};
constexpr std::uint64_t fixed_string_count = sizeof(fixed_strings) / sizeof(fixed_strings[0]);

std::uint64_t rounded(double v) noexcept {
  return v < 0.5 ? 0 : static_cast<std::uint64_t>(v + 0.5);
}

// The location id of `address`: its slot in the open-addressed table, plus one.
std::uint64_t location_id(const pprof_input& in, std::uint64_t address) noexcept {
  std::size_t mask = in.slot_count - 1;
  for (std::size_t i = (address * 0x9e3779b97f4a7c15 >> 20) & mask;; i = (i + 1) & mask) {
    if (in.address_slots[i] == address || in.address_slots[i] == 0) {
      in.address_slots[i] = address;
      return i + 1;
    }
  }
}

void write_value_type(sink& out, std::uint32_t field, std::uint64_t type, std::uint64_t unit) {
  message().varint_field(1, type).varint_field(2, unit).emit(out, field);
}

void write_samples(sink& out, const pprof_input& in) noexcept {
  for (std::size_t b = 0; b < in.bucket_count; ++b) {
    const bucket& k = in.buckets[b];
    std::uint64_t ids[stack::max_frames];
    for (std::uint32_t i = 0; i < k.stack.count; ++i)
      ids[i] = location_id(in, call_address(k.stack.pc[i]));
    std::uint64_t values[4] = {rounded(k.allocated.count), rounded(k.allocated.bytes),
                               rounded(k.live.count), rounded(k.live.bytes)};
    message m;
    if (k.stack.count > 0) m.packed_field(1, ids, k.stack.count);
    m.packed_field(2, values, 4).emit(out, sample);
  }
}

// The mapping holding `address`: its id (index plus one), or 0.
std::uint64_t mapping_id(const pprof_input& in, std::uint64_t address) noexcept {
  for (std::size_t i = 0; i < in.mapping_count; ++i)
    if (address >= in.mappings[i].start && address < in.mappings[i].limit) return i + 1;
  return 0;
}

void write_locations(sink& out, const pprof_input& in) noexcept {
  for (std::size_t i = 0; i < in.slot_count; ++i) {
    std::uint64_t address = in.address_slots[i];
    if (address == 0) continue;
    message m;
    m.varint_field(1, i + 1);
    if (std::uint64_t id = mapping_id(in, address); id != 0) m.varint_field(2, id);
    m.varint_field(3, address).emit(out, location);
  }
}

void write_mappings(sink& out, const pprof_input& in) noexcept {
  for (std::size_t i = 0; i < in.mapping_count; ++i) {
    const mapping& m = in.mappings[i];
    message()
        .varint_field(1, i + 1)
        .varint_field(2, m.start)
        .varint_field(3, m.limit)
        .varint_field(4, m.offset)
        .varint_field(5, fixed_string_count + i)
        .emit(out, mapping_field);
  }
}

void write_strings(sink& out, const pprof_input& in) noexcept {
  for (const char* s : fixed_strings) emit_bytes(out, string_table, s, std::strlen(s));
  for (std::size_t i = 0; i < in.mapping_count; ++i)
    emit_bytes(out, string_table, in.mappings[i].path, in.mappings[i].path_length);
}

}  // namespace

void write_pprof(sink& out, const pprof_input& in) noexcept {
  // (alloc_objects, count), (alloc_space, bytes), (inuse_objects, count), (inuse_space, bytes)
  constexpr std::uint64_t types[][2] = {{1, 2}, {3, 4}, {5, 2}, {6, 4}};
  for (const auto& t : types) write_value_type(out, sample_type, t[0], t[1]);
  write_samples(out, in);
  write_locations(out, in);
  write_mappings(out, in);
  write_strings(out, in);
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  message field;
  field.varint_field(time_nanos, static_cast<std::uint64_t>(now.tv_sec) * 1000000000 +
                                     static_cast<std::uint64_t>(now.tv_nsec));
  field.varint_field(period, rounded(in.rate));
  field.varint_field(default_sample_type, 6);
  // The scalar fields are written bare (a message's bytes without its key).
  field.emit_raw(out);
  write_value_type(out, period_type, 7, 4);
}

}  // namespace strata::profile

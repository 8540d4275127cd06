// memory_ledger::text and json: the tree of who holds what, for a terminal and for tools.
#include <strata/ledger.hpp>

#include <cinttypes>
#include <cstdio>

namespace strata {
namespace {

// printf into a std::string.
template <class... Args>
void append(std::string& out, const char* format, Args... args) {
  char line[256];
  int length = std::snprintf(line, sizeof(line), format, args...);
  if (length > 0)
    out.append(line, static_cast<std::size_t>(length) < sizeof(line) ? length : sizeof(line) - 1);
}

// `text` as a JSON string, quotes included.
void append_json_string(std::string& out, const std::string& text) {
  out += '"';
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      append(out, "\\u%04x", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  out += '"';
}

// A row and its children, indented by depth.
void append_text_rows(std::string& out, const memory_ledger& ledger, std::size_t parent,
                      int depth) {
  const std::vector<ledger_row>& rows = ledger.rows();
  for (std::size_t i = rows.size(); i-- > 0;) {  // oldest first
    const ledger_row& row = rows[i];
    if (row.parent != parent) continue;
    std::string name = row.kind;
    if (!row.tag.empty()) {
      name += " \"";
      name += row.tag;
      name += '"';
    }
    if (row.device >= 0) {
      name += " (device ";
      name += std::to_string(row.device);
      name += ')';
    }
    append(out, "  %*s%-*s %-8s held %14zu", depth * 2, "", 40 - depth * 2, name.c_str(),
           ledger_domain_name(row.domain), row.figures.held);
    if (row.figures.in_use != ledger_unknown) append(out, "  in use %14zu", row.figures.in_use);
    out += '\n';
    append_text_rows(out, ledger, i, depth + 1);
  }
}

}  // namespace

// Totals, the heap's line, each device, then the tree.
std::string memory_ledger::text() const {
  std::string out = "strata ledger\n";
  append(out, "  heap            in use %zu, committed %zu, reserved %zu bytes\n", heap_.in_use,
         heap_.committed, heap_.reserved);
  for (std::size_t d = 0; d < ledger_domains; ++d)
    append(out, "  %-15s held %zu bytes by strata resources\n",
           ledger_domain_name(static_cast<ledger_domain>(d)), totals_[d]);
  for (const ledger_device_row& d : devices_)
    append(out,
           "  device %d (%s)  total %zu, free %zu, strata holds %zu, used outside strata %zu "
           "bytes\n",
           d.ordinal, d.backend.c_str(), d.memory.total, d.memory.free, d.strata_held, d.outside);
  append(out, "  resources: %zu\n", rows_.size());
  append_text_rows(out, *this, SIZE_MAX, 0);
  return out;
}

// One object: heap, totals, devices, and the rows with their parents' indexes.
std::string memory_ledger::json() const {
  std::string out;
  append(
      out,
      "{\"heap\": {\"in_use\": %zu, \"peak_in_use\": %zu, \"committed\": %zu, \"reserved\": %zu, "
      "\"mallocs\": %" PRIu64 ", \"frees\": %" PRIu64 "}, \"totals\": {",
      heap_.in_use, heap_.peak_in_use, heap_.committed, heap_.reserved, heap_.mallocs, heap_.frees);
  for (std::size_t d = 0; d < ledger_domains; ++d)
    append(out, "%s\"%s\": %zu", d == 0 ? "" : ", ",
           ledger_domain_name(static_cast<ledger_domain>(d)), totals_[d]);
  out += "}, \"devices\": [";
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const ledger_device_row& d = devices_[i];
    append(out, "%s{\"ordinal\": %d, \"backend\": ", i == 0 ? "" : ", ", d.ordinal);
    append_json_string(out, d.backend);
    append(out, ", \"total\": %zu, \"free\": %zu, \"strata_held\": %zu, \"outside_strata\": %zu}",
           d.memory.total, d.memory.free, d.strata_held, d.outside);
  }
  out += "], \"resources\": [";
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    const ledger_row& row = rows_[i];
    out += i == 0 ? "{\"kind\": " : ", {\"kind\": ";
    append_json_string(out, row.kind);
    out += ", \"tag\": ";
    append_json_string(out, row.tag);
    append(out, ", \"domain\": \"%s\", \"held\": %zu, \"in_use\": ", ledger_domain_name(row.domain),
           row.figures.held);
    if (row.figures.in_use == ledger_unknown)
      out += "null";
    else
      append(out, "%zu", row.figures.in_use);
    if (row.parent == SIZE_MAX)
      out += ", \"parent\": null";
    else
      append(out, ", \"parent\": %zu", row.parent);
    append(out, ", \"device\": %d}", row.device);
  }
  out += "]}\n";
  return out;
}

}  // namespace strata

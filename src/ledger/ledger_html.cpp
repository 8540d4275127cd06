// memory_ledger::html: one page, no scripts or links, with the tree of who holds what.
#include <strata/ledger.hpp>

#include <cstdio>
#include <initializer_list>
#include <string_view>

namespace strata {
namespace {

// `text` with HTML's special characters escaped.
std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Append each part in turn (one append each: GCC 12 warns on some literal + string chains).
void add(std::string& out, std::initializer_list<std::string_view> parts) {
  for (std::string_view part : parts) out.append(part);
}

// Bytes as a short figure: 1.5 MiB.
std::string bytes_label(std::size_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < sizeof(units) / sizeof(units[0])) {
    value /= 1024;
    ++unit;
  }
  char label[32];
  std::snprintf(label, sizeof(label), unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return label;
}

// The children of `parent` as a nested list, oldest first.
void append_tree(std::string& out, const std::vector<ledger_row>& rows, std::size_t parent) {
  bool open = false;
  for (std::size_t i = rows.size(); i-- > 0;) {
    const ledger_row& row = rows[i];
    if (row.parent != parent) continue;
    if (!open) out += "<ul>\n";
    open = true;
    add(out, {"<li><span class=\"kind\">", escaped(row.kind), "</span>"});
    if (!row.tag.empty()) add(out, {" <span class=\"tag\">", escaped(row.tag), "</span>"});
    add(out, {" <span class=\"domain\">", ledger_domain_name(row.domain)});
    if (row.device >= 0) add(out, {" ", std::to_string(row.device)});
    add(out, {"</span> holds <b>", bytes_label(row.figures.held), "</b>"});
    if (row.figures.in_use != ledger_unknown)
      add(out, {", ", bytes_label(row.figures.in_use), " in use"});
    append_tree(out, rows, i);
    out += "</li>\n";
  }
  if (open) out += "</ul>\n";
}

}  // namespace

// A table of totals and devices, then the tree.
std::string memory_ledger::html() const {
  std::string out =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>strata ledger</title>\n"
      "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 10px;text-align:right}"
      "th:first-child,td:first-child{text-align:left}.kind{font-weight:bold}"
      ".tag{color:#06c}.domain{color:#777;font-size:90%}</style></head><body>\n"
      "<h1>strata ledger</h1>\n<table>\n<tr><th>what</th><th>bytes</th></tr>\n";
  add(out, {"<tr><td>heap in use</td><td>", bytes_label(heap_.in_use), "</td></tr>\n"});
  add(out, {"<tr><td>heap committed</td><td>", bytes_label(heap_.committed), "</td></tr>\n"});
  for (std::size_t d = 0; d < ledger_domains; ++d)
    add(out, {"<tr><td>", ledger_domain_name(static_cast<ledger_domain>(d)),
              " held by resources</td><td>", bytes_label(totals_[d]), "</td></tr>\n"});
  out += "</table>\n";
  if (!devices_.empty()) {
    out +=
        "<h2>devices</h2>\n<table>\n<tr><th>device</th><th>total</th><th>free</th>"
        "<th>strata holds</th><th>used outside strata</th></tr>\n";
    for (const ledger_device_row& d : devices_)
      add(out, {"<tr><td>", std::to_string(d.ordinal), " (", escaped(d.backend), ")</td><td>",
                bytes_label(d.memory.total), "</td><td>", bytes_label(d.memory.free), "</td><td>",
                bytes_label(d.strata_held), "</td><td>", bytes_label(d.outside), "</td></tr>\n"});
    out += "</table>\n";
  }
  add(out, {"<h2>who holds what (", std::to_string(rows_.size()), " resources)</h2>\n"});
  append_tree(out, rows_, SIZE_MAX);
  out += "</body></html>\n";
  return out;
}

}  // namespace strata

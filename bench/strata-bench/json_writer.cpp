#include "json_writer.hpp"

#include <cmath>
#include <cstdio>

namespace strata_bench {

// Writes the comma that separates this value from the previous one, if any.
void json_writer::separate() {
  if (need_comma_) out_ += ',';
  need_comma_ = true;
}

void json_writer::begin_object() {
  separate();
  out_ += '{';
  need_comma_ = false;
}

void json_writer::end_object() {
  out_ += '}';
  need_comma_ = true;
}

void json_writer::begin_array() {
  separate();
  out_ += '[';
  need_comma_ = false;
}

void json_writer::end_array() {
  out_ += ']';
  need_comma_ = true;
}

// Writes an object key; the next call writes its value.
void json_writer::key(std::string_view name) {
  value(name);
  out_ += ':';
  need_comma_ = false;
}

// Writes a string with JSON escapes for quotes, backslashes and control characters.
void json_writer::value(std::string_view text) {
  separate();
  out_ += '"';
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out_ += '\\';
      out_ += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out_ += escaped;
    } else {
      out_ += c;
    }
  }
  out_ += '"';
}

// Writes a number with six significant digits; non-finite values become null.
void json_writer::value(double number) {
  separate();
  if (!std::isfinite(number)) {
    out_ += "null";
    return;
  }
  char digits[32];
  std::snprintf(digits, sizeof digits, "%.6g", number);
  out_ += digits;
}

void json_writer::value(long long number) {
  separate();
  out_ += std::to_string(number);
}

void json_writer::value(bool flag) {
  separate();
  out_ += flag ? "true" : "false";
}

void json_writer::raw(std::string_view json) {
  separate();
  out_ += json;
}

}  // namespace strata_bench

// A small streaming JSON writer: objects, arrays, strings and numbers, written as one line.
#pragma once

#include <string>
#include <string_view>

namespace strata_bench {

class json_writer {
 public:
  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  void key(std::string_view name);
  void value(std::string_view text);
  void value(const char* text) { value(std::string_view(text)); }
  void value(double number);
  void value(long long number);
  void value(int number) { value(static_cast<long long>(number)); }
  void value(bool flag);
  // Inserts already-serialised JSON text as one value.
  void raw(std::string_view json);

  const std::string& text() const { return out_; }

 private:
  void separate();

  std::string out_;
  bool need_comma_ = false;
};

}  // namespace strata_bench

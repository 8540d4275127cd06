#include <strata/gpu/caching/config.hpp>

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace strata::gpu {

namespace {

[[noreturn]] void reject(std::string_view what) {
  throw std::invalid_argument("STRATA_GPU_ALLOC_CONF: " + std::string(what));
}

// Leading and trailing blanks go, so "a: 1, b:2" reads as it looks.
std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// A whole, non-negative integer, or a clear error naming the key.
std::size_t parse_count(std::string_view key, std::string_view value) {
  std::size_t out = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (value.empty() || error != std::errc{} || end != value.data() + value.size())
    reject(std::string(key) + " wants a non-negative integer, not \"" + std::string(value) + "\"");
  return out;
}

// A decimal fraction, or a clear error naming the key.
double parse_fraction(std::string_view key, std::string_view value) {
  const std::string copy(value);
  char* end = nullptr;
  const double out = copy.empty() ? 0.0 : std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size())
    reject(std::string(key) + " wants a number, not \"" + copy + "\"");
  return out;
}

// Apply one key:value pair.
void apply(caching_config& config, std::string_view key, std::string_view value) {
  if (key == "max_split_size_mb") {
    const std::size_t mib = parse_count(key, value);
    if (mib > (static_cast<std::size_t>(-1) >> 20) || (mib << 20) <= config.small_size)
      reject("max_split_size_mb must be above " + std::to_string(config.small_size >> 20) +
             " (the small-request limit in MiB), not " + std::string(value));
    config.max_split_size = mib << 20;
  } else if (key == "roundup_power2_divisions") {
    const std::size_t divisions = parse_count(key, value);
    if (divisions != 0 && (divisions & (divisions - 1)) != 0)
      reject("roundup_power2_divisions must be a power of two, not " + std::string(value));
    config.roundup_power2_divisions = divisions;
  } else if (key == "garbage_collection_threshold") {
    const double threshold = parse_fraction(key, value);
    if (!(threshold > 0.0 && threshold < 1.0))
      reject("garbage_collection_threshold must be above 0 and below 1, not " + std::string(value));
    config.garbage_collection_threshold = threshold;
  } else if (key == "graph_pool_reserve_mb") {
    const std::size_t mib = parse_count(key, value);
    if (mib > (static_cast<std::size_t>(-1) >> 20))
      reject("graph_pool_reserve_mb is too large: " + std::string(value));
    config.graph_pool_reserve = mib << 20;
  } else if (key == "expandable_segments") {
    if (value != "True" && value != "False")
      reject("expandable_segments must be True or False, not " + std::string(value));
    config.expandable_segments = value == "True";
  } else if (key == "backend") {
    if (value == "cudaMallocAsync")
      reject(
          "backend:cudaMallocAsync is not this caching allocator: use strata's "
          "async_resource, or PyTorch's or CuPy's own cudaMallocAsync pool");
    if (value != "native") reject("backend must be native, not " + std::string(value));
  } else {
    reject(std::string("unknown key \"")
               .append(key)
               .append("\" (known: max_split_size_mb, roundup_power2_divisions, "
                       "garbage_collection_threshold, graph_pool_reserve_mb, expandable_segments, "
                       "backend)"));
  }
}

}  // namespace

// Comma-separated key:value pairs; empty entries are allowed, as "a:1," reads.
caching_config parse_caching_config(std::string_view text, caching_config base) {
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view entry = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (entry.empty()) continue;
    const std::size_t colon = entry.find(':');
    if (colon == std::string_view::npos)
      reject(std::string(entry).insert(0, 1, '"').append("\" is not key:value"));
    apply(base, trim(entry.substr(0, colon)), trim(entry.substr(colon + 1)));
  }
  return base;
}

// Read once by the caller; unset means the defaults.
caching_config caching_config_from_environment() {
  const char* text = std::getenv("STRATA_GPU_ALLOC_CONF");
  caching_config config = text == nullptr ? caching_config{} : parse_caching_config(text);
  if (const char* path = std::getenv("STRATA_GPU_TRACE")) config.trace_path = path;
  return config;
}

}  // namespace strata::gpu

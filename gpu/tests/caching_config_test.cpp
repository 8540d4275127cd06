// STRATA_GPU_ALLOC_CONF: the keys it knows, and clear errors for the rest.
#include <strata/gpu/caching/config.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace strata::gpu {
namespace {

// The message parsing `text` fails with, or "" when it succeeds.
std::string error_of(const char* text) {
  try {
    parse_caching_config(text);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(caching_config_parse, ReadsEveryKey) {
  const caching_config config = parse_caching_config(
      "max_split_size_mb:64, roundup_power2_divisions:8,garbage_collection_threshold:0.75,"
      "graph_pool_reserve_mb:96,expandable_segments:True,backend:native");
  EXPECT_EQ(config.max_split_size, std::size_t{64} << 20);
  EXPECT_EQ(config.roundup_power2_divisions, 8u);
  EXPECT_DOUBLE_EQ(config.garbage_collection_threshold, 0.75);
  EXPECT_EQ(config.graph_pool_reserve, std::size_t{96} << 20);
  EXPECT_TRUE(config.expandable_segments);
  EXPECT_FALSE(parse_caching_config("expandable_segments:False", config).expandable_segments);
}

// backend:cudaMallocAsync would be a silent no-op for this allocator: refused, naming what to use.
TEST(caching_config_parse, TheAsyncBackendIsRefusedWithTheAlternatives) {
  const std::string why = error_of("backend:cudaMallocAsync");
  EXPECT_NE(why.find("async_resource"), std::string::npos) << why;
  EXPECT_NE(why.find("PyTorch"), std::string::npos) << why;
}

TEST(caching_config_parse, EmptyKeepsTheDefaults) {
  const caching_config config = parse_caching_config("");
  EXPECT_EQ(config.max_split_size, caching_config{}.max_split_size);
  EXPECT_EQ(parse_caching_config(" , ").roundup_power2_divisions, 0u);
}

TEST(caching_config_parse, BadKeysAndValuesSayWhat) {
  EXPECT_NE(error_of("max_split:4").find("unknown key \"max_split\""), std::string::npos);
  EXPECT_NE(error_of("max_split_size_mb").find("is not key:value"), std::string::npos);
  EXPECT_NE(error_of("max_split_size_mb:lots").find("non-negative integer"), std::string::npos);
  EXPECT_NE(error_of("max_split_size_mb:1").find("must be above 1"), std::string::npos);
  EXPECT_NE(error_of("max_split_size_mb:-3").find("non-negative integer"), std::string::npos);
  EXPECT_NE(error_of("roundup_power2_divisions:3").find("power of two"), std::string::npos);
  EXPECT_NE(error_of("garbage_collection_threshold:1.5").find("above 0 and below 1"),
            std::string::npos);
  EXPECT_NE(error_of("garbage_collection_threshold:x").find("wants a number"), std::string::npos);
  EXPECT_EQ(error_of("garbage_collection_threshold:0.6").size(), 0u);
  EXPECT_NE(error_of("backend:cuda").find("must be native"), std::string::npos);
  EXPECT_NE(error_of("expandable_segments:yes").find("True or False"), std::string::npos);
  EXPECT_NE(error_of("graph_pool_reserve_mb:big").find("non-negative integer"), std::string::npos);
  EXPECT_EQ(error_of("max_split_size_mb:0").rfind("STRATA_GPU_ALLOC_CONF: ", 0), 0u);
}

TEST(caching_config_parse, ReadsTheEnvironment) {
  ::setenv("STRATA_GPU_ALLOC_CONF", "roundup_power2_divisions:4", 1);
  EXPECT_EQ(caching_config_from_environment().roundup_power2_divisions, 4u);
  ::unsetenv("STRATA_GPU_ALLOC_CONF");
  EXPECT_EQ(caching_config_from_environment().roundup_power2_divisions, 0u);
}

}  // namespace
}  // namespace strata::gpu

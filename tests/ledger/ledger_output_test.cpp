// The ledger's text, JSON and HTML, its C API, and STRATA_SHOW_STATS at exit.
#include <strata/strata.h>
#include <strata/bfc.hpp>
#include <strata/ledger.hpp>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

TEST(LedgerOutput, TextNamesEveryResourceWithItsTag) {
  strata::bfc<> blocks;
  blocks.ledger().set_tag("frame buffers");
  void* p = blocks.allocate(4096);
  std::string text = strata::memory_ledger::take().text();
  EXPECT_NE(text.find("strata ledger"), std::string::npos) << text;
  EXPECT_NE(text.find("bfc \"frame buffers\""), std::string::npos) << text;
  EXPECT_NE(text.find("heap"), std::string::npos) << text;
  blocks.deallocate(p, 4096);
}

// python3 parses the ledger's JSON and checks that its totals add up.
TEST(LedgerOutput, JsonParsesAndItsTotalsAddUp) {
  strata::bfc<> blocks;
  blocks.ledger().set_tag("quote \" back\\slash\nnewline");
  void* p = blocks.allocate(1 << 16);
  std::string json = strata::memory_ledger::take().json();
  if (std::system("python3 -c pass >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  std::FILE* python = popen(
      "python3 -c \"import json,sys; d=json.load(sys.stdin); r=d['resources'];"
      "assert any(x['tag']=='quote \\\" back\\\\\\\\slash\\\\nnewline' for x in r), r;"
      "assert all(d['totals'][k]==sum(x['held'] for x in r if x['parent'] is None and "
      "x['domain']==k) for k in d['totals']), d\"",
      "w");
  ASSERT_NE(python, nullptr);
  std::fwrite(json.data(), 1, json.size(), python);
  EXPECT_EQ(pclose(python), 0) << json;
  blocks.deallocate(p, 1 << 16);
}

TEST(LedgerOutput, HtmlIsOnePageWithTheTreeAndEscapedTags) {
  strata::bfc<> blocks;
  blocks.ledger().set_tag("<script>");
  std::string html = strata::memory_ledger::take().html();
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);  // self-contained: nothing fetched
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

TEST(LedgerOutput, CApiSizesWritesAndRefusesBadInput) {
  strata::bfc<> blocks;
  std::size_t length = strata_ledger_write(STRATA_LEDGER_JSON, nullptr, 0);
  ASSERT_GT(length, 0u);
  std::string buffer(length + 1, '\0');
  EXPECT_EQ(strata_ledger_write(STRATA_LEDGER_JSON, buffer.data(), buffer.size()), length);
  EXPECT_EQ(buffer[0], '{');
  EXPECT_EQ(buffer[length], '\0');
  char small[8];
  EXPECT_EQ(strata_ledger_write(STRATA_LEDGER_TEXT, small, sizeof small),
            strata_ledger_write(STRATA_LEDGER_TEXT, nullptr, 0));
  EXPECT_EQ(small[7], '\0');

  errno = 0;
  EXPECT_EQ(strata_ledger_write(7, nullptr, 0), 0u);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(strata_ledger_write(STRATA_LEDGER_TEXT, nullptr, 10), 0u);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(strata_ledger_print(stdout, -1), -1);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(strata_ledger_totals(nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
}

// The child re-executes this program with STRATA_SHOW_STATS=1 in its environment;
// the ledger lists what is still live at exit (statics made later are gone by then).
TEST(LedgerOutputDeathTest, ShowStatsPrintsTheLedgerAtExit) {
  setenv("STRATA_SHOW_STATS", "1", 1);
  EXPECT_EXIT(
      {
        auto* blocks = new strata::bfc<>;
        blocks->ledger().set_tag("at exit");
        (void)blocks->allocate(1000);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "strata ledger(.|\n)*bfc \"at exit\"");
  unsetenv("STRATA_SHOW_STATS");
}

}  // namespace

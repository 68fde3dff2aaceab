// `podsim profile report` in a real browser: two simulated pod runs (a dot and an
// all-reduce on v5e:2x2 and v5e:4x2) go into one report, which headless Chromium
// (Debian's chromium) loads; the scripts must finish without an error, and the figures
// read back from the page's DOM must be those `podsim profile summary` prints for the
// same profiles. A screenshot is taken as well.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tests/tools/podsim_cli.h"

namespace podsim::traces {
namespace {

using cli_testing::podsim;

constexpr const char* kChromium = "/usr/bin/chromium";

constexpr const char* kModule = R"re(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[128,256] parameter(0)
  w = f32[256,256] parameter(1)
  d = f32[128,256] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(step)/dense/dot_general" source_file="model.py" source_line=42}
  ROOT r = f32[128,256] all-reduce(d), to_apply=add
}
)re";

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs the command, stdout to `out`, stderr to `err`; returns its exit status.
int run(const std::string& command, const std::filesystem::path& out, const std::filesystem::path& err) {
  const int status = std::system((command + " > " + out.string() + " 2> " + err.string()).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string chromium(const std::string& flags, const std::filesystem::path& page) {
  return std::string(kChromium) +
         " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --hide-scrollbars --enable-logging=stderr --v=0"
         " --virtual-time-budget=10000 " + flags + " file://" + page.string();
}

// "21,130" -> 21130
uint64_t number(std::string text) {
  std::erase(text, ',');
  return std::stoull(text);
}

class ReportInBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kChromium))
      GTEST_SKIP() << kChromium << " is missing: install chromium (scripts/setup.sh test)";
    dir_ = std::filesystem::temp_directory_path() / ("podsim_report_browser_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
};

TEST_F(ReportInBrowser, LoadsWithoutErrorsAndShowsTheSummarysFigures) {
  std::ofstream(dir_ / "m.hlo") << kModule;
  const std::string pods[] = {"v5e:2x2", "v5e:4x2"};
  for (const std::string& pod : pods) {
    const auto r = podsim(fmt::format("run {} --backend sim --topology {} --timing-only --quiet --profile {}",
                                      (dir_ / "m.hlo").string(), pod, (dir_ / (pod.substr(4) + ".json")).string()));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const std::filesystem::path page = dir_ / "report.html";
  const auto report = podsim(fmt::format("profile report {} {} --label small --label large -o {}",
                                         (dir_ / "2x2.json").string(), (dir_ / "4x2.json").string(), page.string()));
  ASSERT_EQ(report.exit_code, 0) << report.output;

  const std::filesystem::path dom = dir_ / "dom.html", log = dir_ / "chromium.log";
  ASSERT_EQ(run(chromium("--dump-dom", page), dom, log), 0) << read(log);
  const std::string html = read(dom), console = read(log);
  // The page's scripts ran to their end, with no error on the page or in the console.
  EXPECT_TRUE(std::regex_search(html, std::regex(R"re(<body data-render="done" data-render-ms="\d+">)re")))
      << html.substr(0, 2000);
  EXPECT_EQ(html.find("data-errors"), std::string::npos);
  EXPECT_EQ(console.find("Uncaught"), std::string::npos) << console;

  for (int run_index = 0; run_index < 2; ++run_index) {
    SCOPED_TRACE(pods[run_index]);
    const auto summary = podsim("profile summary " + (dir_ / (pods[run_index].substr(4) + ".json")).string());
    ASSERT_EQ(summary.exit_code, 0) << summary.output;
    // The slowest chip's cycles.
    uint64_t cycles = 0;
    const std::regex chip_line(R"re(\n(chip \d+ \((\d+),(\d+),0\) \(v5e\)): ([\d,]+) cycles)re");
    int chips = 0;
    for (std::sregex_iterator it(summary.output.begin(), summary.output.end(), chip_line), end; it != end; ++it) {
      cycles = std::max(cycles, number((*it)[4]));
      ++chips;
    }
    ASSERT_GT(chips, 0) << summary.output;
    std::smatch m;
    const std::string cell = fmt::format(R"re(data-run="{}" data-metric="cycles" data-value="(\d+)")re", run_index);
    ASSERT_TRUE(std::regex_search(html, m, std::regex(cell))) << cell;
    EXPECT_EQ(number(m[1]), cycles);
    // The all-reduce's time and share in the op table, as the summary prints them over all chips.
    const std::regex summary_op(R"re(\nr\s+all-reduce\s+([\d.]+ us)\s+([\d.]+%))re");
    ASSERT_TRUE(std::regex_search(summary.output, m, summary_op)) << summary.output;
    const std::string time = m[1], share = m[2];
    const std::regex dom_op(fmt::format(R"re(<tr id="op-{}-\d+"><td data-value="r" title="">r</td><td[^>]*>[^<]*</td>)re"
                                        R"re(<td class="num" data-value="[^"]*">([^<]+)</td><td class="num" data-value="[^"]*">([^<]+)</td>)re",
                                        run_index));
    ASSERT_TRUE(std::regex_search(html, m, dom_op)) << html.substr(0, 4000);
    EXPECT_EQ(m[1], time);
    EXPECT_EQ(m[2], share);
    // The dot's row names it as the HLO's metadata does.
    EXPECT_NE(html.find("<td data-value=\"d\" title=\"jit(step)/dense/dot_general, model.py:42\">d</td>"),
              std::string::npos);
    // The critical path's first unit and its share.
    ASSERT_TRUE(std::regex_search(summary.output, m, std::regex(R"re(critical path on [^\n]*\n[^\n]*\n[^\n]*\n  (\w+)\s+[\d.]+ [nmu]?s\s+([\d.]+%))re")))
        << summary.output;
    const std::string unit = m[1], unit_share = m[2];
    const std::regex dom_path(fmt::format(R"re(id="critical-path-{}"><thead>.*?</thead><tbody>\n<tr><td>(\w+)</td><td[^>]*>[^<]*</td><td class="num">([^<]+)</td>)re", run_index));
    ASSERT_TRUE(std::regex_search(html, m, dom_path));
    EXPECT_EQ(m[1], unit);
    EXPECT_EQ(m[2], unit_share);
    // The script drew the torus: a line per link with its busy share, as the summary
    // prints each link track (every chip runs as long as the slowest here).
    const std::regex link_line(R"re(  (ICI [xy][+-] \d+->\d+)\s+ici\s+[\d,]+\s+([\d.]+%))re");
    int links = 0;
    for (std::sregex_iterator it(summary.output.begin(), summary.output.end(), link_line), end; it != end; ++it) {
      std::string name = (*it)[1].str();  // the DOM's text has "->" as "-&gt;"
      name.replace(name.find('>'), 1, "&gt;");
      const std::string title = fmt::format("<title>{}: {} busy</title>", name, (*it)[2].str());
      const size_t section = html.find(fmt::format("id=\"heat-{}\"", run_index));
      const size_t next = html.find("id=\"heat-", section + 1);
      const size_t at = html.find(title, section);
      EXPECT_TRUE(at != std::string::npos && at < next) << title;
      ++links;
    }
    EXPECT_GE(links, 2 * chips);
    // A chip choice per chip for the timeline.
    const std::string select = fmt::format("id=\"chip-select-{}\"", run_index);
    const size_t from = html.find(select), to = html.find("</select>", from);
    ASSERT_NE(from, std::string::npos);
    int options = 0;
    for (size_t at = html.find("<option", from); at != std::string::npos && at < to; at = html.find("<option", at + 1))
      ++options;
    EXPECT_EQ(options, chips);
  }
  // The all-reduce counts as communication (by its opcode: it is named "r").
  EXPECT_TRUE(std::regex_search(html, std::regex(R"re(data-run="0" data-metric="exposed_share" data-value="0\.[1-9])re")));
  // The larger pod is slower: its step time is marked worse against the first run.
  EXPECT_TRUE(std::regex_search(html, std::regex(R"re(<td class="num worse" data-run="1" data-metric="step_seconds")re")))
      << html.substr(0, 3000);

  const std::filesystem::path shot = dir_ / "report.png";
  ASSERT_EQ(run(chromium("--window-size=1400,2000 --screenshot=" + shot.string(), page), dir_ / "out.txt", log), 0)
      << read(log);
  const std::string png = read(shot);
  ASSERT_GT(png.size(), 20000u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
}

}  // namespace
}  // namespace podsim::traces

// The HTML report's page without a browser (report_browser_integration_test loads it in
// one): figures equal to the summary's, names escaped, runs compared, long tracks merged
// into few segments.
#include "traces/html_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"
#include "traces/summary.h"

namespace podsim::traces {
namespace {

// One chip at 1 GHz: a dot of dot_cycles on the MXU at peak, then `adds` one-cycle adds
// on the VPU a cycle apart.
Profile profile(uint64_t dot_cycles, int adds = 1, const std::string& add_name = "add.2") {
  Profile p;
  p.program = "mlp";
  p.source_ops = {{"dot.1", "dot"}, {add_name, "add"}};
  ChipProfile c;
  c.name = "chip 0 (v4)";
  c.clock_hz = 1e9;
  c.peaks = {1000, 100};
  Track vpu{"VPU", "vpu", {}};
  for (int k = 0; k < adds; ++k)
    vpu.spans.push_back({"vadd", dot_cycles + 2 * k, dot_cycles + 2 * k + 1, 1, 100, 0});
  c.total_cycles = dot_cycles + 2 * adds;
  c.tracks = {{"MXU 0", "mxu", {{"mm", 0, dot_cycles, 0, 1000.0 * dot_cycles, 0}}}, vpu};
  p.chips = {c};
  return p;
}

std::string cell(const std::string& html, int run, const std::string& metric) {
  const std::string key = "data-run=\"" + std::to_string(run) + "\" data-metric=\"" + metric + "\" data-value=\"";
  const size_t at = html.find(key);
  if (at == std::string::npos) return "(none)";
  const size_t from = at + key.size();
  return html.substr(from, html.find('"', from) - from);
}

nlohmann::json data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"podsim-data\">";
  const size_t from = html.find(open) + open.size();
  return nlohmann::json::parse(html.substr(from, html.find("</script>", from) - from));
}

TEST(HtmlReport, TheHeadlineIsTheSummarys) {
  const Profile p = profile(900);
  const std::string html = html_report({{"run", p}});
  const Headline h = headline(p, summarize(p));
  EXPECT_EQ(std::stod(cell(html, 0, "step_seconds")), h.seconds);
  EXPECT_EQ(std::stoull(cell(html, 0, "cycles")), 902u);
  EXPECT_DOUBLE_EQ(std::stod(cell(html, 0, "mfu")), 900.0 / 902.0);
  EXPECT_EQ(cell(html, 0, "ici_utilization"), "");  // no links: no value
  // The op table has both ops, the dot first; the page loads the embedded Chart.js.
  EXPECT_LT(html.find("<td data-value=\"dot.1\""), html.find("<td data-value=\"add.2\""));
  EXPECT_NE(html.find("Chart.js v"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // nothing fetched
}

TEST(HtmlReport, NamesAreEscapedEverywhere) {
  const std::string html = html_report({{"<i>run</i>", profile(10, 1, "</script><b>x")}});
  EXPECT_EQ(html.find("<b>x"), std::string::npos);
  EXPECT_NE(html.find("&lt;/script&gt;&lt;b&gt;x"), std::string::npos);
  EXPECT_NE(html.find("&lt;i&gt;run&lt;/i&gt;"), std::string::npos);
  EXPECT_EQ(data(html)[0]["op_names"][1], "</script><b>x");  // the JSON block keeps the name
}

TEST(HtmlReport, RunsSideBySideMarkWhatGotWorse) {
  const std::string html = html_report({{"before", profile(900)}, {"after", profile(1800)}, {"same", profile(900)}});
  EXPECT_NE(html.find("<td class=\"num worse\" data-run=\"1\" data-metric=\"step_seconds\""), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num \" data-run=\"2\" data-metric=\"step_seconds\""), std::string::npos);
  EXPECT_NE(html.find("id=\"op-comparison\""), std::string::npos);
  EXPECT_NE(html.find("(+99.8%)"), std::string::npos);  // 1802 / 902 cycles
}

TEST(HtmlReport, LongTracksAreMergedIntoFewSegments) {
  ReportOptions options;
  options.segments_per_track = 100;
  const nlohmann::json d = data(html_report({{"run", profile(10, 5000)}}, options));
  const nlohmann::json& vpu = d[0]["chips"][0]["tracks"][1]["segments"];
  EXPECT_LE(vpu.size(), 100u);
  EXPECT_GE(vpu.size(), 1u);
  // The segments still cover the adds: from the first add's start to the last one's end.
  EXPECT_EQ(vpu.front()[0], 10);
  EXPECT_EQ(vpu.back()[1], 10 + 2 * 4999 + 1);
}

// Chips named with their torus coordinates (and slice) are placed on the torus map, the
// slices side by side.
TEST(HtmlReport, ChipsArePlacedOnTheTorusSliceBySlice) {
  Profile p = profile(10);
  const ChipProfile chip = p.chips[0];
  p.chips.clear();
  for (int k = 0; k < 4; ++k) {
    p.chips.push_back(chip);
    p.chips.back().name = fmt::format("chip {} ({},0,0 slice {}) (v5e)", k, k % 2, k / 2);
  }
  const std::string html = html_report({{"run", p}});
  EXPECT_NE(html.find("<td>v5e 2x1 x 2 slices (4 chips)</td>"), std::string::npos);
  const nlohmann::json d = data(html)[0];
  EXPECT_EQ(d["chips"][3]["coords"], nlohmann::json({1, 0, 1}));
  EXPECT_EQ(d["columns"], nlohmann::json({"slice 0", "slice 1"}));
  p.chips[2].name = "chip 2";  // one chip without a place: no map
  EXPECT_TRUE(data(html_report({{"run", p}}))[0]["chips"][3]["coords"].is_null());
}

TEST(HtmlReport, NeedsAProfile) { EXPECT_THROW(html_report({}), Error); }

}  // namespace
}  // namespace podsim::traces

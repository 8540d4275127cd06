#include "gpu_plot.hpp"

#include <algorithm>
#include <cstdio>

#include "byte_units.hpp"

namespace strata_replay {

namespace {

constexpr double width = 900, height = 440, left = 90, right = 220, top = 30, bottom = 50;
const char* const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                               "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

// A number for an SVG attribute.
std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", v);
  return text;
}

// Text with the characters XML reserves escaped.
std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

}  // namespace

// Axes scaled to the largest reserved figure and the record count.
std::string gpu_plot_svg(const std::vector<gpu_run>& runs, std::uint64_t records) {
  double most = 1;
  for (const gpu_run& r : runs) most = std::max(most, static_cast<double>(r.result.peak_reserved));
  const double span = static_cast<double>(std::max<std::uint64_t>(records, 1));
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  auto x = [&](double event) { return left + event / span * plot_w; };
  auto y = [&](double bytes) { return top + plot_h - bytes / most * plot_h; };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) +
                    "\" height=\"" + num(height) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n"
                    "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + num(left) + "\" y=\"18\" font-size=\"14\">reserved bytes over the trace " +
         "(dashed: allocated, first configuration; x: out of memory)</text>\n";
  for (int tick = 0; tick <= 4; ++tick) {
    const double bytes = most * tick / 4;
    svg += "<line x1=\"" + num(left) + "\" x2=\"" + num(left + plot_w) + "\" y1=\"" +
           num(y(bytes)) + "\" y2=\"" + num(y(bytes)) + "\" stroke=\"#ddd\"/>\n";
    svg += "<text x=\"" + num(left - 6) + "\" y=\"" + num(y(bytes) + 4) +
           "\" text-anchor=\"end\">" + human_bytes(bytes) + "</text>\n";
  }
  svg += "<text x=\"" + num(left + plot_w / 2) + "\" y=\"" + num(height - 12) +
         "\" text-anchor=\"middle\">trace record (of " + std::to_string(records) + ")</text>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const char* colour = colours[i % std::size(colours)];
    const strata::gpu::replay_result& r = runs[i].result;
    std::string reserved, allocated;
    for (const strata::gpu::replay_sample& s : r.timeline) {
      const std::string px = num(x(static_cast<double>(s.event)));
      reserved += px + "," + num(y(static_cast<double>(s.reserved))) + " ";
      allocated += px + "," + num(y(static_cast<double>(s.allocated))) + " ";
    }
    svg += "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"" + std::string(colour) +
           "\" points=\"" + reserved + "\"/>\n";
    if (i == 0)
      svg += "<polyline fill=\"none\" stroke-dasharray=\"4 3\" stroke=\"#555\" points=\"" +
             allocated + "\"/>\n";
    if (r.out_of_memory) {
      const double cx = x(static_cast<double>(r.oom_record)), cy = y(most);
      svg += "<path d=\"M" + num(cx - 6) + "," + num(cy - 6) +
             " l12,12 m0,-12 l-12,12\" "
             "stroke=\"" +
             std::string(colour) + "\" stroke-width=\"3\"/>\n";
    }
    const double ly = top + 16.0 * static_cast<double>(i);
    svg += "<rect x=\"" + num(width - right + 10) + "\" y=\"" + num(ly) +
           "\" width=\"12\" height=\"3\" fill=\"" + colour + "\"/>\n";
    svg += "<text x=\"" + num(width - right + 28) + "\" y=\"" + num(ly + 5) + "\">" +
           escape(runs[i].config.empty() ? "(defaults)" : runs[i].config) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace strata_replay

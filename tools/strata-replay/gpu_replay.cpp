#include "gpu_replay.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "byte_units.hpp"

#ifdef STRATA_REPLAY_GPU
#include <strata/gpu/caching/config.hpp>
#include <strata/gpu/caching/replay.hpp>
#include <strata/trace_reader.hpp>

#include "gpu_plot.hpp"
#endif

namespace strata_replay {

#ifndef STRATA_REPLAY_GPU

// Built with STRATA_BUILD_GPU=OFF: say so.
int run_gpu(int, char**) {
  std::fprintf(stderr,
               "strata-replay: --gpu needs the GPU half (built with STRATA_BUILD_GPU=OFF)\n");
  return 2;
}

#else

namespace {

using strata::trace::device_record;

struct gpu_options {
  std::string trace;
  std::uint64_t device_memory = std::uint64_t{80} << 30;
  std::vector<std::string> configs;
  long device = -1;  // -1: the first record's
  std::string plot;
  std::string json;
};

// The --gpu usage text.
void gpu_usage(std::FILE* to) {
  std::fputs(
      "usage: strata-replay --gpu TRACE [options]\n"
      "  --device-memory SIZE  the simulated device's memory (default 80GiB; K/M/G/T, KiB..,"
      " KB..)\n"
      "  --config CONF         a STRATA_GPU_ALLOC_CONF configuration to replay under\n"
      "                        (repeatable; default: one run with the defaults)\n"
      "  --device N            replay that device's records (default: the first record's)\n"
      "  --plot FILE           reserved bytes over the trace: FILE.svg, or FILE.html with the"
      " table\n"
      "  --json FILE           write the results as JSON\n",
      to);
}

[[noreturn]] void refuse(const std::string& why) {
  std::fprintf(stderr, "strata-replay: %s\n", why.c_str());
  std::exit(2);
}

// Parses the --gpu command line; exits with a message on a mistake.
gpu_options parse_gpu_options(int argc, char** argv) {
  gpu_options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) refuse(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      gpu_usage(stdout);
      std::exit(0);
    } else if (arg == "--gpu") {
      o.trace = value();
    } else if (arg == "--device-memory") {
      const std::string text = value();
      const auto bytes = parse_bytes(text);
      if (!bytes || *bytes == 0)
        refuse("--device-memory takes a size such as 80GiB, not '" + text + "'");
      o.device_memory = *bytes;
    } else if (arg == "--config") {
      o.configs.push_back(value());
    } else if (arg == "--device") {
      const std::string text = value();
      char* end = nullptr;
      o.device = std::strtol(text.c_str(), &end, 10);
      if (text.empty() || *end != 0 || o.device < 0)
        refuse("--device takes an ordinal, not '" + text + "'");
    } else if (arg == "--plot") {
      o.plot = value();
    } else if (arg == "--json") {
      o.json = value();
    } else {
      gpu_usage(stderr);
      std::exit(2);
    }
  }
  if (o.trace.empty()) {
    gpu_usage(stderr);
    std::exit(2);
  }
  if (o.configs.empty()) o.configs.emplace_back();
  return o;
}

// The configuration's name in the table.
std::string label(const std::string& config) {
  return config.empty() ? "(defaults)" : config;
}

// Whether and where a run ran out.
std::string oom_cell(const strata::gpu::replay_result& r) {
  if (!r.out_of_memory) return "no";
  return "at record " + std::to_string(r.oom_record) + " (" +
         human_bytes(static_cast<double>(r.oom_bytes)) + ")";
}

// The run to recommend: the lowest peak reserved of those that do not run out; -1 when all do.
long recommended(const std::vector<gpu_run>& runs) {
  long best = -1;
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (!runs[i].result.out_of_memory &&
        (best < 0 ||
         runs[i].result.peak_reserved < runs[static_cast<std::size_t>(best)].result.peak_reserved))
      best = static_cast<long>(i);
  return best;
}

// The table, as markdown; the same rows go into the HTML page.
std::string table(const std::vector<gpu_run>& runs) {
  std::string out =
      "| configuration | peak reserved | peak allocated | fragmentation at peak | cudaMallocs | "
      "out of memory | replay time |\n|---|---|---|---|---|---|---|\n";
  for (const gpu_run& run : runs) {
    const strata::gpu::replay_result& r = run.result;
    char row[512];
    std::snprintf(
        row, sizeof row, "| %s | %s | %s | %.1f%% | %llu | %s | %.2f s |\n",
        label(run.config).c_str(), human_bytes(static_cast<double>(r.peak_reserved)).c_str(),
        human_bytes(static_cast<double>(r.peak_allocated)).c_str(), r.fragmentation_at_peak * 100.0,
        static_cast<unsigned long long>(r.device_allocations), oom_cell(r).c_str(), run.seconds);
    out += row;
  }
  return out;
}

// The results as JSON, for scripts.
bool write_json(const std::string& path, const gpu_options& o,
                const strata::gpu::recorded_summary& recorded, const std::vector<gpu_run>& runs) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f,
               "{\n  \"trace\": \"%s\",\n  \"device_memory\": %llu,\n  \"recorded_peak_reserved\": "
               "%zu,\n  \"recorded_device_allocations\": %llu,\n  \"configurations\": [",
               o.trace.c_str(), static_cast<unsigned long long>(o.device_memory),
               recorded.peak_reserved,
               static_cast<unsigned long long>(recorded.device_allocations));
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const strata::gpu::replay_result& r = runs[i].result;
    std::fprintf(f,
                 "%s\n    {\"config\": \"%s\", \"peak_reserved\": %zu, \"peak_allocated\": %zu, "
                 "\"fragmentation_at_peak\": %.6f, \"device_allocations\": %llu, "
                 "\"out_of_memory\": %s, \"oom_record\": %llu, \"seconds\": %.6f}",
                 i == 0 ? "" : ",", runs[i].config.c_str(), r.peak_reserved, r.peak_allocated,
                 r.fragmentation_at_peak, static_cast<unsigned long long>(r.device_allocations),
                 r.out_of_memory ? "true" : "false", static_cast<unsigned long long>(r.oom_record),
                 runs[i].seconds);
  }
  std::fprintf(f, "\n  ],\n  \"recommended\": %ld\n}\n", recommended(runs));
  return std::fclose(f) == 0;
}

// The SVG alone, or an HTML page with the table above it.
bool write_plot(const std::string& path, const std::vector<gpu_run>& runs, std::uint64_t records,
                const std::string& summary) {
  std::string text = gpu_plot_svg(runs, records);
  if (path.ends_with(".html")) {
    std::string rows;
    for (const gpu_run& run : runs) {
      const strata::gpu::replay_result& r = run.result;
      char row[512];
      std::snprintf(
          row, sizeof row,
          "<tr><td>%s</td><td>%s</td><td>%s</td><td>%.1f%%</td><td>%llu</td><td>%s</td></tr>\n",
          label(run.config).c_str(), human_bytes(static_cast<double>(r.peak_reserved)).c_str(),
          human_bytes(static_cast<double>(r.peak_allocated)).c_str(),
          r.fragmentation_at_peak * 100.0, static_cast<unsigned long long>(r.device_allocations),
          oom_cell(r).c_str());
      rows += row;
    }
    text =
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>strata-replay --gpu</title>"
        "<style>body{font-family:sans-serif}td,th{padding:2px 10px;border-bottom:1px solid #ddd}"
        "</style></head><body>\n<pre>" +
        summary +
        "</pre>\n<table><tr><th>configuration</th>"
        "<th>peak reserved</th><th>peak allocated</th><th>fragmentation at peak</th>"
        "<th>cudaMallocs</th><th>out of memory</th></tr>\n" +
        rows + "</table>\n" + text + "</body></html>\n";
  }
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  std::fputs(text.c_str(), f);
  return std::fclose(f) == 0;
}

}  // namespace

// Read, keep one device's records, replay each configuration, report.
int run_gpu(int argc, char** argv) {
  const gpu_options o = parse_gpu_options(argc, argv);
  std::vector<strata::gpu::caching_config> configs;
  for (const std::string& text : o.configs) {
    try {
      configs.push_back(strata::gpu::parse_caching_config(text));
    } catch (const std::invalid_argument& e) {
      refuse("--config '" + text + "': " + e.what());
    }
  }
  std::vector<device_record> all;
  std::string error;
  if (!strata::trace::read_file(o.trace.c_str(), all, error)) refuse(o.trace + ": " + error);
  if (all.empty()) refuse(o.trace + " holds no device actions");
  const std::uint32_t device =
      o.device >= 0 ? static_cast<std::uint32_t>(o.device) : all.front().device;
  std::vector<device_record> records;
  records.reserve(all.size());
  for (const device_record& r : all)
    if (r.device == device) records.push_back(r);
  if (records.empty()) refuse(o.trace + " holds no actions of device " + std::to_string(device));
  const strata::gpu::recorded_summary recorded = strata::gpu::summarize(records);
  char summary[1024];
  std::snprintf(summary, sizeof summary,
                "device trace %s: %zu records of device %u (%llu allocations, %llu frees, %llu "
                "out of memory), %zu streams\nrecorded: peak reserved %s (%zu bytes), %llu "
                "cudaMallocs, peak requested %s\nreplayed on an address-only simulated device "
                "of %s\n",
                o.trace.c_str(), records.size(), device,
                static_cast<unsigned long long>(recorded.allocations),
                static_cast<unsigned long long>(recorded.frees),
                static_cast<unsigned long long>(recorded.ooms), recorded.streams,
                human_bytes(static_cast<double>(recorded.peak_reserved)).c_str(),
                recorded.peak_reserved,
                static_cast<unsigned long long>(recorded.device_allocations),
                human_bytes(static_cast<double>(recorded.peak_requested)).c_str(),
                human_bytes(static_cast<double>(o.device_memory)).c_str());
  std::fputs(summary, stdout);
  std::fflush(stdout);
  strata::gpu::replay_options options;
  options.device_memory = o.device_memory;
  options.timeline_points = o.plot.empty() ? 0 : 600;
  std::vector<gpu_run> runs;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const auto start = std::chrono::steady_clock::now();
    gpu_run run{o.configs[i], strata::gpu::replay(records, configs[i], options), 0.0};
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    runs.push_back(std::move(run));
  }
  const std::string rows = table(runs);
  std::printf(
      "\n%s\nfragmentation at peak: reserved but not allocated, as a share of reserved, "
      "when reserved peaked\n",
      rows.c_str());
  if (runs.front().result.unmatched_frees != 0)
    std::printf("not replayed: %llu frees of blocks allocated before the trace began\n",
                static_cast<unsigned long long>(runs.front().result.unmatched_frees));
  const long best = recommended(runs);
  if (best < 0)
    std::printf("recommended: none; every configuration runs out of memory on %s\n",
                human_bytes(static_cast<double>(o.device_memory)).c_str());
  else
    std::printf(
        "recommended: %s (the lowest peak reserved, %s, without running out of memory)\n",
        label(runs[static_cast<std::size_t>(best)].config).c_str(),
        human_bytes(static_cast<double>(runs[static_cast<std::size_t>(best)].result.peak_reserved))
            .c_str());
  if (!o.json.empty() && !write_json(o.json, o, recorded, runs)) refuse("cannot write " + o.json);
  if (!o.plot.empty()) {
    if (!write_plot(o.plot, runs, records.size(), summary)) refuse("cannot write " + o.plot);
    std::printf("plot: %s\n", o.plot.c_str());
  }
  return 0;
}

#endif

}  // namespace strata_replay

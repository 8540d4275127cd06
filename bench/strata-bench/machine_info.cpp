#include "machine_info.hpp"

#include <sys/utsname.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "cycle_clock.hpp"
#include "thread_team.hpp"

namespace strata_bench {

namespace {

// The first line of a file, or "" if it cannot be read.
std::string first_line(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

// The value after "key" and a colon or equals sign in a "key: value" text file.
std::string keyed_value(const std::string& path, const std::string& key) {
  std::ifstream file(path);
  for (std::string line; std::getline(file, line);) {
    if (line.rfind(key, 0) != 0) continue;
    std::size_t start = line.find_first_of(":=", key.size());
    if (start == std::string::npos) continue;
    start = line.find_first_not_of(" \t\"", start + 1);
    if (start == std::string::npos) return "";
    const std::size_t end = line.find_last_not_of(" \t\"");
    return line.substr(start, end - start + 1);
  }
  return "";
}

// The output of a shell command, trailing newline removed.
std::string command_output(const std::string& command) {
  std::string text;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char chunk[256];
    while (std::fgets(chunk, sizeof chunk, pipe) != nullptr) text += chunk;
    pclose(pipe);
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// "L1d 32K, L1i 32K, L2 1024K, L3 32768K" from the sysfs cache directories of CPU 0.
std::string cache_summary() {
  std::string summary;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    const std::string level = first_line(dir + "/level");
    if (level.empty()) break;
    const std::string type = first_line(dir + "/type");
    const char* suffix = type == "Data" ? "d" : type == "Instruction" ? "i" : "";
    if (!summary.empty()) summary += ", ";
    summary += "L" + level + suffix + " " + first_line(dir + "/size");
  }
  return summary;
}

void write_pair(json_writer& out, const char* key, const std::string& value) {
  out.key(key);
  out.value(value);
}

}  // namespace

void write_machine_info(json_writer& out, const std::vector<std::string>& packages) {
  utsname system{};
  uname(&system);
  out.begin_object();
  write_pair(out, "cpu", keyed_value("/proc/cpuinfo", "model name"));
  out.key("logical_cpus");
  out.value(static_cast<long long>(allowed_cpus().size()));
  write_pair(out, "caches", cache_summary());
  write_pair(out, "memory", keyed_value("/proc/meminfo", "MemTotal"));
  write_pair(
      out, "virtualised",
      keyed_value("/proc/cpuinfo", "flags").find("hypervisor") != std::string::npos ? "yes" : "no");
  write_pair(out, "transparent_huge_pages",
             first_line("/sys/kernel/mm/transparent_hugepage/enabled"));
  write_pair(out, "kernel", std::string(system.sysname) + " " + system.release);
  write_pair(out, "os", keyed_value("/etc/os-release", "PRETTY_NAME"));
  write_pair(out, "compiler", STRATA_BENCH_COMPILER);
  write_pair(out, "flags", STRATA_BENCH_FLAGS);
  out.key("timer");
  out.begin_object();
  out.key("ns_per_tick");
  out.value(cycle_clock().ns_per_tick);
  out.key("empty_measurement_ns");
  out.value(cycle_clock().empty_measurement_ns);
  out.end_object();
  out.key("packages");
  out.begin_object();
  for (const std::string& package : packages) {
    // A PyPI wheel names its version (name==version); anything else is a Debian package.
    const std::size_t pin = package.find("==");
    const std::string version =
        pin != std::string::npos
            ? std::string("(PyPI)")
            : command_output("dpkg-query -W -f='${Version}' " + package + " 2>/dev/null");
    write_pair(out, package.c_str(), version.empty() ? "not installed" : version);
  }
  out.end_object();
  out.end_object();
}

}  // namespace strata_bench

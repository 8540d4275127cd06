// A small service loop with a planted leak: two worker threads serve requests
// (strings and vectors through operator new, freed when each is done), and
// every request also registers a session that nothing ever unregisters. Run
// under the override with STRATA_PROFILE_LEAKS=1, the leak report's largest
// stack is remember_session's. Half way, the dump signal writes the profile.
#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

std::mutex sessions_lock;
std::vector<char*> sessions;

}  // namespace

// The planted leak: 2 KiB per request, kept in a registry nobody clears.
extern "C" __attribute__((noipa)) void remember_session(int id) {
  auto* session = new char[2048];
  session[0] = static_cast<char>(id);
  std::lock_guard<std::mutex> hold(sessions_lock);
  sessions.push_back(session);
}

// One request: a reply built and thrown away.
extern "C" __attribute__((noipa)) std::size_t serve(int id) {
  std::vector<std::string> parts;
  for (int i = 0; i < 16; ++i) parts.emplace_back(200, static_cast<char>('a' + (id + i) % 26));
  auto reply = std::make_unique<std::vector<char>>(8192, 'x');
  remember_session(id);
  return parts.size() + reply->size();
}

int main() {
  std::size_t total = 0;
  std::mutex total_lock;
  auto worker = [&](int first) {
    std::size_t mine = 0;
    for (int id = first; id < first + 3000; ++id) mine += serve(id);
    std::lock_guard<std::mutex> hold(total_lock);
    total += mine;
  };
  std::thread a(worker, 0), b(worker, 3000);
  a.join();
  raise(SIGUSR1);  // STRATA_PROFILE_SIGNAL: the profile written now
  b.join();
  struct stat written {};
  const char* path = std::getenv("STRATA_PROFILE");
  std::printf("served %zu bytes; profile %s after the signal\n", total,
              path != nullptr && stat(path, &written) == 0 ? "written" : "missing");
  return 0;
}

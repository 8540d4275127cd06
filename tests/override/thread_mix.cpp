// A multi-threaded C++ program that moves ownership between threads the ways real code
// does: producer/consumer queues of strings and vectors, shared_ptr handoffs where the
// last owner is another thread, and std::map / std::string churn. It prints a checksum
// that depends only on the work done, never on scheduling, so every allocator must
// print the same.
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

// One unit of work passed from a producer to a consumer.
struct message {
  std::string text;
  std::vector<std::uint64_t> numbers;
  std::shared_ptr<const std::string> shared_tail;
};

// A blocking queue of owned messages; closed when all producers are done.
class message_queue {
 public:
  void push(std::unique_ptr<message> item) {
    {
      std::lock_guard lock(mutex_);
      items_.push_back(std::move(item));
    }
    ready_.notify_one();
  }

  // The next message, or nullptr once the queue is closed and drained.
  std::unique_ptr<message> pop() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return !items_.empty() || closed_; });
    if (items_.empty()) return nullptr;
    auto item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::unique_ptr<message>> items_;
  bool closed_ = false;
};

// splitmix64: a deterministic per-thread random stream.
std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// FNV-1a over a string, folded into a running hash.
std::uint64_t hash_text(const std::string& text, std::uint64_t hash = 1469598103934665603ULL) {
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ULL;
  return hash;
}

constexpr int producer_count = 4;
constexpr int consumer_count = 4;
constexpr int messages_per_producer = 20000;

// Builds messages of varied sizes; shares one tail string among several messages.
void produce(int producer, message_queue& queue) {
  std::uint64_t state = 1000 + producer;
  std::shared_ptr<const std::string> tail;
  for (int i = 0; i < messages_per_producer; ++i) {
    auto item = std::make_unique<message>();
    std::uint64_t draw = next_random(state);
    item->text.assign(1 + draw % 200, static_cast<char>('a' + draw % 26));
    item->text += std::to_string(i);
    item->numbers.resize(draw % 64);
    for (auto& number : item->numbers) number = next_random(state) % 1000;
    if (i % 16 == 0) {
      tail = std::make_shared<const std::string>(std::string(64 + draw % 4000, 't') +
                                                 std::to_string(producer));
    }
    item->shared_tail = tail;
    queue.push(std::move(item));
  }
}

// Consumes messages, folding each into an order-independent sum, and churns a map.
std::uint64_t consume(message_queue& queue) {
  std::uint64_t sum = 0;
  std::map<std::string, std::vector<std::uint64_t>> recent;
  while (auto item = queue.pop()) {
    std::uint64_t value = hash_text(item->text) ^ hash_text(*item->shared_tail);
    for (auto number : item->numbers) value += number;
    sum += value;
    recent[item->text.substr(0, 8)] = std::move(item->numbers);
    if (recent.size() > 500) recent.erase(recent.begin(), std::next(recent.begin(), 250));
  }
  return sum;
}

// Each thread builds a map of strings that the next thread destroys.
std::uint64_t cross_thread_maps() {
  constexpr int thread_count = 6;
  std::vector<std::unique_ptr<std::unordered_map<int, std::string>>> maps(thread_count);
  std::vector<std::thread> builders;
  for (int t = 0; t < thread_count; ++t) {
    builders.emplace_back([&maps, t] {
      auto map = std::make_unique<std::unordered_map<int, std::string>>();
      for (int i = 0; i < 20000; ++i) (*map)[i * 7 + t] = std::string(i % 97 + 1, 'm');
      maps[t] = std::move(map);
    });
  }
  for (auto& builder : builders) builder.join();
  std::vector<std::uint64_t> sums(thread_count);
  std::vector<std::thread> destroyers;
  for (int t = 0; t < thread_count; ++t) {
    destroyers.emplace_back([&maps, &sums, t] {
      auto map = std::move(maps[(t + 1) % thread_count]);
      for (const auto& [key, text] : *map) sums[t] += static_cast<std::uint64_t>(key) * text.size();
    });
  }
  for (auto& destroyer : destroyers) destroyer.join();
  std::uint64_t total = 0;
  for (auto sum : sums) total += sum;
  return total;
}

}  // namespace

int main() {
  message_queue queue;
  std::vector<std::thread> producers;
  std::vector<std::thread> consumers;
  std::vector<std::uint64_t> consumer_sums(consumer_count);
  for (int c = 0; c < consumer_count; ++c) {
    consumers.emplace_back([&queue, &consumer_sums, c] { consumer_sums[c] = consume(queue); });
  }
  for (int p = 0; p < producer_count; ++p) producers.emplace_back(produce, p, std::ref(queue));
  for (auto& producer : producers) producer.join();
  queue.close();
  for (auto& consumer : consumers) consumer.join();
  std::uint64_t queue_sum = 0;
  for (auto sum : consumer_sums) queue_sum += sum;
  std::printf("queue checksum %016llx\n", static_cast<unsigned long long>(queue_sum));
  std::printf("map checksum %016llx\n", static_cast<unsigned long long>(cross_thread_maps()));
  return 0;
}

// Thread pool and CPU budget: correctness under many small jobs, pinning, budget caps, and the
// cgroup quota/cpuset read from fake cgroup files.
#include <doctest/doctest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "planner_test_machines.h"
#include "topology/cpu_budget.h"
#include "runtime/error.h"
#include "runtime/thread_pool.h"
#include "topology/cgroup.h"

using namespace ckjit;

namespace {

std::vector<int> my_allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> ids;
  REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) ids.push_back(i);
  return ids;
}

std::string make_temp_dir() {
  char tmpl[] = "/tmp/ckjit-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  REQUIRE(f.good());
  f << text;
}

// A cgroup v2 tree with one group "ckjit" holding the given cpu.max and cpuset.
topo::CgroupLimits fake_cgroup(const std::string& cpu_max, const std::string& cpuset) {
  std::string root = make_temp_dir();
  write_file(root + "/cgroup.controllers", "cpuset cpu io memory\n");
  REQUIRE(mkdir((root + "/ckjit").c_str(), 0755) == 0);
  write_file(root + "/ckjit/cpu.max", cpu_max);
  if (!cpuset.empty()) write_file(root + "/ckjit/cpuset.cpus.effective", cpuset);
  auto limits = topo::read_cgroup_limits(root, "0::/ckjit\n");
  std::system(("rm -rf '" + root + "'").c_str());
  return limits;
}

void check_each_task_once(ThreadPool& pool, int jobs) {
  std::vector<std::atomic<int>> hits(64);
  uint32_t seed = 7;
  for (int j = 0; j < jobs; ++j) {
    seed = seed * 1103515245u + 12345u;
    std::size_t n = (seed >> 16) % 64;
    for (auto& h : hits) h.store(0);
    std::atomic<int> bad_worker{0};
    pool.run(n, [&](std::size_t t, int w) {
      if (w < 0 || w >= pool.size()) bad_worker.fetch_add(1);
      hits[t].fetch_add(1);
    });
    REQUIRE(bad_worker.load() == 0);
    for (std::size_t t = 0; t < 64; ++t) REQUIRE(hits[t].load() == (t < n ? 1 : 0));
  }
}

}  // namespace

TEST_SUITE("thread_pool") {

TEST_CASE("every task of many small jobs runs exactly once (spinning and blocking waits)") {
  for (bool blocking : {false, true}) {
    ThreadPoolOptions o;
    o.threads = 3;  // may exceed the cores: correctness must not depend on it
    o.blocking_wait = blocking;
    o.spin_us = 5;
    ThreadPool pool(o);
    CHECK(pool.size() == 3);
    check_each_task_once(pool, 1000);
  }
}

TEST_CASE("2-D grid covers every block once") {
  ThreadPoolOptions o;
  o.threads = 3;
  ThreadPool pool(o);
  const std::size_t rows = 7, cols = 5;
  std::vector<std::atomic<int>> hits(rows * cols);
  pool.parallel_for_2d(rows, cols, [&](std::size_t r, std::size_t c, int) { hits[r * cols + c].fetch_add(1); });
  for (auto& h : hits) CHECK(h.load() == 1);
}

TEST_CASE("a task's exception reaches the caller and the pool stays usable") {
  ThreadPoolOptions o;
  o.threads = 2;
  ThreadPool pool(o);
  CHECK_THROWS_AS(pool.run(50, [](std::size_t t, int) { if (t == 17) throw std::runtime_error("task 17"); }),
                  std::runtime_error);
  check_each_task_once(pool, 50);
}

TEST_CASE("a run() inside a task runs serially instead of deadlocking") {
  ThreadPoolOptions o;
  o.threads = 2;
  ThreadPool pool(o);
  std::atomic<int> inner{0};
  pool.run(4, [&](std::size_t, int) { pool.run(3, [&](std::size_t, int) { inner.fetch_add(1); }); });
  CHECK(inner.load() == 12);
}

TEST_CASE("workers run on the cpus they were pinned to") {
  std::vector<int> cpus = my_allowed_cpus();
  if (cpus.size() > 4) cpus.resize(4);
  ThreadPoolOptions o;
  o.cpus = cpus;
  ThreadPool pool(o);
  REQUIRE(pool.size() == int(cpus.size()));
  CHECK(pool.notes().empty());
  CHECK(pool.worker_cpus() == cpus);
  // Each task waits until all have started, so every worker takes exactly one.
  const int n = pool.size();
  std::atomic<int> started{0};
  std::vector<std::vector<int>> affinity{std::size_t(n)};
  std::vector<int> ran_on(std::size_t(n), -1);
  std::atomic<int> timeouts{0};
  pool.run(std::size_t(n), [&](std::size_t, int w) {
    started.fetch_add(1);
    auto t0 = std::chrono::steady_clock::now();
    while (started.load() < n) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) { timeouts.fetch_add(1); break; }
      std::this_thread::yield();
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    pthread_getaffinity_np(pthread_self(), sizeof set, &set);
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) affinity[std::size_t(w)].push_back(i);
    ran_on[std::size_t(w)] = sched_getcpu();
  });
  REQUIRE(timeouts.load() == 0);
  for (int w = 0; w < n; ++w) {
    CHECK(affinity[std::size_t(w)] == std::vector<int>{cpus[std::size_t(w)]});
    CHECK(ran_on[std::size_t(w)] == cpus[std::size_t(w)]);
  }
}

TEST_CASE("the calling thread's affinity is restored when the pool goes") {
  std::vector<int> before = my_allowed_cpus();
  {
    ThreadPoolOptions o;
    o.cpus = {before.front()};
    ThreadPool pool(o);
    CHECK(my_allowed_cpus() == std::vector<int>{before.front()});
  }
  CHECK(my_allowed_cpus() == before);
}

TEST_CASE("the pool never exceeds the thread budget") {
  ThreadPoolOptions o;
  o.threads = 6;
  o.max_threads = 2;
  ThreadPool pool(o);
  CHECK(pool.size() == 2);
  REQUIRE(pool.notes().size() == 1);
  CHECK(pool.notes()[0].find("capped") != std::string::npos);
  std::atomic<int> max_worker{0};
  pool.run(100, [&](std::size_t, int w) {
    int cur = max_worker.load();
    while (w > cur && !max_worker.compare_exchange_weak(cur, w)) {}
  });
  CHECK(max_worker.load() <= 1);
}

TEST_CASE("bad pool options are errors") {
  ThreadPoolOptions dup;
  dup.cpus = {0, 0};
  CHECK_THROWS_AS(ThreadPool{dup}, Error);
  ThreadPoolOptions neg;
  neg.cpus = {-1};
  CHECK_THROWS_AS(ThreadPool{neg}, Error);
  ThreadPoolOptions none;
  none.threads = 0;
  CHECK_THROWS_AS(ThreadPool{none}, Error);
}

TEST_CASE("budget: one worker per physical core first and SMT siblings only when allowed") {
  auto m = test::synthetic_machine(4, 2, 32 << 10, 1 << 20, 32 << 20);  // cpus c and c+4 share core c
  CpuBudget b = cpu_budget(m);
  CHECK(b.max_threads == 8);
  CHECK(!b.quota_enforced);
  CHECK(choose_worker_cpus(b, 4, false) == std::vector<int>{0, 1, 2, 3});
  CHECK(choose_worker_cpus(b, 8, false) == std::vector<int>{0, 1, 2, 3});
  CHECK(choose_worker_cpus(b, 6, true) == std::vector<int>{0, 1, 2, 3, 4, 5});
  CHECK_FALSE(pool_options(b, {0, 1}).blocking_wait);
}

TEST_CASE("budget: the cgroup quota caps threads (floor) and makes workers block (fake cgroup files)") {
  auto m = test::synthetic_machine(4, 2, 32 << 10, 1 << 20, 32 << 20);
  m.cgroup = fake_cgroup("250000 100000\n", "");
  REQUIRE(m.cgroup.quota);
  CpuBudget b = cpu_budget(m);
  CHECK(b.max_threads == 2);  // 2.5 CPUs -> 2 threads, never 3
  CHECK(b.quota_enforced);
  CHECK(choose_worker_cpus(b, 8, true).size() == 2);
  ThreadPoolOptions o = pool_options(b, choose_worker_cpus(b, 8, false));
  CHECK(o.blocking_wait);
  CHECK(o.max_threads == 2);
  bool mentioned = false;
  for (const auto& r : b.reasons) mentioned |= r.find("quota 2.50") != std::string::npos;
  CHECK(mentioned);

  m.cgroup = fake_cgroup("50000 100000\n", "");  // half a CPU still allows one thread
  CHECK(cpu_budget(m).max_threads == 1);
}

TEST_CASE("budget: the cgroup cpuset limits the cpus (fake cgroup files)") {
  auto m = test::synthetic_machine(4, 2, 32 << 10, 1 << 20, 32 << 20);
  m.cgroup = fake_cgroup("max 100000\n", "2-3,5\n");
  REQUIRE(m.cgroup.cpuset);
  CpuBudget b = cpu_budget(m);
  CHECK(b.cpus == std::vector<int>{2, 3, 5});
  CHECK(b.max_threads == 3);
  CHECK(b.cores.size() == 3);  // cores 1 (cpu 5), 2 (cpu 2), 3 (cpu 3)
  auto cpus = choose_worker_cpus(b, 8, false);
  std::sort(cpus.begin(), cpus.end());
  CHECK(cpus == std::vector<int>{2, 3, 5});
  CHECK(!b.quota_enforced);
}

TEST_CASE("budget: usable_cpus from topology caps the pool even without cgroup files") {
  auto m = test::synthetic_machine(4, 1, 32 << 10, 1 << 20, 32 << 20);
  m.usable_cpus = 3;
  CpuBudget b = cpu_budget(m);
  CHECK(b.max_threads == 3);
  CHECK(choose_worker_cpus(b, 4, false).size() == 3);
}

}  // TEST_SUITE

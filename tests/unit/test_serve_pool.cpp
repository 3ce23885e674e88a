// ckjit serve's session pool on a real (tiny) model: requests get sessions first come, first
// served; a waiter whose client is gone leaves the line; shutdown wakes every waiter.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "tests/unit/serve_process.h"
#include "tools/serve/session_pool.h"

using ckjit::serve::Lease;
using ckjit::serve::SessionPool;

namespace {

ckjit_model* tiny_model() {
  ckjit_model_params mp;
  ckjit_model_params_default(&mp);
  mp.n_threads = 1;
  mp.n_ctx = 256;
  mp.use_profile = 0;
  ckjit_model* m = nullptr;
  REQUIRE_MESSAGE(ckjit_model_load(serve_test::tiny_pair().model.c_str(), nullptr, &mp, &m) == CKJIT_OK, ckjit_last_error());
  return m;
}

void wait_queued(const SessionPool& p, int n) {
  for (int i = 0; i < 1000 && p.queued() != n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(p.queued() == n);
}

}  // namespace

TEST_SUITE("serve") {

TEST_CASE("serve pool: waiters get the session in arrival order and a gone waiter leaves the line") {
  ckjit_model* m = tiny_model();
  ckjit_session_params sp;
  ckjit_session_params_default(&sp);
  {
    SessionPool pool(m, 1, sp);
    CHECK(pool.size() == 1);
    Lease held = pool.acquire(nullptr);
    REQUIRE(held);
    CHECK(pool.busy() == 1);
    std::mutex mu;
    std::vector<int> order;
    std::atomic<bool> leave{false};
    std::vector<std::thread> waiters;
    for (int i = 0; i < 4; ++i) {
      waiters.emplace_back([&, i] {
        // Waiter 2's client goes away while it waits.
        Lease l = pool.acquire([&, i] { return i == 2 && leave.load(); }, "", 5);
        std::lock_guard<std::mutex> g(mu);
        order.push_back(l ? i : -i - 10);
      });
      wait_queued(pool, i + 1);  // one at a time, so arrival order is known
    }
    leave = true;
    wait_queued(pool, 3);
    held = Lease();  // give the session back: 0, 1, 3 get it in turn
    for (auto& t : waiters) t.join();
    // Waiter 2 leaves the line before the session is given back, but its thread may record that
    // after waiter 0 has recorded its turn: the served order is what is checked.
    std::vector<int> served;
    for (int x : order)
      if (x >= 0) served.push_back(x);
    CHECK(served == std::vector<int>{0, 1, 3});
    CHECK(std::count(order.begin(), order.end(), -12) == 1);
    CHECK(order.size() == 4);
    CHECK(pool.busy() == 0);
    CHECK(pool.queued() == 0);
    // Shutdown: a waiter gets an empty lease at once.
    Lease again = pool.acquire(nullptr);
    std::thread late([&] { CHECK_FALSE(pool.acquire(nullptr)); });
    wait_queued(pool, 1);
    pool.shutdown();
    late.join();
  }
  {
    // Prefix affinity: a request takes the free session whose last prompt starts most like its own.
    SessionPool pool(m, 3, sp);
    std::vector<ckjit_session*> s;
    std::vector<Lease> held;
    for (int i = 0; i < 3; ++i) held.push_back(pool.acquire(nullptr)), s.push_back(held.back().get());
    held[0].remember("IMG-A|Read the page.");
    held[1].remember("IMG-B|Read the page.");
    held[2].remember("");
    held.clear();
    CHECK(pool.acquire(nullptr, "IMG-B|What is the title?").get() == s[1]);
    CHECK(pool.acquire(nullptr, "IMG-A|Read the page.").get() == s[0]);
    // Nothing shared: the session freed last (s[0], given back just above).
    Lease any = pool.acquire(nullptr, "text only");
    CHECK(any.get() == s[0]);
  }
  ckjit_model_free(m);
}

}  // TEST_SUITE

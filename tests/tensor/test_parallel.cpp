// The thread pool of tensor/kernels/parallel.h: every task exactly once, a running thread taking
// over the tasks of one that does not run, nesting, several callers, and changing thread counts.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tensor/kernels/job_record.h"
#include "tensor/kernels/parallel.h"
#include "tensor/threads.h"

using qkv::kernels::in_parallel_task;
using qkv::kernels::parallel_for;
using qkv::kernels::parallel_tasks;

namespace {

// Sets the thread count for one test and restores it.
struct ThreadCount {
  explicit ThreadCount(int n) : saved(qkv::get_num_threads()) { qkv::set_num_threads(n); }
  ~ThreadCount() { qkv::set_num_threads(saved); }
  int saved;
};

// Runs jobs of 1..40 tasks, many in a row, and checks that each task ran exactly once per job
// on a worker numbered below the thread count.
void check_jobs(int threads, int jobs) {
  const ThreadCount count(threads);
  std::vector<std::atomic<int>> runs(40);
  std::atomic<int> bad_worker{0};
  for (int job = 0; job < jobs; ++job) {
    const int tasks = 1 + job % 40;
    for (auto& r : runs) r = 0;
    parallel_tasks(tasks, threads, 1000, [&](int64_t i, int worker) {
      runs[static_cast<size_t>(i)].fetch_add(1);
      if (worker < 0 || worker >= threads) bad_worker.fetch_add(1);
    });
    for (int i = 0; i < 40; ++i) REQUIRE(runs[static_cast<size_t>(i)].load() == (i < tasks ? 1 : 0));
  }
  CHECK(bad_worker.load() == 0);
}

}  // namespace

TEST_CASE("run_tasks runs every task exactly once, job after job, for any thread count") {
  for (const int threads : {1, 2, 3, 4, 7}) {
    CAPTURE(threads);
    check_jobs(threads, 3000);
  }
}

TEST_CASE("a running thread takes over the tasks of a thread that does not run") {
  // Whichever thread takes task 0 stops there until every other task is done, as if the operating
  // system had stopped running it. With tasks handed out as threads ask for them, the other
  // thread does the other 99; with a fixed split (half the tasks to each thread) this would wait
  // for tasks that the stopped thread holds, and time out.
  const ThreadCount count(2);
  // (The first run of a kind of job uses threads: job_record.h.)
  std::atomic<int> others_done{0};
  std::atomic<bool> timed_out{false};
  parallel_tasks(100, 2, 1000, [&](int64_t i, int) {
    if (i != 0) {
      others_done.fetch_add(1);
      return;
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (others_done.load() < 99)
      if (std::chrono::steady_clock::now() > give_up) return timed_out.store(true);
  });
  CHECK_FALSE(timed_out.load());
  CHECK(others_done.load() == 99);
}

TEST_CASE("a kernel called inside a task runs on that thread") {
  const ThreadCount count(2);
  CHECK_FALSE(in_parallel_task());
  std::atomic<int> nested_outside_task{0}, inner_runs{0};
  parallel_tasks(8, 2, 1000, [&](int64_t, int) {
    const std::thread::id me = std::this_thread::get_id();
    parallel_for(64, int64_t{1} << 30, [&](int64_t begin, int64_t end) {
      inner_runs.fetch_add(static_cast<int>(end - begin));
      if (std::this_thread::get_id() != me || !in_parallel_task()) nested_outside_task.fetch_add(1);
    });
  });
  CHECK(nested_outside_task.load() == 0);
  CHECK(inner_runs.load() == 8 * 64);
  CHECK_FALSE(in_parallel_task());
}

TEST_CASE("parallel_for covers every index from 0 to n - 1 once with any thread count") {
  for (const int threads : {1, 2, 5}) {
    const ThreadCount count(threads);
    for (const int64_t n : {1, 2, 3, 17, 1000, 100003}) {
      std::vector<int> seen(static_cast<size_t>(n));
      parallel_for(n, int64_t{1} << 24, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) ++seen[static_cast<size_t>(i)];
      });
      int64_t once = 0;
      for (const int s : seen) once += s == 1;
      CHECK(once == n);
    }
  }
}

TEST_CASE("two threads of a program may run kernels at the same time") {
  const ThreadCount count(2);
  std::atomic<int64_t> sums[2] = {0, 0};
  const auto caller = [&](int c) {
    for (int job = 0; job < 500; ++job)
      parallel_tasks(10, 2, 1000, [&](int64_t i, int) { sums[c].fetch_add(i); });
  };
  std::thread other(caller, 1);
  caller(0);
  other.join();
  CHECK(sums[0].load() == 500 * 45);
  CHECK(sums[1].load() == 500 * 45);
}

TEST_CASE(
    "a job record runs both ways first, then the faster way, checking the slower one less and less often") {
  using qkv::kernels::JobRecord;
  JobRecord r;
  // Threads first, then the caller alone.
  REQUIRE(r.next_run_parallel());
  r.add(true, 1.0);
  REQUIRE_FALSE(r.next_run_parallel());
  r.add(false, 1.8);
  // Threads were faster: they run until the first check, at run kFirstCheck.
  std::vector<bool> ways;
  for (int i = 0; i < 2 + 8 + 16 + 32; ++i) {
    const bool parallel = r.next_run_parallel();
    ways.push_back(parallel);
    r.add(parallel, parallel ? 1.0 : 1.8);
  }
  // The checks (runs on the caller alone) came at runs 8, 8 + 16 and 8 + 16 + 32: the interval
  // doubles each time a check confirms the choice.
  std::vector<int> checks;
  for (int i = 0; i < static_cast<int>(ways.size()); ++i)
    if (!ways[static_cast<size_t>(i)]) checks.push_back(i + 2);
  CHECK(checks == std::vector<int>{8, 25, 58});
}

TEST_CASE("a job record follows the machine when threads stop paying, and back") {
  using qkv::kernels::JobRecord;
  JobRecord r;
  const auto run = [&](double with_threads, double alone, int times) {
    int parallel_runs = 0;
    for (int i = 0; i < times; ++i) {
      const bool parallel = r.next_run_parallel();
      parallel_runs += parallel;
      r.add(parallel, parallel ? with_threads : alone);
    }
    return parallel_runs;
  };
  run(1.0, 1.8, 200);  // a quiet machine: threads
  CHECK(r.prefers_parallel());
  // The second core is taken: a job with threads now takes 2.5 times as long. The next check
  // finds it out, and from then on jobs run on the caller alone.
  run(2.5, 1.8, 1000);
  CHECK_FALSE(r.prefers_parallel());
  CHECK(run(2.5, 1.8, 100) <= 2);  // about one check in 64 runs or fewer
  // The core is back: at the next check (at most kLongestInterval runs away), threads again.
  run(1.0, 1.8, JobRecord::kLongestInterval + 1);
  CHECK(r.prefers_parallel());
}

// Profiler: time and memory per module path ("scope"), per autograd node
// attributed to a module, and per operator inside them, for the layer-by-
// layer profile (api_tracer.Profile).
//
// The scopes are known up front: scope i has parent parents[i] (-1 for a
// root). Frames nest on each thread: a forward scope call, or a backward
// node run attributed to a scope (or to none). Operators run inside the
// innermost frame of their thread. Timestamps are steady-clock nanoseconds.
//
// Accounting, so that nothing is counted twice:
//   forward self(s)   = the time of s's calls minus the time of the frames
//                       nested directly in them;
//   backward self(s)  = the same for the node runs attributed to s;
//   total(s)          = forward: the measured time of s's calls; backward
//                       and memory: self(s) plus the totals of s's children;
//   unattributed      = the block's time outside every frame, plus the self
//                       time of node runs attributed to no scope.
// So the self times of all scopes plus unattributed add up to the profiled
// block's time, exactly, when every frame ran on the thread that ran the
// block (on the CPU, backward runs there too); frames on other threads
// (CUDA's backward threads) add CPU time on top of the block's wall time.
//
// Thread-safety: Enter/Exit/Op*/Memory may be called from any thread
// concurrently (each thread keeps its own state, registered once); Begin,
// End and Snapshot are called by the owner with nothing else running.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/per_thread.h"

namespace api_tracer {

class Profiler {
 public:
  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  explicit Profiler(std::vector<int> parents);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  int num_scopes() const { return static_cast<int>(parents_.size()); }

  void Begin(int64_t now) { begin_ = now; }
  void End(int64_t now) { end_ = now; }

  // A forward call of `scope` on this thread.
  void EnterScope(int scope, int64_t now);
  void ExitScope(int scope, int64_t now);
  // A backward node run on this thread, attributed to `scope` (-1: none).
  void EnterNode(int scope, std::string_view node, int64_t now);
  void ExitNode(int64_t now);
  // An operator call on this thread; `name` must outlive the profiler (the
  // observer passes operator schema names, which live as long as torch).
  void EnterOp(const char* name, int64_t now);
  void ExitOp(int64_t now);
  // Bytes allocated (> 0) or freed (< 0) on this thread.
  void Memory(int64_t bytes, bool cuda);
  // The scope of this thread's innermost frame, -1 if none.
  int CurrentScope();
  // Of `candidates` (the paths of one shared module), the one whose parent is
  // CurrentScope(), else the first.
  int PickScope(const std::vector<int>& candidates);

  // A forward operator on this thread (whose id, as the observer numbers
  // threads, is `thread`) created the autograd node numbered `seq`: the
  // node's runs belong to the scope this thread is in now.
  void NoteNode(uint64_t thread, int64_t seq);
  // The scope the node `seq` created on thread `thread` belongs to, or -1.
  int NodeScope(uint64_t thread, int64_t seq) const;

  // What the profile shows, per scope and per direction (0 forward, 1
  // backward); index num_scopes() is "unattributed".
  struct OpStats {
    std::string name;
    int64_t calls = 0, total_ns = 0, self_ns = 0;
  };
  struct DirStats {
    int64_t calls = 0;     // forward calls, or node runs
    int64_t total_ns = 0;  // forward: measured; backward: self + children's totals
    int64_t self_ns = 0;
    int64_t mem_self = 0, mem_total = 0;            // CPU bytes, net
    int64_t cuda_mem_self = 0, cuda_mem_total = 0;  // CUDA bytes, net
    std::vector<OpStats> ops;                        // by total time, descending
  };
  struct Snapshot {
    std::vector<DirStats> forward, backward;  // num_scopes() + 1 each
    int64_t block_ns = 0;
    int64_t unattributed_ns = 0;
  };
  Snapshot Take() const;

  // Every frame and operator, for a timeline, by start time: kind 0 scope,
  // 1 node, 2 operator. Names live as long as the profiler.
  struct Span {
    int kind, scope;
    const char* name;
    int64_t begin, end;
    uint64_t thread;
  };
  std::vector<Span> Spans() const;

  struct ThreadData;  // one thread's frames and sums (profiler.cc)

 private:
  ThreadData& Local();

  const std::vector<int> parents_;
  int64_t begin_ = 0, end_ = 0;
  PerThread<ThreadData> threads_;
  mutable std::mutex observer_threads_mu_;  // by_observer_thread_
  std::unordered_map<uint64_t, ThreadData*> by_observer_thread_;  // for NodeScope
};

}  // namespace api_tracer

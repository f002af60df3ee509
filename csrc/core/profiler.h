// Profiler: time and memory per module path ("scope"), per autograd node
// attributed to a module, and per operator inside them, for the layer-by-
// layer profile (api_tracer.Profile).
//
// The scopes are known up front: scope i has parent parents[i] (-1 for a
// root). Frames nest on each thread: a forward scope call, or a backward
// node run attributed to a scope (or to none). Operators run inside the
// innermost frame of their thread. Timestamps are Now()'s: steady-clock
// nanoseconds (core/clock.h).
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
// The hot path is a Thread (ThisThread(): one lookup per callback), which
// keeps its own frames, sums and timeline; nothing there takes a lock but
// the rare NoteNode that starts a new run of scopes.
// Thread-safety: ThisThread(), NodeScope() and Register() from any thread,
// a Thread only from its own; Begin, End, Take and Spans by the owner with
// nothing else running.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/clock.h"
#include "core/device_timer.h"
#include "core/flat_index.h"
#include "core/per_thread.h"
#include "core/string_hash.h"

namespace api_tracer {

// What a span of the timeline is.
enum class SpanKind { kScope, kNode, kOp };  // a scope call, a node run, an operator

class Profiler {
 public:
  // A timestamp (Clock: steady-clock nanoseconds, read in a few ns).
  static int64_t Now() { return Clock::Now(); }

  // One span of the timeline; `name` (nodes and operators) lives as long
  // as the profiler.
  struct Span {
    SpanKind kind;
    int scope;
    const char* name;
    int64_t begin, end;
    uint64_t thread;
  };

  // `max_spans`: how many spans each thread keeps for the timeline; later
  // ones are counted in dropped_spans() and not kept (the sums are whole).
  // `device`: when given, every frame is also timed on the device, by a
  // DeviceTimer per thread over a backend `device()` makes for it (events,
  // no synchronization until FinishDevice()).
  using DeviceFactory = std::function<std::unique_ptr<DeviceTimer::Backend>()>;
  explicit Profiler(std::vector<int> parents, size_t max_spans = std::numeric_limits<size_t>::max(),
                    DeviceFactory device = nullptr);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  int num_scopes() const { return static_cast<int>(parents_.size()); }

  void Begin(int64_t now) { begin_ = now; }
  void End(int64_t now) { end_ = now; }
  // Frames that end from now on are not timed on the device: called with
  // whatever lock serializes frame exits from outside the observer (the
  // GIL, for module forwards), after the observer is removed.
  void StopDevice() { device_on_.store(false, std::memory_order_release); }
  // After StopDevice: waits for the device to pass the frames' events and
  // sums them. Before Take, when timing the device.
  void FinishDevice();

  class Thread;
  // The calling thread's state.
  Thread& ThisThread();

  // Makes `thread`'s notes findable by NodeScope under `id` (the observer's
  // number for the thread); once per thread, before its first NoteNode.
  void Register(Thread& thread, uint64_t id);
  // The scope the node `seq` created on the thread registered as `id`
  // belongs to, or -1; asked on `caller` (no lock when it is that thread,
  // as on the CPU, where backward runs on the forward's thread).
  int NodeScope(const Thread& caller, uint64_t id, int64_t seq) const;

  // What the profile shows, per scope and per Direction; index
  // num_scopes() is "unattributed".
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
    // Device time (when timed), as CPU time: self = the frames' time minus
    // the frames directly inside them; forward total as measured, backward
    // total = self plus the children's totals.
    int64_t device_self_ns = 0, device_total_ns = 0;
    std::vector<OpStats> ops;                        // by total time, descending
  };
  struct Snapshot {
    std::vector<DirStats> forward, backward;  // num_scopes() + 1 each
    int64_t block_ns = 0;
    int64_t unattributed_ns = 0;
    int64_t device_untimed = 0;  // frames not timed on the device
  };
  Snapshot Take() const;

  // Every kept span, by start time.
  std::vector<Span> Spans() const;
  // Spans not kept, over max_spans.
  size_t dropped_spans() const;

  class Thread {
   public:
    Thread(const Profiler& owner, uint64_t number);

    // A forward call of `scope`; its exit (exits skipped by an exception
    // are dropped when an outer frame exits).
    void EnterScope(int scope, int64_t now);
    void ExitScope(int scope, int64_t now);
    // A backward node run attributed to `scope` (-1: none).
    void EnterNode(int scope, std::string_view node, int64_t now);
    void ExitNode(int64_t now);

    // Operators by number: OpId(name) is this thread's number for an
    // operator name it has met (by address: operator schema names stay
    // where they are while their operator is registered), else -1; AddOp
    // numbers a new one and keeps a copy of its name.
    int OpId(const char* name) const { return op_ids_.Find(reinterpret_cast<uintptr_t>(name)); }
    int AddOp(const char* name);
    // Forgets which addresses name which operators when `epoch` (the
    // caller's count of operators deregistered) moved: a later operator's
    // name may be put where a deregistered one's was. Its calls so far stay.
    void SyncOpEpoch(uint64_t epoch) {
      if (epoch != op_epoch_) ForgetOpIds(epoch);
    }
    // A call of operator `op` in the innermost frame, or with op -1 a call
    // that is timed only as time nested in its caller. Calls nest.
    void EnterOp(int op, int64_t now);
    void ExitOp(int64_t now);

    // Bytes allocated (> 0) or freed (< 0).
    void Memory(int64_t bytes, bool cuda);

    // The scope of the innermost frame, -1 if none.
    int CurrentScope() const { return frames_.empty() ? -1 : frames_.back().scope; }
    // Of `candidates` (the paths of one shared module), the one whose parent
    // is CurrentScope(), else the first.
    int PickScope(const std::vector<int>& candidates) const;

    // The autograd nodes this thread creates from number `seq` on (its own
    // increasing counter) belong to the current scope, until the next note:
    // noted at every frame change with the number the next node will get.
    // Kept as runs of equal scopes.
    bool registered() const { return registered_; }
    void NoteNode(int64_t seq);
    size_t num_runs() const;
    // The scope of the run holding `seq`, -1 if none; from this thread, or
    // under runs_mu_.
    int RunScope(int64_t seq) const;

   private:
    friend class Profiler;
    struct Frame {
      bool node;
      int scope;  // -1: an unattributed node
      int64_t begin;
      int64_t nested_ns;  // time of the frames directly inside
      const char* name;   // a node's
      uint32_t device;    // its start event, when timing the device
    };
    struct OpCall {
      int stat;  // into op_stats_, -1: not an operator
      int64_t begin;
      int64_t nested_ns;
    };
    struct Acc {
      int64_t calls = 0, time_ns = 0, self_ns = 0, mem = 0, cuda_mem = 0;
    };
    struct OpAcc {
      int op, slot;
      bool backward;
      int64_t calls = 0, total_ns = 0, self_ns = 0;
    };
    // The timeline, in chunks that never move.
    struct SpanLog {
      static constexpr size_t kChunk = 4096;
      std::vector<std::unique_ptr<Span[]>> chunks;
      size_t size = 0, limit, dropped = 0;
      void Add(const Span& s);
    };

    int Slot(int scope) const { return scope < 0 ? num_scopes_ : scope; }
    Acc& AccOf(int scope, bool backward) { return (backward ? backward_ : forward_)[Slot(scope)]; }
    void CloseFrame(int64_t now);
    template <typename IsIt>
    void CloseInnermost(int64_t now, IsIt is_it);
    const char* Intern(std::string_view node);

    void Open(bool node, int scope, const char* name, int64_t now);

    const std::vector<int>& parents_;
    const std::unique_ptr<DeviceTimer> device_;
    const std::atomic<bool>& device_on_;
    bool Timing() const { return device_ && device_on_.load(std::memory_order_acquire); }
    const int num_scopes_;
    const uint64_t number_;
    std::vector<Frame> frames_;
    std::vector<OpCall> calls_;
    std::vector<Acc> forward_, backward_;  // per slot
    std::vector<int> open_forwards_;       // per slot: the forward frames of the scope open now
    int64_t toplevel_ns_ = 0;              // frames with nothing around them
    void ForgetOpIds(uint64_t epoch);
    FlatIndex op_ids_;                     // name address -> op
    uint64_t op_epoch_ = 0;
    std::deque<std::string> op_names_;  // never move: spans point into them
    FlatIndex stat_ids_;  // (slot, op, direction) -> op_stats_
    std::vector<OpAcc> op_stats_;
    SpanLog spans_;
    std::unordered_set<std::string, StringHash, std::equal_to<>> node_names_;
    // Runs of scopes over this thread's node numbers: (first seq, scope),
    // increasing (the last one's scope is the one last noted); written by this thread
    // only, read by NodeScope from any thread (under runs_mu_).
    mutable std::mutex runs_mu_;
    std::vector<std::pair<int64_t, int>> runs_;
    bool registered_ = false;
    uint64_t id_ = 0;  // as registered
  };

 private:
  const std::vector<int> parents_;
  const size_t max_spans_;
  const DeviceFactory device_;
  std::atomic<bool> device_on_{true};
  int64_t begin_ = 0, end_ = 0;
  PerThread<Thread> threads_;
  mutable std::mutex registered_mu_;
  std::unordered_map<uint64_t, Thread*> registered_;  // for NodeScope
};

}  // namespace api_tracer

#include "core/profiler.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>

#include "core/per_thread.h"

namespace api_tracer {

struct Profiler::ThreadData {
  struct Frame {
    bool node;
    int scope;  // -1: an unattributed node
    int64_t begin;
    int64_t nested_ns = 0;  // time of the frames directly inside
  };
  struct Op {
    const char* name;
    int64_t begin;
    int64_t nested_ns = 0;
    int scope;
    bool backward;
  };
  struct Acc {
    int64_t calls = 0, time_ns = 0, self_ns = 0, mem = 0, cuda_mem = 0;
    std::unordered_map<const char*, OpStats> ops;
  };

  explicit ThreadData(int n, uint64_t id) : forward(n + 1), backward(n + 1), thread(id) {}

  int Slot(int scope) const { return scope < 0 ? static_cast<int>(forward.size()) - 1 : scope; }
  // The scope and direction the innermost frame charges.
  std::pair<int, bool> Current() const {
    if (frames.empty()) return {-1, false};
    return {frames.back().scope, frames.back().node};
  }

  // The interned name of an autograd node (stable for the profiler's life).
  const char* Intern(std::string_view name) {
    auto it = names.find(name);
    if (it == names.end()) it = names.emplace(std::string(name)).first;
    return it->c_str();
  }

  std::vector<Frame> frames;
  std::vector<Op> ops;
  std::vector<Acc> forward, backward;
  int64_t toplevel_ns = 0;  // frames with nothing around them
  std::vector<Span> spans;
  std::vector<const char*> node_names;  // of open nodes
  struct Less {
    using is_transparent = void;
    bool operator()(std::string_view a, std::string_view b) const { return a < b; }
  };
  std::set<std::string, Less> names;
  // Nodes this thread's forward operators created: (sequence number, scope),
  // in increasing sequence numbers (they are the thread's own counter).
  mutable std::mutex nodes_mu;
  std::vector<std::pair<int64_t, int>> node_scopes;
  bool registered = false;  // in by_observer_thread_
  uint64_t thread;
};

Profiler::Profiler(std::vector<int> parents) : parents_(std::move(parents)) {}

Profiler::~Profiler() = default;

Profiler::ThreadData& Profiler::Local() {
  return threads_.Local([this](size_t index) { return std::make_unique<ThreadData>(num_scopes(), index); });
}

void Profiler::EnterScope(int scope, int64_t now) {
  Local().frames.push_back({false, scope, now});
}

void Profiler::EnterNode(int scope, std::string_view node, int64_t now) {
  ThreadData& t = Local();
  t.frames.push_back({true, scope, now});
  t.node_names.push_back(t.Intern(node));
}

int Profiler::CurrentScope() { return Local().Current().first; }

int Profiler::PickScope(const std::vector<int>& candidates) {
  if (candidates.size() == 1) return candidates[0];
  int current = CurrentScope();
  for (int c : candidates) {
    if (parents_[c] == current) return c;
  }
  return candidates[0];
}

void Profiler::NoteNode(uint64_t thread, int64_t seq) {
  ThreadData& t = Local();
  int scope = t.Current().first;
  if (scope < 0) return;
  if (!t.registered) {
    std::lock_guard<std::mutex> lock(observer_threads_mu_);
    by_observer_thread_.emplace(thread, &t);
    t.registered = true;
  }
  std::lock_guard<std::mutex> lock(t.nodes_mu);
  t.node_scopes.emplace_back(seq, scope);
}

int Profiler::NodeScope(uint64_t thread, int64_t seq) const {
  ThreadData* t;
  {
    std::lock_guard<std::mutex> lock(observer_threads_mu_);
    auto it = by_observer_thread_.find(thread);
    if (it == by_observer_thread_.end()) return -1;
    t = it->second;
  }
  std::lock_guard<std::mutex> lock(t->nodes_mu);
  auto it = std::lower_bound(t->node_scopes.begin(), t->node_scopes.end(), std::make_pair(seq, INT32_MIN));
  return it != t->node_scopes.end() && it->first == seq ? it->second : -1;
}

// Closes the innermost frame of `t`: accounts it to its scope and direction
// and to the frame around it, and keeps its span.
static void CloseFrame(Profiler::ThreadData& t, int64_t now) {
  Profiler::ThreadData::Frame f = t.frames.back();
  t.frames.pop_back();
  const char* name = nullptr;
  if (f.node) {
    name = t.node_names.back();
    t.node_names.pop_back();
  }
  int64_t dur = now - f.begin;
  Profiler::ThreadData::Acc& acc = (f.node ? t.backward : t.forward)[t.Slot(f.scope)];
  acc.calls += 1;
  acc.time_ns += dur;
  acc.self_ns += dur - f.nested_ns;
  if (t.frames.empty()) {
    t.toplevel_ns += dur;
  } else {
    t.frames.back().nested_ns += dur;
  }
  t.spans.push_back({f.node ? 1 : 0, f.scope, name, f.begin, now, t.thread});
}

// Drops the innermost frame unaccounted (one whose exit never came).
static void DropFrame(Profiler::ThreadData& t) {
  if (t.frames.back().node) t.node_names.pop_back();
  t.frames.pop_back();
}

// Closes the innermost frame `is_it` picks, dropping the frames opened inside
// it that were never closed (a forward that raised skips inner exits).
template <typename IsIt>
static void CloseInnermost(Profiler::ThreadData& t, int64_t now, IsIt is_it) {
  while (!t.frames.empty() && !is_it(t.frames.back())) DropFrame(t);
  if (!t.frames.empty()) CloseFrame(t, now);
}

void Profiler::ExitScope(int scope, int64_t now) {
  CloseInnermost(Local(), now, [scope](const ThreadData::Frame& f) { return f.scope == scope && !f.node; });
}

void Profiler::ExitNode(int64_t now) {
  CloseInnermost(Local(), now, [](const ThreadData::Frame& f) { return f.node; });
}

void Profiler::EnterOp(const char* name, int64_t now) {
  ThreadData& t = Local();
  auto [scope, backward] = t.Current();
  t.ops.push_back({name, now, 0, scope, backward});
}

void Profiler::ExitOp(int64_t now) {
  ThreadData& t = Local();
  if (t.ops.empty()) return;
  ThreadData::Op op = t.ops.back();
  t.ops.pop_back();
  int64_t dur = now - op.begin;
  if (!t.ops.empty()) t.ops.back().nested_ns += dur;
  auto& acc = (op.backward ? t.backward : t.forward)[t.Slot(op.scope)];
  OpStats& s = acc.ops[op.name];
  if (s.name.empty()) s.name = op.name;
  s.calls += 1;
  s.total_ns += dur;  // inclusive: an operator's total holds the ones it called
  s.self_ns += dur - op.nested_ns;
  t.spans.push_back({2, op.scope, op.name, op.begin, now, t.thread});
}

void Profiler::Memory(int64_t bytes, bool cuda) {
  ThreadData& t = Local();
  auto [scope, backward] = t.Current();
  auto& acc = (backward ? t.backward : t.forward)[t.Slot(scope)];
  (cuda ? acc.cuda_mem : acc.mem) += bytes;
}

Profiler::Snapshot Profiler::Take() const {
  int n = num_scopes();
  Snapshot snap;
  snap.block_ns = end_ - begin_;
  int64_t toplevel = 0;
  for (int dir = 0; dir < 2; ++dir) {
    std::vector<DirStats>& out = dir ? snap.backward : snap.forward;
    out.resize(n + 1);
    std::vector<std::map<std::string, OpStats>> ops(n + 1);
    threads_.ForEach([&](const ThreadData& t) {
      const auto& accs = dir ? t.backward : t.forward;
      for (int i = 0; i <= n; ++i) {
        out[i].calls += accs[i].calls;
        out[i].self_ns += accs[i].self_ns;
        if (!dir) out[i].total_ns += accs[i].time_ns;
        out[i].mem_self += accs[i].mem;
        out[i].cuda_mem_self += accs[i].cuda_mem;
        for (const auto& [ptr, s] : accs[i].ops) {
          OpStats& o = ops[i][s.name];
          o.name = s.name;
          o.calls += s.calls;
          o.total_ns += s.total_ns;
          o.self_ns += s.self_ns;
        }
      }
    });
    for (int i = 0; i <= n; ++i) {
      for (auto& [name, s] : ops[i]) out[i].ops.push_back(s);
      std::stable_sort(out[i].ops.begin(), out[i].ops.end(),
                       [](const OpStats& a, const OpStats& b) { return a.total_ns > b.total_ns; });
      out[i].mem_total = out[i].mem_self;
      out[i].cuda_mem_total = out[i].cuda_mem_self;
      if (dir) out[i].total_ns = out[i].self_ns;
    }
    // Children before parents (a child's id is always larger: paths are
    // numbered in tree order), so totals flow up in one pass.
    for (int i = n - 1; i >= 0; --i) {
      int p = parents_[i];
      if (p < 0) continue;
      out[p].mem_total += out[i].mem_total;
      out[p].cuda_mem_total += out[i].cuda_mem_total;
      if (dir) out[p].total_ns += out[i].total_ns;
    }
  }
  threads_.ForEach([&](const ThreadData& t) { toplevel += t.toplevel_ns; });
  // Outside every frame, plus the self time of unattributed node runs: the
  // self times of all frames add up to the top-level frames' time.
  snap.unattributed_ns = snap.block_ns - toplevel + snap.backward[n].self_ns;
  return snap;
}

std::vector<Profiler::Span> Profiler::Spans() const {
  std::vector<Span> spans;
  threads_.ForEach([&](const ThreadData& t) { spans.insert(spans.end(), t.spans.begin(), t.spans.end()); });
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  return spans;
}

}  // namespace api_tracer

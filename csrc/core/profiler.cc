#include "core/profiler.h"

#include <algorithm>
#include <climits>
#include <map>

namespace api_tracer {

Profiler::Profiler(std::vector<int> parents, size_t max_spans, DeviceFactory device)
    : parents_(std::move(parents)), max_spans_(max_spans), device_(std::move(device)) {
  Clock::Init();
}

Profiler::~Profiler() = default;

Profiler::Thread& Profiler::ThisThread() {
  return threads_.Local([this](size_t index) { return std::make_unique<Thread>(*this, index); });
}

void Profiler::Register(Thread& thread, uint64_t id) {
  std::lock_guard<std::mutex> lock(registered_mu_);
  registered_.emplace(id, &thread);
  thread.id_ = id;
  thread.registered_ = true;
}

int Profiler::NodeScope(const Thread& caller, uint64_t id, int64_t seq) const {
  if (caller.registered_ && caller.id_ == id) return caller.RunScope(seq);  // its own notes
  const Thread* t;
  {
    std::lock_guard<std::mutex> lock(registered_mu_);
    auto it = registered_.find(id);
    if (it == registered_.end()) return -1;
    t = it->second;
  }
  std::lock_guard<std::mutex> lock(t->runs_mu_);
  return t->RunScope(seq);
}

// --- one thread ----------------------------------------------------------

Profiler::Thread::Thread(const Profiler& owner, uint64_t number)
    : parents_(owner.parents_),
      device_(owner.device_ ? std::make_unique<DeviceTimer>(owner.device_(), owner.num_scopes() + 1) : nullptr),
      device_on_(owner.device_on_),
      num_scopes_(owner.num_scopes()),
      number_(number),
      forward_(num_scopes_ + 1),
      backward_(num_scopes_ + 1),
      open_forwards_(num_scopes_ + 1) {
  spans_.limit = owner.max_spans_;
}

void Profiler::Thread::SpanLog::Add(const Span& s) {
  if (size == limit) {
    ++dropped;
    return;
  }
  if (size % kChunk == 0) chunks.push_back(std::make_unique<Span[]>(kChunk));
  chunks.back()[size % kChunk] = s;
  ++size;
}

const char* Profiler::Thread::Intern(std::string_view node) {
  auto it = node_names_.find(node);
  if (it == node_names_.end()) it = node_names_.emplace(node).first;
  return it->c_str();
}

void Profiler::Thread::Open(bool node, int scope, const char* name, int64_t now) {
  if (!node) ++open_forwards_[Slot(scope)];
  frames_.push_back({node, scope, now, 0, name, Timing() ? device_->Open() : DeviceTimer::Backend::kNoEvent});
}

void Profiler::Thread::EnterScope(int scope, int64_t now) { Open(false, scope, nullptr, now); }

void Profiler::Thread::EnterNode(int scope, std::string_view node, int64_t now) {
  Open(true, scope, Intern(node), now);
}

int Profiler::Thread::PickScope(const std::vector<int>& candidates) const {
  if (candidates.size() == 1) return candidates[0];
  int current = CurrentScope();
  for (int c : candidates) {
    if (parents_[c] == current) return c;
  }
  return candidates[0];
}

void Profiler::Thread::NoteNode(int64_t seq) {
  // Only this thread writes the runs: it reads them without the lock.
  auto last_scope = [this] { return runs_.empty() ? -1 : runs_.back().second; };
  int scope = CurrentScope();
  if (scope == last_scope()) return;
  std::lock_guard<std::mutex> lock(runs_mu_);
  // A run no node fell into (frames opened and closed with grad off, or
  // making no node) is replaced, and one that would repeat the run before
  // it joins that one: a run is kept only when a node was made in it, so
  // calls that make none (no_grad, backward) never grow the runs.
  if (!runs_.empty() && runs_.back().first == seq) runs_.pop_back();
  if (scope != last_scope()) runs_.emplace_back(seq, scope);
}

size_t Profiler::Thread::num_runs() const {
  std::lock_guard<std::mutex> lock(runs_mu_);
  return runs_.size();
}

int Profiler::Thread::RunScope(int64_t seq) const {
  // The last run starting at or before seq.
  auto it = std::upper_bound(runs_.begin(), runs_.end(), std::make_pair(seq, INT_MAX));
  return it == runs_.begin() ? -1 : std::prev(it)->second;
}

// Closes the innermost frame: accounts it to its scope and direction and to
// the frame around it, and keeps its span.
void Profiler::Thread::CloseFrame(int64_t now) {
  Frame f = frames_.back();
  frames_.pop_back();
  int64_t dur = now - f.begin;
  Acc& acc = AccOf(f.scope, f.node);
  acc.calls += 1;
  // A module's total counts its outermost open call only: a module reached
  // again inside its own call (a recursive forward) is already inside it.
  bool outermost = f.node || --open_forwards_[Slot(f.scope)] == 0;
  if (outermost) acc.time_ns += dur;
  acc.self_ns += dur - f.nested_ns;
  if (frames_.empty()) {
    toplevel_ns_ += dur;
  } else {
    frames_.back().nested_ns += dur;
  }
  spans_.Add({f.node ? SpanKind::kNode : SpanKind::kScope, f.scope, f.name, f.begin, now, number_});
  if (Timing()) {
    device_->Close(f.device, Slot(f.scope), f.node,
                   frames_.empty() ? DeviceTimer::Backend::kNoEvent : frames_.back().device, outermost);
  }
}

// Closes the innermost frame `is_it` picks, dropping the frames opened inside
// it that were never closed (a forward that raised skips inner exits).
template <typename IsIt>
void Profiler::Thread::CloseInnermost(int64_t now, IsIt is_it) {
  while (!frames_.empty() && !is_it(frames_.back())) {
    if (Timing()) device_->Discard(frames_.back().device);
    if (!frames_.back().node) --open_forwards_[Slot(frames_.back().scope)];
    frames_.pop_back();
  }
  if (!frames_.empty()) CloseFrame(now);
}

void Profiler::Thread::ExitScope(int scope, int64_t now) {
  CloseInnermost(now, [scope](const Frame& f) { return f.scope == scope && !f.node; });
}

void Profiler::Thread::ExitNode(int64_t now) {
  CloseInnermost(now, [](const Frame& f) { return f.node; });
}

int Profiler::Thread::AddOp(const char* name) {
  int op = static_cast<int>(op_names_.size());
  op_names_.emplace_back(name);
  op_ids_.Insert(reinterpret_cast<uintptr_t>(name), op);
  return op;
}

void Profiler::Thread::ForgetOpIds(uint64_t epoch) {
  op_ids_.Clear();
  op_epoch_ = epoch;
}

void Profiler::Thread::EnterOp(int op, int64_t now) {
  int stat = -1;
  if (op >= 0) {
    bool backward = !frames_.empty() && frames_.back().node;
    int slot = Slot(CurrentScope());
    uint64_t key = ((static_cast<uint64_t>(slot) << 32) | (static_cast<uint64_t>(op) << 1) | backward) + 1;
    stat = stat_ids_.Find(key);
    if (stat < 0) {
      stat = static_cast<int>(op_stats_.size());
      op_stats_.push_back({op, slot, backward});
      stat_ids_.Insert(key, stat);
    }
  }
  calls_.push_back({stat, now, 0});
}

void Profiler::Thread::ExitOp(int64_t now) {
  if (calls_.empty()) return;  // entered before the profile began
  OpCall call = calls_.back();
  calls_.pop_back();
  int64_t dur = now - call.begin;
  if (!calls_.empty()) calls_.back().nested_ns += dur;
  if (call.stat < 0) return;
  OpAcc& s = op_stats_[call.stat];
  s.calls += 1;
  s.total_ns += dur;  // inclusive: an operator's total holds the ones it called
  s.self_ns += dur - call.nested_ns;
  spans_.Add({SpanKind::kOp, s.slot == num_scopes_ ? -1 : s.slot, op_names_[s.op].c_str(), call.begin, now, number_});
}

void Profiler::Thread::Memory(int64_t bytes, bool cuda) {
  Acc& acc = AccOf(CurrentScope(), !frames_.empty() && frames_.back().node);
  (cuda ? acc.cuda_mem : acc.mem) += bytes;
}

// --- results -------------------------------------------------------------

Profiler::Snapshot Profiler::Take() const {
  int n = num_scopes();
  Snapshot snap;
  snap.block_ns = end_ - begin_;
  for (Direction dir : {kForward, kBackward}) {
    std::vector<DirStats>& out = dir == kBackward ? snap.backward : snap.forward;
    out.resize(n + 1);
    std::vector<std::map<std::string, OpStats>> ops(n + 1);
    threads_.ForEach([&](const Thread& t) {
      const auto& accs = dir == kBackward ? t.backward_ : t.forward_;
      for (int i = 0; i <= n; ++i) {
        out[i].calls += accs[i].calls;
        out[i].self_ns += accs[i].self_ns;
        if (dir == kForward) out[i].total_ns += accs[i].time_ns;
        out[i].mem_self += accs[i].mem;
        out[i].cuda_mem_self += accs[i].cuda_mem;
        if (t.device_) {
          out[i].device_self_ns += t.device_->self_ns(dir)[i];
          if (dir == kForward) out[i].device_total_ns += t.device_->total_ns(dir)[i];
        }
      }
      for (const Thread::OpAcc& s : t.op_stats_) {
        if (s.backward != (dir == kBackward)) continue;
        OpStats& o = ops[s.slot][t.op_names_[s.op]];
        o.calls += s.calls;
        o.total_ns += s.total_ns;
        o.self_ns += s.self_ns;
      }
    });
    for (int i = 0; i <= n; ++i) {
      for (auto& [name, s] : ops[i]) {
        out[i].ops.push_back(s);
        out[i].ops.back().name = name;
      }
      std::stable_sort(out[i].ops.begin(), out[i].ops.end(),
                       [](const OpStats& a, const OpStats& b) { return a.total_ns > b.total_ns; });
      out[i].mem_total = out[i].mem_self;
      out[i].cuda_mem_total = out[i].cuda_mem_self;
      if (dir == kBackward) {
        out[i].total_ns = out[i].self_ns;
        out[i].device_total_ns = out[i].device_self_ns;
      }
    }
    // Children before parents (a child's id is always larger: paths are
    // numbered in tree order), so totals flow up in one pass.
    for (int i = n - 1; i >= 0; --i) {
      int p = parents_[i];
      if (p < 0) continue;
      out[p].mem_total += out[i].mem_total;
      out[p].cuda_mem_total += out[i].cuda_mem_total;
      if (dir == kBackward) {
        out[p].total_ns += out[i].total_ns;
        out[p].device_total_ns += out[i].device_total_ns;
      }
    }
  }
  int64_t toplevel = 0;
  threads_.ForEach([&](const Thread& t) {
    toplevel += t.toplevel_ns_;
    if (t.device_) snap.device_untimed += t.device_->untimed();
  });
  // Outside every frame, plus the self time of unattributed node runs: the
  // self times of all frames add up to the top-level frames' time.
  snap.unattributed_ns = snap.block_ns - toplevel + snap.backward[n].self_ns;
  return snap;
}

void Profiler::FinishDevice() {
  // Outside the threads' lock: waiting on the device may call hooks that
  // take the GIL, which a thread meeting the profiler for the first time
  // may hold while it waits for that lock.
  std::vector<DeviceTimer*> timers;
  threads_.ForEach([&](const Thread& t) {
    if (t.device_) timers.push_back(t.device_.get());
  });
  for (DeviceTimer* timer : timers) timer->Finish();
}

std::vector<Profiler::Span> Profiler::Spans() const {
  std::vector<Span> spans;
  threads_.ForEach([&](const Thread& t) {
    for (size_t i = 0; i < t.spans_.size; ++i)
      spans.push_back(t.spans_.chunks[i / Thread::SpanLog::kChunk][i % Thread::SpanLog::kChunk]);
  });
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  return spans;
}

size_t Profiler::dropped_spans() const {
  size_t dropped = 0;
  threads_.ForEach([&](const Thread& t) { dropped += t.spans_.dropped; });
  return dropped;
}

}  // namespace api_tracer

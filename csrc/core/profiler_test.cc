#include "core/profiler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <thread>

namespace api_tracer {
namespace {

// root(0) -> a(1) -> b(2); root -> c(3)
std::vector<int> Tree() { return {-1, 0, 1, 0}; }

TEST(ProfilerTest, SelfIsTotalMinusNestedChildren) {
  Profiler p(Tree());
  Profiler::Thread& t = p.ThisThread();
  p.Begin(0);
  t.EnterScope(0, 10);
  t.EnterScope(1, 20);
  t.EnterScope(2, 30);
  t.ExitScope(2, 40);  // b: 10
  t.ExitScope(1, 60);  // a: 40, self 30
  t.EnterScope(3, 70);
  t.ExitScope(3, 75);  // c: 5
  t.EnterScope(3, 80);
  t.ExitScope(3, 90);  // c again: 10
  t.ExitScope(0, 100);  // root: 90, self 90 - 40 - 15 = 35
  p.End(110);
  auto s = p.Take();
  EXPECT_EQ(s.forward[0].total_ns, 90);
  EXPECT_EQ(s.forward[0].self_ns, 35);
  EXPECT_EQ(s.forward[1].self_ns, 30);
  EXPECT_EQ(s.forward[2].self_ns, 10);
  EXPECT_EQ(s.forward[3].calls, 2);
  EXPECT_EQ(s.forward[3].total_ns, 15);
  EXPECT_EQ(s.block_ns, 110);
  EXPECT_EQ(s.unattributed_ns, 20);  // before root and after it
  int64_t selfs = s.unattributed_ns;
  for (int i = 0; i < 4; ++i) selfs += s.forward[i].self_ns + s.backward[i].self_ns;
  EXPECT_EQ(selfs, s.block_ns);
}

TEST(ProfilerTest, AModuleReachedAgainInsideItsOwnCallCountsItsOutermostCallInItsTotal) {
  // a recursive forward: a calls itself twice deep, inside root
  Profiler p(Tree());
  Profiler::Thread& t = p.ThisThread();
  p.Begin(0);
  t.EnterScope(0, 0);
  t.EnterScope(1, 10);
  t.EnterScope(1, 20);
  t.EnterScope(1, 30);
  t.ExitScope(1, 40);  // innermost a: 10
  t.ExitScope(1, 50);  // middle a: 30, self 20
  t.ExitScope(1, 60);  // outer a: 50, self 20
  t.ExitScope(0, 70);  // root: 70, self 20
  p.End(70);
  auto s = p.Take();
  EXPECT_EQ(s.forward[1].calls, 3);
  EXPECT_EQ(s.forward[1].total_ns, 50);  // not 10 + 30 + 50
  EXPECT_EQ(s.forward[1].self_ns, 50);
  EXPECT_LE(s.forward[1].total_ns, s.forward[0].total_ns);
  EXPECT_EQ(s.forward[0].self_ns, 20);
}

TEST(ProfilerTest, BackwardNodesAndOperators) {
  Profiler p(Tree());
  Profiler::Thread& t = p.ThisThread();
  static const char* kMm = "aten::mm";
  static const char* kT = "aten::t";
  int mm = t.AddOp(kMm), tr = t.AddOp(kT);
  EXPECT_EQ(t.OpId(kMm), mm);
  EXPECT_EQ(t.OpId("aten::add"), -1);
  p.Begin(0);
  t.EnterNode(2, "MmBackward0", 10);
  t.EnterOp(mm, 12);
  t.EnterOp(tr, 13);
  t.ExitOp(15);
  t.ExitOp(20);
  t.Memory(400, false);
  t.ExitNode(30);  // b backward: 20
  t.EnterNode(-1, "AccumulateGrad", 30);
  t.Memory(-100, false);
  t.ExitNode(34);  // unattributed: 4
  t.EnterNode(3, "AddBackward0", 40);
  t.ExitNode(45);
  p.End(50);
  auto s = p.Take();
  EXPECT_EQ(s.backward[2].self_ns, 20);
  EXPECT_EQ(s.backward[1].total_ns, 20);  // a's backward holds b's
  EXPECT_EQ(s.backward[1].self_ns, 0);
  EXPECT_EQ(s.backward[0].total_ns, 25);  // b's and c's
  EXPECT_EQ(s.backward[2].mem_self, 400);
  EXPECT_EQ(s.backward[0].mem_total, 400);
  EXPECT_EQ(s.backward[4].mem_self, -100);
  ASSERT_EQ(s.backward[2].ops.size(), 2u);
  EXPECT_EQ(s.backward[2].ops[0].name, "aten::mm");
  EXPECT_EQ(s.backward[2].ops[0].total_ns, 8);
  EXPECT_EQ(s.backward[2].ops[0].self_ns, 6);
  EXPECT_EQ(s.backward[2].ops[1].total_ns, 2);
  // 50 - (20 + 4 + 5) outside frames, plus the unattributed node's 4
  EXPECT_EQ(s.unattributed_ns, 25);
  int64_t selfs = s.unattributed_ns;
  for (int i = 0; i < 4; ++i) selfs += s.forward[i].self_ns + s.backward[i].self_ns;
  EXPECT_EQ(selfs, s.block_ns);
  EXPECT_EQ(p.Spans().size(), 5u);
  EXPECT_STREQ(p.Spans()[0].name, "MmBackward0");
}

TEST(ProfilerTest, NodesBelongToTheScopeThatCreatedThem) {
  Profiler p(Tree());
  Profiler::Thread& t = p.ThisThread();
  p.Register(t, 7);
  t.NoteNode(90);  // outside every scope
  t.EnterScope(2, 0);
  t.NoteNode(100);
  t.NoteNode(101);
  t.ExitScope(2, 1);
  t.NoteNode(102);  // outside every scope
  t.EnterScope(3, 2);
  t.NoteNode(103);
  t.NoteNode(103);  // an operator that made no node, then one that did
  t.EnterScope(1, 2);
  t.NoteNode(103);
  t.ExitScope(1, 3);
  t.NoteNode(104);
  t.ExitScope(3, 3);
  EXPECT_EQ(p.NodeScope(t, 7, 50), -1);
  EXPECT_EQ(p.NodeScope(t, 7, 90), -1);
  EXPECT_EQ(p.NodeScope(t, 7, 100), 2);
  EXPECT_EQ(p.NodeScope(t, 7, 101), 2);
  EXPECT_EQ(p.NodeScope(t, 7, 102), -1);
  EXPECT_EQ(p.NodeScope(t, 7, 103), 1);  // the last operator numbered 103 made it
  EXPECT_EQ(p.NodeScope(t, 7, 104), 3);
  EXPECT_EQ(p.NodeScope(t, 8, 100), -1);
  // Asked from another thread (CUDA's backward threads): the same answers.
  std::thread([&] {
    Profiler::Thread& other = p.ThisThread();
    EXPECT_EQ(p.NodeScope(other, 7, 101), 2);
    EXPECT_EQ(p.NodeScope(other, 7, 103), 1);
    EXPECT_EQ(p.NodeScope(other, 7, 102), -1);
  }).join();
}

TEST(ProfilerTest, FrameChangesThatMadeNoNodeLeaveNoRun) {
  // Noted at every frame change: under no_grad the next node's number never
  // moves, and a long forward must not grow the runs.
  Profiler p(Tree());
  Profiler::Thread& t = p.ThisThread();
  p.Register(t, 1);
  for (int i = 0; i < 1000; ++i) {
    t.EnterScope(0, i);
    t.NoteNode(40);
    t.EnterScope(2, i);
    t.NoteNode(40);
    t.ExitScope(2, i);
    t.NoteNode(40);
    t.ExitScope(0, i);
    t.NoteNode(40);
  }
  EXPECT_EQ(t.num_runs(), 0u);  // nothing made: everything from 40 on is outside every scope
  t.EnterScope(0, 0);
  t.NoteNode(40);
  t.EnterScope(2, 0);
  t.NoteNode(41);  // scope 0 made node 40
  t.ExitScope(2, 0);
  t.NoteNode(41);  // scope 2 made none: its run goes, and 0's goes on
  EXPECT_EQ(t.num_runs(), 1u);
  t.ExitScope(0, 0);
  t.NoteNode(42);
  EXPECT_EQ(p.NodeScope(t, 1, 39), -1);
  EXPECT_EQ(p.NodeScope(t, 1, 40), 0);
  EXPECT_EQ(p.NodeScope(t, 1, 41), 0);
  EXPECT_EQ(p.NodeScope(t, 1, 42), -1);
  EXPECT_EQ(t.num_runs(), 2u);
}

TEST(ProfilerTest, ExitUnwindsFramesLeftOpenByAnException) {
  Profiler p(Tree());
  Profiler::Thread& t = p.ThisThread();
  p.Begin(0);
  t.EnterScope(0, 0);
  t.EnterScope(1, 5);  // raised: its exit never came
  t.ExitScope(0, 10);
  p.End(10);
  auto s = p.Take();
  EXPECT_EQ(s.forward[0].total_ns, 10);
  EXPECT_EQ(s.unattributed_ns, 0);
}

TEST(ProfilerTest, ThreadsKeepTheirOwnFrames) {
  Profiler p(Tree());
  p.Begin(0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&p] {
      Profiler::Thread& t = p.ThisThread();
      for (int i = 0; i < 1000; ++i) {
        t.EnterScope(3, 0);
        t.ExitScope(3, 1);
      }
    });
  }
  for (auto& t : threads) t.join();
  p.End(1);
  auto s = p.Take();
  EXPECT_EQ(s.forward[3].calls, 4000);
  EXPECT_EQ(s.forward[3].total_ns, 4000);
}

TEST(ProfilerTest, ManyProfilersOnOneThreadKeepTheirOpenFrames) {
  // More profilers than a thread has slots for, interleaved: a frame opened
  // before the thread met the others is still open when it exits.
  constexpr int kProfilers = 12;
  std::vector<std::unique_ptr<Profiler>> ps;
  for (int i = 0; i < kProfilers; ++i) ps.push_back(std::make_unique<Profiler>(Tree()));
  for (auto& p : ps) p->Begin(0);
  for (auto& p : ps) p->ThisThread().EnterScope(1, 0);
  for (auto& p : ps) p->ThisThread().ExitScope(1, 10);
  for (auto& p : ps) {
    p->End(10);
    auto s = p->Take();
    EXPECT_EQ(s.forward[1].calls, 1);
    EXPECT_EQ(s.forward[1].total_ns, 10);
    EXPECT_EQ(s.unattributed_ns, 0);
  }
}

TEST(ProfilerTest, CallsThatAreNotOperatorsCountAsTimeInTheirCaller) {
  Profiler p(Tree());
  Profiler::Thread& t = p.ThisThread();
  int add = t.AddOp("aten::add");
  t.EnterScope(1, 0);
  t.EnterOp(add, 10);
  t.EnterOp(-1, 12);  // a named event
  t.EnterOp(add, 13);
  t.ExitOp(16);
  t.ExitOp(18);
  t.ExitOp(20);
  t.ExitScope(1, 30);
  auto s = p.Take();
  ASSERT_EQ(s.forward[1].ops.size(), 1u);
  EXPECT_EQ(s.forward[1].ops[0].calls, 2);
  EXPECT_EQ(s.forward[1].ops[0].total_ns, 13);  // 10 + 3
  EXPECT_EQ(s.forward[1].ops[0].self_ns, 7);    // 10 - 6 (the event) + 3
  EXPECT_EQ(p.Spans().size(), 3u);              // a and the two adds
}

TEST(ProfilerTest, TheTimelineKeepsAtMostItsLimitAndTheSumsStayWhole) {
  Profiler p(Tree(), /*max_spans=*/5000);
  Profiler::Thread& t = p.ThisThread();
  int add = t.AddOp("aten::add");
  for (int i = 0; i < 10000; ++i) {
    t.EnterOp(add, 2 * i);
    t.ExitOp(2 * i + 1);
  }
  auto spans = p.Spans();
  ASSERT_EQ(spans.size(), 5000u);
  EXPECT_EQ(p.dropped_spans(), 5000u);
  EXPECT_EQ(spans[4096].begin, 2 * 4096);  // across a chunk boundary, in order
  EXPECT_EQ(p.Take().forward[4].ops[0].calls, 10000);
}

// A device whose clock the test sets: an event records the device's time
// at the moment it is recorded, and is passed once `progress` reaches it.
struct FakeDevice : DeviceTimer::Backend {
  struct Shared {
    int64_t time = 0, progress = INT64_MAX;
    int device = 0;  // where events are recorded now
    std::vector<int64_t> stamps;
    std::vector<int> devices;
    std::vector<uint32_t> free;
    int live = 0, most_live = 0;
  };
  explicit FakeDevice(Shared* s) : s(s) {}
  uint32_t Record() override {
    uint32_t e;
    if (!s->free.empty()) {
      e = s->free.back();
      s->free.pop_back();
    } else {
      e = static_cast<uint32_t>(s->stamps.size());
      s->stamps.push_back(0);
      s->devices.push_back(0);
    }
    s->stamps[e] = s->time;
    s->devices[e] = s->device;
    s->most_live = std::max(s->most_live, ++s->live);
    return e;
  }
  bool MayQuery() override { return true; }
  bool Done(uint32_t e) override { return s->progress >= s->stamps[e]; }
  void Wait(uint32_t e) override { s->progress = std::max(s->progress, s->stamps[e]); }
  int64_t ElapsedNs(uint32_t a, uint32_t b) override {
    return s->devices[a] == s->devices[b] ? s->stamps[b] - s->stamps[a] : -1;
  }
  void Release(uint32_t e) override {
    s->free.push_back(e);
    --s->live;
  }
  Shared* s;
};

TEST(ProfilerTest, DeviceTimeOfForwardAndBackwardFrames) {
  FakeDevice::Shared dev;
  dev.progress = -1;  // the device lags: nothing is read before FinishDevice
  Profiler p(Tree(), SIZE_MAX, [&dev] { return std::make_unique<FakeDevice>(&dev); });
  Profiler::Thread& t = p.ThisThread();
  dev.time = 0;
  t.EnterScope(0, 0);
  dev.time = 20;
  t.EnterScope(1, 1);
  dev.time = 50;
  t.ExitScope(1, 2);  // a: 30 on the device
  dev.time = 60;
  t.EnterScope(3, 3);
  t.EnterScope(1, 3);  // raised inside c: its exit never came
  dev.time = 80;
  t.ExitScope(3, 4);  // c: 20
  dev.time = 100;
  t.ExitScope(0, 5);  // root: 100
  dev.time = 200;
  t.EnterNode(2, "MmBackward0", 6);
  dev.time = 260;
  t.ExitNode(7);  // b backward: 60
  t.EnterNode(-1, "AccumulateGrad", 8);
  dev.time = 270;
  t.ExitNode(9);  // unattributed: 10
  EXPECT_GT(dev.live, 0);
  p.FinishDevice();
  EXPECT_EQ(dev.live, 0);  // every event given back, the discarded one too
  auto s = p.Take();
  EXPECT_EQ(s.forward[0].device_total_ns, 100);
  EXPECT_EQ(s.forward[0].device_self_ns, 50);  // 100 - a's 30 - c's 20
  EXPECT_EQ(s.forward[1].device_total_ns, 30);
  EXPECT_EQ(s.forward[3].device_total_ns, 20);
  EXPECT_EQ(s.backward[2].device_self_ns, 60);
  EXPECT_EQ(s.backward[1].device_total_ns, 60);
  EXPECT_EQ(s.backward[1].device_self_ns, 0);
  EXPECT_EQ(s.backward[0].device_total_ns, 60);
  EXPECT_EQ(s.backward[4].device_self_ns, 10);
  EXPECT_EQ(s.device_untimed, 0);  // a frame left by an exception is not "untimed": it never ended
}

TEST(ProfilerTest, DeviceTimeOfARecursiveModuleCountsItsOutermostCall) {
  FakeDevice::Shared dev;
  Profiler p(Tree(), SIZE_MAX, [&dev] { return std::make_unique<FakeDevice>(&dev); });
  Profiler::Thread& t = p.ThisThread();
  dev.time = 0;
  t.EnterScope(1, 0);
  dev.time = 10;
  t.EnterScope(1, 1);
  dev.time = 30;
  t.ExitScope(1, 2);  // inner: 20
  dev.time = 40;
  t.ExitScope(1, 3);  // outer: 40, self 20
  p.FinishDevice();
  auto s = p.Take();
  EXPECT_EQ(s.forward[1].device_total_ns, 40);
  EXPECT_EQ(s.forward[1].device_self_ns, 40);
}

TEST(ProfilerTest, DeviceTimeOfFramesInsideANodeRunIsNotItsSelfTime) {
  // A reentrant checkpoint: c's node run re-runs a's forward and runs a
  // node of b inside it.
  FakeDevice::Shared dev;
  Profiler p(Tree(), SIZE_MAX, [&dev] { return std::make_unique<FakeDevice>(&dev); });
  Profiler::Thread& t = p.ThisThread();
  dev.time = 0;
  t.EnterNode(3, "CheckpointFunctionBackward", 0);
  dev.time = 10;
  t.EnterScope(1, 1);
  dev.time = 40;
  t.ExitScope(1, 2);  // a forward: 30
  t.EnterNode(2, "MmBackward0", 3);
  dev.time = 60;
  t.ExitNode(4);  // b backward: 20
  dev.time = 100;
  t.ExitNode(5);  // c backward: 100, self 50
  p.FinishDevice();
  auto s = p.Take();
  EXPECT_EQ(s.backward[3].device_self_ns, 50);
  EXPECT_EQ(s.forward[1].device_total_ns, 30);
  EXPECT_EQ(s.backward[2].device_self_ns, 20);
  // the root's backward: c's 50 and b's 20, each counted once
  EXPECT_EQ(s.backward[0].device_total_ns, 70);
  EXPECT_EQ(s.forward[0].device_total_ns, 0);
}

TEST(ProfilerTest, AFrameNotTimedOnTheDeviceLosesNothingToTheFramesInside) {
  FakeDevice::Shared dev;
  Profiler p(Tree(), SIZE_MAX, [&dev] { return std::make_unique<FakeDevice>(&dev); });
  Profiler::Thread& t = p.ThisThread();
  t.EnterScope(0, 0);  // starts on device 0 ...
  dev.device = 1;
  dev.time = 10;
  t.EnterScope(1, 1);
  dev.time = 40;
  t.ExitScope(1, 2);  // a: 30 on device 1
  t.ExitScope(0, 3);  // ... ends on device 1: not timed
  p.FinishDevice();
  auto s = p.Take();
  EXPECT_EQ(s.forward[1].device_total_ns, 30);
  EXPECT_EQ(s.forward[0].device_total_ns, 0);
  EXPECT_EQ(s.forward[0].device_self_ns, 0);  // not -30
  EXPECT_EQ(s.device_untimed, 1);
}

TEST(ProfilerTest, FramesEndingAfterStopDeviceAreNotTimed) {
  FakeDevice::Shared dev;
  dev.progress = -1;
  Profiler p(Tree(), SIZE_MAX, [&dev] { return std::make_unique<FakeDevice>(&dev); });
  Profiler::Thread& t = p.ThisThread();
  t.EnterScope(3, 0);
  dev.time = 5;
  t.ExitScope(3, 1);
  t.EnterScope(3, 2);  // still running when the profile stops
  p.StopDevice();
  p.FinishDevice();
  dev.time = 50;
  t.ExitScope(3, 3);  // touches no device timer
  EXPECT_EQ(p.Take().forward[3].device_total_ns, 5);
  EXPECT_EQ(p.Take().forward[3].calls, 2);
}

TEST(ProfilerTest, DeviceEventsAreReusedWhileTheDeviceKeepsUp) {
  FakeDevice::Shared dev;  // progress: always ahead
  Profiler p(Tree(), SIZE_MAX, [&dev] { return std::make_unique<FakeDevice>(&dev); });
  Profiler::Thread& t = p.ThisThread();
  for (int i = 0; i < 10000; ++i) {
    dev.time = 10 * i;
    t.EnterScope(3, i);
    dev.time += 3;
    t.ExitScope(3, i);
  }
  EXPECT_LE(dev.most_live, 200);  // not one pair per frame: bounded
  p.FinishDevice();
  EXPECT_EQ(p.Take().forward[3].device_total_ns, 30000);
}

}  // namespace
}  // namespace api_tracer

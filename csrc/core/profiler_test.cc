#include "core/profiler.h"

#include <gtest/gtest.h>

#include <thread>

namespace api_tracer {
namespace {

// root(0) -> a(1) -> b(2); root -> c(3)
std::vector<int> Tree() { return {-1, 0, 1, 0}; }

TEST(ProfilerTest, SelfIsTotalMinusNestedChildren) {
  Profiler p(Tree());
  p.Begin(0);
  p.EnterScope(0, 10);
  p.EnterScope(1, 20);
  p.EnterScope(2, 30);
  p.ExitScope(2, 40);  // b: 10
  p.ExitScope(1, 60);  // a: 40, self 30
  p.EnterScope(3, 70);
  p.ExitScope(3, 75);  // c: 5
  p.EnterScope(3, 80);
  p.ExitScope(3, 90);  // c again: 10
  p.ExitScope(0, 100);  // root: 90, self 90 - 40 - 15 = 35
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

TEST(ProfilerTest, BackwardNodesAndOperators) {
  Profiler p(Tree());
  static const char* kMm = "aten::mm";
  static const char* kT = "aten::t";
  p.Begin(0);
  p.EnterNode(2, "MmBackward0", 10);
  p.EnterOp(kMm, 12);
  p.EnterOp(kT, 13);
  p.ExitOp(15);
  p.ExitOp(20);
  p.Memory(400, false);
  p.ExitNode(30);  // b backward: 20
  p.EnterNode(-1, "AccumulateGrad", 30);
  p.Memory(-100, false);
  p.ExitNode(34);  // unattributed: 4
  p.EnterNode(3, "AddBackward0", 40);
  p.ExitNode(45);
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
  p.EnterScope(2, 0);
  p.NoteNode(7, 100);
  p.NoteNode(7, 101);
  p.ExitScope(2, 1);
  p.NoteNode(7, 102);  // outside every scope: not noted
  p.EnterScope(3, 2);
  p.NoteNode(7, 103);
  p.ExitScope(3, 3);
  EXPECT_EQ(p.NodeScope(7, 100), 2);
  EXPECT_EQ(p.NodeScope(7, 101), 2);
  EXPECT_EQ(p.NodeScope(7, 102), -1);
  EXPECT_EQ(p.NodeScope(7, 103), 3);
  EXPECT_EQ(p.NodeScope(8, 100), -1);
}

TEST(ProfilerTest, ExitUnwindsFramesLeftOpenByAnException) {
  Profiler p(Tree());
  p.Begin(0);
  p.EnterScope(0, 0);
  p.EnterScope(1, 5);  // raised: its exit never came
  p.ExitScope(0, 10);
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
      for (int i = 0; i < 1000; ++i) {
        p.EnterScope(3, 0);
        p.ExitScope(3, 1);
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
  for (auto& p : ps) p->EnterScope(1, 0);
  for (auto& p : ps) p->ExitScope(1, 10);
  for (auto& p : ps) {
    p->End(10);
    auto s = p->Take();
    EXPECT_EQ(s.forward[1].calls, 1);
    EXPECT_EQ(s.forward[1].total_ns, 10);
    EXPECT_EQ(s.unattributed_ns, 0);
  }
}

}  // namespace
}  // namespace api_tracer

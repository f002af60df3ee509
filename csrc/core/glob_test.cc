#include "core/glob.h"

#include <gtest/gtest.h>

namespace api_tracer {
namespace {

TEST(GlobTest, Matches) {
  EXPECT_TRUE(GlobMatch("*", "torch.add"));
  EXPECT_TRUE(GlobMatch("torch.*", "torch.nn.functional.relu"));
  EXPECT_TRUE(GlobMatch("*.__get__", "torch.Tensor.shape.__get__"));
  EXPECT_TRUE(GlobMatch("torch.Tensor.*.__get__", "torch.Tensor.requires_grad.__get__"));
  EXPECT_TRUE(GlobMatch("torch.ad?", "torch.add"));
  EXPECT_TRUE(GlobMatch("a*b*c", "aXXbYYbZc"));
  EXPECT_FALSE(GlobMatch("torch.*", "numpy.add"));
  EXPECT_FALSE(GlobMatch("*.__get__", "torch.Tensor.__getitem__"));
  EXPECT_FALSE(GlobMatch("torch.ad?", "torch.addmm"));
  EXPECT_FALSE(GlobMatch("", "x"));
  EXPECT_TRUE(GlobMatch("", ""));
}

TEST(GlobTest, FilterIncludesThenExcludes) {
  ApiFilter all;
  EXPECT_TRUE(all.Allows("anything"));
  ApiFilter f({"torch.*"}, {"*.__get__", "torch.Tensor.dim"});
  EXPECT_TRUE(f.Allows("torch.add"));
  EXPECT_FALSE(f.Allows("numpy.add"));
  EXPECT_FALSE(f.Allows("torch.Tensor.T.__get__"));
  EXPECT_FALSE(f.Allows("torch.Tensor.dim"));
}

}  // namespace
}  // namespace api_tracer

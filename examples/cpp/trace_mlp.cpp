// A libtorch program under the tracer: one training step of a two-layer MLP
// (forward and backward), plus some work on a second thread.
//
//   trace_mlp OUTPUT_DIR
//
// writes OUTPUT_DIR/api_*.{txt,yaml} and prints the statistics file.
#include <ATen/ATen.h>
#include <api_tracer/tracer.h>

#include <fstream>
#include <iostream>
#include <thread>

int main(int argc, char** argv) {
  std::string out = argc > 1 ? argv[1] : "trace_output";
  at::manual_seed(0);
  at::Tensor x = at::randn({8, 4});
  at::Tensor w1 = at::randn({4, 16}).set_requires_grad(true);
  at::Tensor w2 = at::randn({16, 3}).set_requires_grad(true);
  at::Tensor target = at::randint(0, 3, {8});
  {
    api_tracer::TraceScope scope(api_tracer::Options{.output_path = out});
    at::Tensor hidden = at::relu(at::matmul(x, w1));
    at::Tensor loss = at::cross_entropy_loss(at::matmul(hidden, w2), target);
    loss.backward();
    std::thread worker([] { at::ones({2, 2}).add(1); });
    worker.join();
  }
  std::ifstream stats(out + "/api_statistics.yaml");
  std::cout << stats.rdbuf();
  return 0;
}

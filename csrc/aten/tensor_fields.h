// Reading a tensor's config fields from an at::Tensor, without Python.
//
// Shared by the Python extension (tensors passed to levels 0-2) and the
// native observer (IValues at level 3). Reads metadata only: never the data,
// never a device synchronization. Names are Python's spellings ("float32",
// "cuda:0", "torch.sparse_coo"), so every level writes the same config line.
// Thread-safety: all functions may be called from any thread; a TensorScratch
// belongs to one thread.
#pragma once

#include <ATen/core/Tensor.h>

#include <string_view>
#include <vector>

#include "core/key.h"

namespace api_tracer::aten {

// torch.dtype's name without "torch." ("float32", "bfloat16", "bool").
std::string_view DtypeName(c10::ScalarType t);
// The same with "torch." ("torch.float32"), as a dtype argument is written.
std::string_view DtypeSymbol(c10::ScalarType t);
// str(torch.device) ("cpu", "cuda:0"); the view stays valid for the process.
std::string_view DeviceName(c10::Device d);
// "" for torch.strided, else the layout's Python name ("torch.sparse_coo").
std::string_view LayoutName(c10::Layout l);

// Buffers a reader reuses from call to call.
struct TensorScratch {
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
};

// Fills `out` (views into `scratch` and static names) from `t`. False when
// the tensor has no readable shape (undefined, nested): write a placeholder.
// Dimensions that are symbolic and have no concrete value are written as -1.
bool ReadTensor(const at::Tensor& t, TensorScratch* scratch, TensorFields* out);

// The ValueProfile of an integer, bool or floating tensor (its data read: a
// device tensor is waited for). Not valid for an empty, meta, sparse or
// Python-subclass tensor.
ValueProfile ReadValueProfile(const at::Tensor& t);

}  // namespace api_tracer::aten

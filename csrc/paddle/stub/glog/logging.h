// A stand-in for glog's logging.h, which Paddle's public headers include but
// the Paddle wheel does not ship. csrc/paddle/backward.cc logs nothing; the
// macros compile to nothing (the streamed values are never evaluated).
#pragma once
#include <iostream>
struct _NullStream {
  template <class T>
  _NullStream& operator<<(const T&) {
    return *this;
  }
};
#define VLOG(n) \
  if (false) _NullStream()
#define LOG(x) \
  if (false) _NullStream()
#define LOG_FIRST_N(x, n) \
  if (false) _NullStream()
#define VLOG_IS_ON(n) false
#define CHECK(c) \
  if (false) _NullStream()
#define DCHECK(c) \
  if (false) _NullStream()

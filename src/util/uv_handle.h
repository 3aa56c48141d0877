// UvHandle<T>: owns one heap-allocated libuv handle. close() (or the destructor)
// clears `data` and calls uv_close once; the close callback frees the memory,
// so the owner may die before the callback runs and nothing calls back into it.
// Thread affinity: the thread running the handle's loop only.
#pragma once

#include <uv.h>

#include <utility>

namespace tlsfront {

template <typename T>
class UvHandle {
 public:
  UvHandle() : h_(new T{}) {}
  ~UvHandle() { close(); }
  UvHandle(const UvHandle&) = delete;
  UvHandle& operator=(const UvHandle&) = delete;
  UvHandle(UvHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)), initialized_(std::exchange(o.initialized_, false)) {}
  UvHandle& operator=(UvHandle&& o) noexcept {
    if (this != &o) {
      close();
      h_ = std::exchange(o.h_, nullptr);
      initialized_ = std::exchange(o.initialized_, false);
    }
    return *this;
  }

  // Runs `init(T*)` (e.g. uv_tcp_init bound to a loop); on success (0) the
  // handle must later be uv_close'd, which close() does. Returns the libuv code.
  template <typename Init>
  int init(Init&& initfn, void* data) {
    if (!h_) h_ = new T{};
    int rc = initfn(h_);
    if (rc == 0) {
      initialized_ = true;
      h_->data = data;
    }
    return rc;
  }

  T* get() const { return h_; }
  uv_handle_t* handle() const { return reinterpret_cast<uv_handle_t*>(h_); }
  uv_stream_t* stream() const { return reinterpret_cast<uv_stream_t*>(h_); }
  bool active() const { return h_ != nullptr && initialized_; }

  void close() {
    if (!h_) return;
    T* h = std::exchange(h_, nullptr);
    if (!initialized_) {
      delete h;
      return;
    }
    initialized_ = false;
    h->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(h), [](uv_handle_t* p) { delete reinterpret_cast<T*>(p); });
  }

 private:
  T* h_;
  bool initialized_ = false;
};

}  // namespace tlsfront

// Readiness of a socket fd through libuv (uv_poll): idle costs nothing. The
// handler is called when the fd becomes readable. A handler that consumed
// (called the owner's rx, which calls Rearm()) leaves the poll armed: no
// epoll_ctl per wake-up. One that took nothing pauses the poller until the
// owner calls Rearm() (from its rx call), so a handler that leaves frames
// waiting is not called again and again in a busy loop.
#pragma once

#include <napi.h>
#include <uv.h>

namespace roce {

class FdPoller {
 public:
  FdPoller() = default;
  ~FdPoller();
  FdPoller(const FdPoller&) = delete;
  FdPoller& operator=(const FdPoller&) = delete;

  // Sets (or, with an empty function, clears) the handler and starts or stops polling `fd`.
  void SetHandler(Napi::Env env, int fd, Napi::Value fn);
  // Re-arms a paused poller (called after the owner consumed frames).
  void Rearm() {
    consumed_ = true;
    if (handle_ != nullptr && paused_ && !cb_.IsEmpty()) Start();
  }
  // Stops polling and frees the uv handle (asynchronously, as libuv requires).
  void Close();

 private:
  static void OnPoll(uv_poll_t* h, int status, int events);
  void Start();
  uv_poll_t* handle_ = nullptr;
  Napi::FunctionReference cb_;
  Napi::AsyncContext* ctx_ = nullptr;
  napi_env env_ = nullptr;
  bool paused_ = true;
  bool consumed_ = false;  // Rearm() ran since the handler was called
};

}  // namespace roce

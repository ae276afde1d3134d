#include "poller.h"

#include "common.h"

namespace roce {

FdPoller::~FdPoller() { Close(); }

void FdPoller::SetHandler(Napi::Env env, int fd, Napi::Value fn) {
  if (fn.IsUndefined() || fn.IsNull()) {
    if (handle_ != nullptr) uv_poll_stop(handle_);
    paused_ = true;
    cb_.Reset();
    return;
  }
  if (!fn.IsFunction()) Throw(env, code::kBadArgument, "the rx handler must be a function or null");
  env_ = env;
  if (handle_ == nullptr) {
    uv_loop_t* loop = nullptr;
    if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr) Throw(env, code::kSystem, "no libuv loop");
    handle_ = new uv_poll_t;
    int r = uv_poll_init_socket(loop, handle_, fd);
    if (r != 0) {
      delete handle_;
      handle_ = nullptr;
      Throw(env, code::kSystem, std::string("uv_poll_init failed: ") + uv_strerror(r));
    }
    handle_->data = this;
  }
  if (ctx_ == nullptr) ctx_ = new Napi::AsyncContext(env, "roce:rx");
  cb_ = Napi::Persistent(fn.As<Napi::Function>());
  Start();
}

void FdPoller::Start() {
  consumed_ = true;  // a (re)started poll stays armed through the current handler call
  if (uv_poll_start(handle_, UV_READABLE, OnPoll) == 0) paused_ = false;
}

void FdPoller::OnPoll(uv_poll_t* h, int status, int /*events*/) {
  FdPoller* self = static_cast<FdPoller*>(h->data);
  if (self == nullptr) return;
  if (status < 0 || self->cb_.IsEmpty()) {
    uv_poll_stop(h);
    self->paused_ = true;
    return;
  }
  // Stay armed while the handler consumes (calls rx, which calls Rearm): stopping and restarting
  // the poll costs two epoll_ctl calls per wake-up. Only a handler that took nothing pauses it.
  self->consumed_ = false;
  Napi::Env env(self->env_);
  Napi::HandleScope scope(env);
  try {
    self->cb_.MakeCallback(env.Global(), {}, *self->ctx_);
  } catch (const Napi::Error& e) {
    // An exception from the JS handler: hand it to the process as an uncaught exception.
    napi_fatal_exception(env, e.Value());
  }
  // The handler may have closed the socket or cleared the handler (handle_ gone or paused).
  if (self->handle_ == h && !self->paused_ && !self->consumed_) {
    uv_poll_stop(h);
    self->paused_ = true;
  }
}

void FdPoller::Close() {
  cb_.Reset();
  if (ctx_ != nullptr) {
    delete ctx_;
    ctx_ = nullptr;
  }
  if (handle_ != nullptr) {
    uv_poll_stop(handle_);
    handle_->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(handle_), [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
    handle_ = nullptr;
  }
  paused_ = true;
}

}  // namespace roce

#pragma once
// How every C API entry point runs (include/ckjit.h): its body's exceptions become a status, the
// message is kept for ckjit_last_error() (per thread) and the handle's own last error; handles
// are checked to be live and of their kind before use.
#include <new>
#include <string>

#include "capi/handles.h"
#include "include/ckjit.h"
#include "runtime/error.h"

namespace ckjit::capi {

std::string& thread_last_error();

// A failure of one call: its status and message, kept on the thread and on the handle.
struct Failure {
  ckjit_status status;
  std::string message;
};

inline ckjit_status fail(ErrorSlot* slot, ckjit_status st, const std::string& msg) {
  thread_last_error() = msg;
  if (slot) slot->set(msg);
  return st;
}

// A library error's status: its kind's, or the call's own category for a plain Error.
inline ckjit_status status_of(ErrorKind k, ckjit_status as) {
  switch (k) {
    case ErrorKind::general: return as;
    case ErrorKind::invalid_argument: return CKJIT_ERR_INVALID_ARGUMENT;
    case ErrorKind::io: return CKJIT_ERR_IO;
    case ErrorKind::bad_model: return CKJIT_ERR_BAD_MODEL;
    case ErrorKind::bad_image: return CKJIT_ERR_BAD_IMAGE;
    case ErrorKind::no_vision: return CKJIT_ERR_NO_VISION;
    case ErrorKind::context_full: return CKJIT_ERR_CONTEXT_FULL;
    case ErrorKind::out_of_memory: return CKJIT_ERR_OUT_OF_MEMORY;
    case ErrorKind::unsupported: return CKJIT_ERR_UNSUPPORTED;
    case ErrorKind::cancelled: return CKJIT_ERR_CANCELLED;
  }
  return as;
}

// Runs body; exceptions become statuses (`as` for ckjit::Error: the call's own category).
template <class F>
ckjit_status guarded(ErrorSlot* slot, ckjit_status as, F&& body) {
  try {
    thread_last_error().clear();
    return body();
  } catch (const Failure& f) {
    return fail(slot, f.status, f.message);
  } catch (const Error& e) {
    return fail(slot, status_of(e.kind(), as), e.what());
  } catch (const std::bad_alloc&) {
    return fail(slot, CKJIT_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail(slot, CKJIT_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(slot, CKJIT_ERR_INTERNAL, "internal error");
  }
}

[[noreturn]] inline void raise(ckjit_status st, const std::string& msg) { throw Failure{st, msg}; }

inline void need(const void* p, const char* what) {
  if (!p) raise(CKJIT_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
}

inline ckjit_model* model_of(const ckjit_model* m) {
  if (!m) raise(CKJIT_ERR_INVALID_ARGUMENT, "the model handle is NULL");
  if (!live_handle(m, Kind::model)) raise(CKJIT_ERR_BAD_HANDLE, "not a live model handle (freed, or not from ckjit_model_load)");
  return const_cast<ckjit_model*>(m);
}

inline ckjit_session* session_of(const ckjit_session* s) {
  if (!s) raise(CKJIT_ERR_INVALID_ARGUMENT, "the session handle is NULL");
  if (!live_handle(s, Kind::session))
    raise(CKJIT_ERR_BAD_HANDLE, "not a live session handle (freed, or not from ckjit_session_new)");
  return const_cast<ckjit_session*>(s);
}

// Where a call's error is kept besides the thread: the handle's own slot, if it is live.
inline ErrorSlot* slot_of(const ckjit_model* m) {
  return m && live_handle(m, Kind::model) ? &const_cast<ckjit_model*>(m)->error : nullptr;
}
inline ErrorSlot* slot_of(const ckjit_session* s) {
  return s && live_handle(s, Kind::session) ? &const_cast<ckjit_session*>(s)->error : nullptr;
}

}  // namespace ckjit::capi

#include "tools/interrupt.h"

#include <unistd.h>

#include <csignal>

namespace ckjit::cli {

namespace {
volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }
}  // namespace

void catch_interrupt() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_RESETHAND;  // the second Ctrl-C takes the default action
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
}

bool interrupted() { return g_interrupted != 0; }

namespace {
void on_sigbus(int) {
  // Only async-signal-safe calls here.
  static const char msg[] =
      "ckjit: error: a mapped file could not be read (SIGBUS): the model or mmproj file was truncated or replaced "
      "while ckjit was using it\n";
  (void)!::write(2, msg, sizeof msg - 1);
  ::_exit(1);
}
}  // namespace

void catch_bus_errors() {
  struct sigaction sa {};
  sa.sa_handler = on_sigbus;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, nullptr);
}

}  // namespace ckjit::cli

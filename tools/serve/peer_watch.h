#pragma once
// Whether the client of a request has closed its connection, for a handler that is not writing
// (waiting in line, or generating a non-streamed answer). httplib 0.11 gives handlers no access
// to their socket, so the socket is found once by its ports (the request's local and remote port)
// among this process's descriptors, and checked with a zero-timeout poll (POLLRDHUP).
#include <string>

namespace ckjit::serve {

class PeerWatch {
 public:
  PeerWatch(int remote_port, int local_port) : remote_port_(remote_port), local_port_(local_port) {}
  // True once the peer has closed or reset the connection (then always true). False when the
  // socket cannot be found (nothing is known).
  bool gone();

 private:
  bool matches(int fd) const;
  int remote_port_, local_port_;
  int fd_ = -1;
  bool searched_ = false, gone_ = false;
};

}  // namespace ckjit::serve

#include "tools/serve/peer_watch.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace ckjit::serve {

namespace {
int port_of(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return -1;
}
}  // namespace

bool PeerWatch::matches(int fd) const {
  sockaddr_storage peer{}, self{};
  socklen_t n = sizeof peer, m = sizeof self;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &n) != 0) return false;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &m) != 0) return false;
  return port_of(peer) == remote_port_ && port_of(self) == local_port_;
}

bool PeerWatch::gone() {
  if (gone_) return true;
  if (remote_port_ <= 0 || local_port_ <= 0) return false;
  if (!searched_) {
    searched_ = true;
    if (DIR* d = ::opendir("/proc/self/fd")) {
      while (dirent* e = ::readdir(d)) {
        char* end = nullptr;
        const long fd = std::strtol(e->d_name, &end, 10);
        if (end != e->d_name && *end == '\0' && fd != ::dirfd(d) && matches(int(fd))) {
          fd_ = int(fd);
          break;
        }
      }
      ::closedir(d);
    }
  }
  if (fd_ < 0) return false;
  // The descriptor closed (and perhaps reused) means the connection is over too.
  if (!matches(fd_)) return gone_ = true;
  char c;
  const ssize_t r = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) gone_ = true;
  return gone_;
}

}  // namespace ckjit::serve

#include "tools/serve/peer_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

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
    // open + fdopendir, not opendir: glibc's opendir opens its descriptor internally, so TSan
    // never sees that number being reused and calls the closedir a race with whichever thread
    // last used the number (a closed socket of another connection).
    const int dir_fd = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* d = dir_fd >= 0 ? ::fdopendir(dir_fd) : nullptr;
    if (!d && dir_fd >= 0) ::close(dir_fd);
    if (d) {
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
  // poll, not a peeking recv: the same answer (the peer's FIN or a reset), and no read on the
  // descriptor that TSan would check against the unseen accept that reused its number.
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) gone_ = true;
  return gone_;
}

}  // namespace ckjit::serve

#include "tools/serve/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tools/serve/chat_completion.h"
#include "tools/serve/guarded_server.h"
#include "tools/serve/openai_response.h"
#include "tools/serve/token_routes.h"

namespace ckjit::serve {

bool ServerState::accepts_model(const std::string& name) const {
  if (name == model_name || name.empty()) return true;
  const std::filesystem::path p(opt.model);
  return name == p.filename().string() || name == p.stem().string() || name == opt.model;
}

namespace {

std::unique_ptr<ServerState> load(const ServerOptions& o) {
  auto st = std::make_unique<ServerState>();
  st->opt = o;
  if (!o.limits.local_image_root.empty()) st->opt.limits.local_image_root = canonical_image_root(o.limits.local_image_root);
  st->opt.limits.max_local_image_bytes = size_t(o.max_body_mb * 1024 * 1024);
  st->model_name = o.alias.empty() ? std::filesystem::path(o.model).stem().string() : o.alias;
  ckjit_model_params mp;
  ckjit_model_params_default(&mp);
  mp.n_threads = o.threads;
  mp.n_ctx = o.n_ctx;
  mp.use_profile = o.use_profile ? 1 : 0;
  mp.max_isa = o.max_isa.empty() ? nullptr : o.max_isa.c_str();
  mp.vision_precision = o.vision_precision.c_str();
  mp.n_batch = o.n_batch;
  mp.n_sessions = o.parallel;  // every session's KV cache and largest image counted before the weights load
  if (o.image_max_tokens > 0) mp.image_max_tokens = o.image_max_tokens;  // else the library's default
  // Without --mmproj: the projector beside the model when its folder has one, else text only.
  mp.find_mmproj = CKJIT_MMPROJ_FIND_IF_ANY;
  if (const ckjit_status ls = ckjit_model_load(o.model.c_str(), o.mmproj.empty() ? nullptr : o.mmproj.c_str(), &mp, &st->model); ls != CKJIT_OK)
    throw std::runtime_error(std::string(ckjit_last_error()) +
                             (ls == CKJIT_ERR_OUT_OF_MEMORY ? " (here: -c sets n_ctx, --parallel n_sessions, -b n_batch, --image-max-tokens image_max_tokens)" : ""));
  if (o.mmproj.empty() && *ckjit_model_mmproj_path(st->model))
    std::fprintf(stderr, "serve: mmproj %s (found beside the model)\n", ckjit_model_mmproj_path(st->model));
  ckjit_session_params sp;
  ckjit_session_params_default(&sp);
  sp.n_ctx = o.n_ctx;
  sp.n_batch = o.n_batch;
  sp.image_min_tokens = o.image_min_tokens;
  sp.image_max_tokens = o.image_max_tokens;
  // The limits every request starts from (and may lower): the server's, else the library's 8 and 4096.
  st->opt.limits.image_max_tokens = o.image_max_tokens > 0 ? o.image_max_tokens : 4096;
  st->opt.limits.image_min_tokens = std::min(o.image_min_tokens > 0 ? o.image_min_tokens : 8, st->opt.limits.image_max_tokens);
  st->n_ctx = o.n_ctx;
  try {
    st->pool = std::make_unique<SessionPool>(st->model, o.parallel, sp);
    if (o.parallel > 1 && ckjit_batcher_new(st->model, o.parallel, o.threads, &st->batcher) != CKJIT_OK)
      throw std::runtime_error(ckjit_last_error());
  } catch (...) {
    st->pool.reset();
    ckjit_model_free(st->model);
    throw;
  }
  st->cache = std::make_unique<ImageCache>(size_t(o.image_cache_mb * 1024 * 1024));
  return st;
}

void json_reply(httplib::Response& res, const nlohmann::json& j) { res.set_content(j.dump(), "application/json"); }

// Compares in time independent of where the strings differ (an API key is a secret).
bool same_secret(const std::string& a, const std::string& b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < a.size(); ++i) diff |= unsigned(uint8_t(a[i]) ^ uint8_t(i < b.size() ? b[i] : 0));
  return diff == 0;
}

// The loopback names: localhost (and *.localhost, RFC 6761), 127.0.0.0/8 as an IPv4 literal, ::1.
// A name that only starts like one (127.evil.example, localhost.evil.example) is not.
bool loopback_name(std::string_view h) {
  if (!h.empty() && h.back() == '.') h.remove_suffix(1);
  if (h == "localhost" || h == "::1" || h == "[::1]") return true;
  if (h.size() > 10 && h.substr(h.size() - 10) == ".localhost") return true;
  in_addr a{};
  return ::inet_pton(AF_INET, std::string(h).c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

// The name in a Host header: lower case, without the port and a trailing dot.
std::string host_name(std::string h) {
  for (char& c : h) c = char(std::tolower(uint8_t(c)));
  if (!h.empty() && h[0] == '[') {
    const size_t close = h.find(']');  // [v6] or [v6]:port; anything else stays whole (and matches nothing)
    if (close != std::string::npos && (close + 1 == h.size() || h[close + 1] == ':')) h.resize(close + 1);
  }
  else if (const size_t colon = h.rfind(':'); colon != std::string::npos && h.find(':') == colon) h.resize(colon);
  if (!h.empty() && h.back() == '.') h.pop_back();
  return h;
}

// --hosts, or by default the loopback names when the server listens on loopback (a web page that
// rebinds its own name to 127.0.0.1 sends its name, and is refused); empty: any.
std::vector<std::string> allowed_hosts(const ServerOptions& o) {
  if (!o.hosts.empty()) {
    if (std::find(o.hosts.begin(), o.hosts.end(), "*") != o.hosts.end()) return {};
    std::vector<std::string> out;
    for (const std::string& h : o.hosts) out.push_back(host_name(h));
    return out;
  }
  if (loopback_name(o.host)) return {"localhost", "127.0.0.1", "::1", "[::1]"};
  return {};
}

bool host_allowed(const std::vector<std::string>& allowed, const std::string& header, bool loopback_default) {
  if (allowed.empty() || header.empty()) return true;  // no Host: HTTP/1.0 clients and health checkers
  const std::string h = host_name(header);
  if (loopback_default && loopback_name(h)) return true;
  return std::find(allowed.begin(), allowed.end(), h) != allowed.end();
}

// Answers a refusal before the body is read: the connection then closes (the unread body cannot be
// told from a next request).
httplib::Server::HandlerResponse refuse(httplib::Response& r, int status, const std::string& message, const std::string& code) {
  r.status = status;
  r.set_header("Connection", "close");
  r.set_content(error_json(message, error_type_for(status), code).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                "application/json");
  GuardedServer::close_after_answer();
  return httplib::Server::HandlerResponse::Handled;
}

// Everything decided from the headers alone, before a body is read: Host (--hosts), bodies that
// httplib would read without their limit (no Content-Length, chunked, compressed) or read only to
// throw away (over --max-body-mb), draining, --api-key (401 with an OpenAI body unless the Bearer
// token matches; /health and CORS preflights stay open) and --cors (headers on every answer, 204
// to preflights). Also answers an Expect: 100-continue before the body is sent.
void access_rules(httplib::Server& svr, const ServerState& st) {
  using HR = httplib::Server::HandlerResponse;
  const std::vector<std::string> hosts = allowed_hosts(st.opt);
  const bool loopback_default = st.opt.hosts.empty();
  const size_t max_body = size_t(st.opt.max_body_mb * 1024 * 1024);
  auto decide = [&st, hosts, loopback_default, max_body](const httplib::Request& q, httplib::Response& r) {
    if (q.path == "/health" && (q.method == "GET" || q.method == "HEAD")) return HR::Unhandled;
    if (!host_allowed(hosts, q.get_header_value("Host"), loopback_default))
      return refuse(r, 403, "the Host '" + q.get_header_value("Host") + "' is not one this server answers to (ckjit serve --hosts NAME,...)",
                    "host_not_allowed");
    // Debian's cpp-httplib checks --max-body-mb only against a Content-Length, reads a body
    // without one until the client closes, and inflates compressed bodies without a bound: such
    // bodies are refused, not read.
    const std::string te = q.get_header_value("Transfer-Encoding");
    if (!te.empty() && te != "identity")
      return refuse(r, 411, "send the body with a Content-Length (Transfer-Encoding '" + te + "' is refused)", "length_required");
    const std::string ce = q.get_header_value("Content-Encoding");
    if (!ce.empty() && ce != "identity")
      return refuse(r, 415, "compressed bodies are refused (Content-Encoding '" + ce + "'); send it uncompressed", "unsupported_encoding");
    const bool has_body = q.method == "POST" || q.method == "PUT" || q.method == "PATCH" || q.method == "DELETE" || q.method == "PRI";
    if (has_body) {
      const std::string cl = q.get_header_value("Content-Length");
      if (cl.empty()) return refuse(r, 411, "send the body with a Content-Length", "length_required");
      if (cl.size() > 15 || cl.find_first_not_of("0123456789") != std::string::npos || std::stoull(cl) > max_body)
        return refuse(r, 413, "the request body is over the server's limit (--max-body-mb)", "body_too_large");
    }
    // Draining: no new generations (a load balancer's retry goes to another replica).
    if (st.draining && (q.path == "/v1/chat/completions" || q.path == "/v1/completions")) {
      r.set_header("Retry-After", "1");
      return refuse(r, 503, "the server is shutting down (draining the requests in flight)", "shutting_down");
    }
    if (q.method == "OPTIONS" && !st.opt.cors_origin.empty()) {
      r.status = 204;
      return HR::Handled;
    }
    if (st.opt.api_key.empty()) return HR::Unhandled;
    const std::string auth = q.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0 && same_secret(auth.substr(7), st.opt.api_key)) return HR::Unhandled;
    r.set_header("WWW-Authenticate", "Bearer");
    return refuse(r, 401, auth.empty() ? "no API key given (Authorization: Bearer KEY)" : "incorrect API key provided", "invalid_api_key");
  };
  svr.set_pre_routing_handler(decide);
  svr.set_expect_100_continue_handler([decide](const httplib::Request& q, httplib::Response& r) {
    return decide(q, r) == HR::Handled ? r.status : 100;
  });
  if (st.opt.cors_origin.empty()) return;
  svr.set_post_routing_handler([&st](const httplib::Request&, httplib::Response& r) {
    r.set_header("Access-Control-Allow-Origin", st.opt.cors_origin);
    r.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
    r.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    if (st.opt.cors_origin != "*") r.set_header("Vary", "Origin");
  });
}

void routes(httplib::Server& svr, ServerState& st, int64_t started) {
  access_rules(svr, st);
  svr.Post("/v1/chat/completions", [&st](const httplib::Request& q, httplib::Response& r) { handle_chat_completion(st, q, r); });
  svr.Post("/v1/completions", [&st](const httplib::Request& q, httplib::Response& r) { handle_text_completion(st, q, r); });
  svr.Post("/tokenize", [&st](const httplib::Request& q, httplib::Response& r) { handle_tokenize(st, q, r); });
  svr.Post("/detokenize", [&st](const httplib::Request& q, httplib::Response& r) { handle_detokenize(st, q, r); });
  svr.Get("/v1/models", [&st, started](const httplib::Request&, httplib::Response& r) {
    const ModelMeta meta{st.n_ctx, ckjit_model_n_vocab(st.model), ckjit_model_has_vision(st.model) != 0, st.opt.parallel};
    json_reply(r, models_json(st.model_name, started, meta));
  });
  svr.Get("/health", [&st](const httplib::Request&, httplib::Response& r) {
    if (st.draining) r.status = 503;  // a health check takes the replica out of rotation
    json_reply(r, {{"status", st.draining ? "draining" : "ok"}});
  });
  svr.Get("/metrics", [&st](const httplib::Request&, httplib::Response& r) {
    Metrics::Gauges g{st.pool->queued(), st.pool->busy(), st.pool->size(), st.cache->stats()};
    r.set_content(st.metrics.render(g), "text/plain; version=0.0.4");
  });
  // Whatever httplib refuses by itself (413 over --max-body-mb, 404, 405, 400) gets an OpenAI body too.
  svr.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& r) {
    if (!r.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const std::string msg = r.status == 413 ? "the request body is over the server's limit (--max-body-mb)"
                            : r.status == 404 ? "no such route"
                                              : "the request was refused (HTTP " + std::to_string(r.status) + ")";
    r.set_content(error_json(msg, error_type_for(r.status), r.status == 413 ? "body_too_large" : "http_" + std::to_string(r.status)).dump(),
                  "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& r, std::exception_ptr ep) {
    std::string cause = "an unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      cause = e.what();
    } catch (...) {
    }
    r.status = 500;
    r.set_content(internal_error_json(cause.c_str()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
  });
  svr.set_logger([&st](const httplib::Request& q, const httplib::Response& r) { st.metrics.request(q.path, r.status); });
}

// After the first SIGTERM / SIGINT: new requests get 503 while those in flight finish, until none
// is left, --drain-seconds pass, or a second signal comes (then what still runs is cut).
void drain(ServerState& st, const sigset_t& signals, int sig, const std::atomic<bool>& served) {
  const char* name = sig == SIGINT ? "SIGINT" : "SIGTERM";
  if (st.opt.drain_s <= 0 || st.in_flight == 0) {
    std::fprintf(stderr, "ckjit serve: %s, stopping\n", name);
    return;
  }
  st.draining = true;
  std::fprintf(stderr, "ckjit serve: %s, draining %d request(s) for up to %d s (a second signal stops at once)\n", name, st.in_flight.load(),
               st.opt.drain_s);
  std::fflush(stderr);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(st.opt.drain_s);
  const timespec tick{0, 50'000'000};
  while (st.in_flight > 0 && !served && std::chrono::steady_clock::now() < deadline) {
    if (sigtimedwait(&signals, nullptr, &tick) > 0) {
      std::fprintf(stderr, "ckjit serve: second signal, stopping now\n");
      return;
    }
  }
  if (st.in_flight > 0) std::fprintf(stderr, "ckjit serve: %d request(s) still running after %d s, stopping them\n", st.in_flight.load(), st.opt.drain_s);
  else std::fprintf(stderr, "ckjit serve: drained, stopping\n");
}

}  // namespace

int run_server(const ServerOptions& o) {
  if (o.parallel < 1) throw std::runtime_error("--parallel must be at least 1");
  if (o.api_key_given && o.api_key.empty()) throw std::runtime_error("--api-key is empty (an empty key would turn authentication off)");
  if (o.api_key.empty() && !loopback_name(o.host) && !o.no_api_key_ok)
    throw std::runtime_error("--host " + o.host + " listens beyond this machine without --api-key: anyone who can connect could use it; "
                             "give --api-key KEY (or --api-key-file F), or --no-api-key-ok to serve without one");
  // SIGINT / SIGTERM are taken by one thread (sigwait) instead of a handler: blocked here, before
  // any thread exists, so every thread (the model's workers, httplib's) inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not the end of the server

  std::unique_ptr<ServerState> st = load(o);
  const int64_t started =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  int status = 0;
  {
    ConnectionLimits cl;
    cl.workers = o.http_threads > 0 ? o.http_threads : std::max(8, 4 * o.parallel + 4);
    cl.max_waiting = cl.workers;
    cl.request_timeout_s = o.request_timeout_s;
    // What the triage answers without a worker: /health as its route does, and the 503.
    ServerState* state = st.get();
    cl.health = [state] {
      return std::pair<int, std::string>{state->draining ? 503 : 200, state->draining ? R"({"status":"draining"})" : R"({"status":"ok"})"};
    };
    cl.busy_body = error_json("the server is busy (every connection is in use); retry", "server_error", "server_busy").dump();
    cl.answered = [state](const std::string& path, int status) { state->metrics.request(path, status); };
    GuardedServer svr(std::move(cl));
    // httplib's default also sets SO_REUSEPORT, which lets a second server share a busy port
    // silently: only SO_REUSEADDR here, so a port in use is an error.
    svr.set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    svr.set_payload_max_length(size_t(o.max_body_mb * 1024 * 1024));
    if (o.timeout_s < 1) throw std::runtime_error("--timeout must be at least 1 second");
    if (o.request_timeout_s < 1) throw std::runtime_error("--request-timeout must be at least 1 second");
    svr.set_read_timeout(o.timeout_s, 0);
    svr.set_write_timeout(o.timeout_s, 0);
    routes(svr, *st, started);
    const int port = o.port == 0 ? svr.bind_to_any_port(o.host) : (svr.bind_to_port(o.host, o.port) ? o.port : -1);
    if (port < 0) {
      ckjit_batcher_free(st->batcher);
      st->pool.reset();
      ckjit_model_free(st->model);
      throw std::runtime_error("cannot listen on " + o.host + ":" + std::to_string(o.port));
    }
    svr.widen_backlog();
    std::fprintf(stderr, "ckjit serve: model '%s', %d session(s)%s, listening on http://%s:%d\n", st->model_name.c_str(), o.parallel,
                 st->batcher ? " decoding in one batch" : "", o.host.c_str(), port);
    std::fflush(stderr);
    std::atomic<bool> served{false};
    std::thread waiter([&] {
      int sig = 0;
      sigwait(&stop_signals, &sig);
      if (!served) drain(*st, stop_signals, sig, served);
      st->stopping = true;  // generations stop after their current token, queued requests leave
      st->pool->shutdown();
      svr.stop();
    });
    if (!svr.listen_after_bind() && !st->stopping) status = 1;
    served = true;
    pthread_kill(waiter.native_handle(), SIGTERM);  // no-op wake-up if a signal already came
    waiter.join();
  }  // the server's threads are joined here, before the batcher, the sessions and the model go
  ckjit_batcher_free(st->batcher);
  st->pool.reset();
  ckjit_model_free(st->model);
  std::fprintf(stderr, "ckjit serve: stopped\n");
  return status;
}

}  // namespace ckjit::serve

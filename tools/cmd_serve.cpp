// `ckjit serve`: an OpenAI-compatible HTTP server (tools/serve/) over libckjit's C API. This file
// only reads the flags (llama-server's names where it has one) and starts it.
#include <boost/program_options.hpp>

#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "tools/command.h"
#include "tools/serve/http_server.h"

namespace po = boost::program_options;

static int serve_main(const std::vector<std::string>& args) {
  ckjit::serve::ServerOptions o;
  auto& L = o.limits;
  bool no_profile = false;
  po::options_description opts("ckjit serve options");
  opts.add_options()
      ("model,m", po::value(&o.model)->required(), "text model GGUF")
      ("mmproj", po::value(&o.mmproj), "vision projector GGUF (images need it; default: the one mmproj*.gguf beside the model, if any)")
      ("alias,a", po::value(&o.alias), "the model name clients use (default: the model file's stem)")
      ("host", po::value(&o.host)->default_value("127.0.0.1"), "address to listen on")
      ("port", po::value(&o.port)->default_value(8080), "port (0: any free one, printed when listening)")
      ("parallel", po::value(&o.parallel)->default_value(1), "sessions: requests served at once (the rest wait in line); more than 1: their decode steps run in one batch (continuous batching; each request's tokens are those it would get alone)")
      ("threads,t", po::value(&o.threads)->default_value(0), "worker threads per session (0: the machine's CPU budget)")
      ("ctx-size,c", po::value(&o.n_ctx)->default_value(4096), "context per session (tokens); a longer prompt is a 400")
      ("batch-size,b", po::value(&o.n_batch)->default_value(512), "prefill rows per chunk")
      ("n-predict,n", po::value(&L.default_max_tokens)->default_value(256), "max_tokens when a request gives none")
      ("max-tokens-limit", po::value(&L.max_tokens_limit)->default_value(4096), "the largest max_tokens a request may ask (else 400)")
      ("image-min-tokens", po::value(&o.image_min_tokens)->default_value(0), "fewest rows per image (0: 8)")
      ("image-max-tokens", po::value(&o.image_max_tokens)->default_value(0), "most rows per image (0: 4096); larger images are resized")
      ("image-max-pixels", po::value(&L.max_image_pixels)->default_value(L.max_image_pixels), "largest image (width x height from its header) a request may send (else 400)")
      ("max-images", po::value(&L.max_images)->default_value(L.max_images), "most images per request")
      ("max-body-mb", po::value(&o.max_body_mb)->default_value(32), "largest request body (else 413)")
      ("image-cache-mb", po::value(&o.image_cache_mb)->default_value(256), "memory for encoded images kept for later requests (0: off)")
      ("allow-local-images", po::value(&L.local_image_root)->value_name("DIR"),
       "accept file:// URLs and absolute paths as image_url when they name a regular file under DIR (links and '..' resolved first; else 403)")
      ("http-threads", po::value(&o.http_threads)->default_value(0), "connections handled at once (0: 4 x parallel + 4, at least 8)")
      ("max-queue", po::value(&o.max_queue)->default_value(0),
       "requests that may wait for a session; past it a request gets 503 with Retry-After at once (0: 4 x parallel)")
      ("timeout", po::value(&o.timeout_s)->default_value(o.timeout_s), "seconds a connection may stall reading a request or writing an answer (llama-server's --timeout)")
      ("request-timeout", po::value(&o.request_timeout_s)->default_value(o.request_timeout_s),
       "seconds a request's headers and body may take to arrive, from its first byte (a slow client is cut off, not waited for)")
      ("drain-seconds", po::value(&o.drain_s)->default_value(o.drain_s),
       "on SIGTERM (or a first SIGINT): refuse new requests (503) and let those in flight finish for up to this long, then exit 0; 0: cut them at once")
      ("max-isa", po::value(&o.max_isa), "cap the instruction set: avx2, avxvnni, avx512, amx")
      ("vision-precision", po::value(&o.vision_precision)->default_value("f32"), "vision tower arithmetic: f32 (default) | int8 (every matrix as Q8_0: faster) | bf16 (AMX-BF16 where granted), as in ckjit run")
      ("api-key", po::value(&o.api_key), "require 'Authorization: Bearer KEY' on every route but /health (else 401)")
      ("api-key-file", po::value<std::string>(), "read the API key from the file's first line (keeps it out of the process list)")
      ("no-api-key-ok", po::bool_switch(&o.no_api_key_ok), "serve a non-loopback --host without an API key (refused otherwise)")
      ("hosts", po::value<std::string>()->value_name("NAME,..."),
       "Host header names answered (* for any; default: the loopback names when --host is loopback, else any)")
      ("cors", po::value(&o.cors_origin), "answer browsers from this origin (or *) with CORS headers and preflights (default: none)")
      ("no-profile", po::bool_switch(&no_profile), "ignore this machine's tuned profile (ckjit tune)")
      ("no-cache-sharing", po::bool_switch(&o.no_cache_sharing),
       "reuse prompt rows and encoded images only between requests of the same 'user' (else a client can time or count another's cache hits)")
      ("help,h", "show this help");
  // The flag took no folder before: its bare form would now swallow the next flag as a folder.
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] == "--allow-local-images" && (i + 1 == args.size() || args[i + 1].rfind("-", 0) == 0))
      throw std::runtime_error("--allow-local-images needs a folder: --allow-local-images DIR (only regular files under DIR are read)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: ckjit serve -m MODEL.gguf [--mmproj MMPROJ.gguf] [--host H] [--port P] [--parallel N]\n"
                 "POST /v1/chat/completions, /tokenize, /detokenize; GET /v1/models, /health, /metrics\n"
              << opts;
    return 0;
  }
  po::notify(vm);
  o.use_profile = !no_profile;
  o.api_key_given = vm.count("api-key") > 0;
  if (vm.count("hosts")) {
    std::stringstream list(vm["hosts"].as<std::string>());
    for (std::string h; std::getline(list, h, ',');)
      if (const size_t a = h.find_first_not_of(" \t"); a != std::string::npos) o.hosts.push_back(h.substr(a, h.find_last_not_of(" \t") - a + 1));
  }
  if (vm.count("api-key-file")) {
    std::ifstream in(vm["api-key-file"].as<std::string>());
    if (!in || !std::getline(in, o.api_key) || o.api_key.empty())
      throw std::runtime_error("--api-key-file: cannot read a key from '" + vm["api-key-file"].as<std::string>() + "'");
  }
  return ckjit::serve::run_server(o);
}

static ckjit::cli::Register reg("serve", "OpenAI-compatible HTTP server (chat completions with images, streaming)", serve_main);

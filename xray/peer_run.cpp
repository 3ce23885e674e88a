#include "xray/peer_run.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "runtime/error.h"
#include "xray/llama_dump.h"
#include "xray/xray.h"

namespace ckjit::xray {

namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string tail(const std::string& path, size_t n = 600) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > n ? s.substr(s.size() - n) : s;
}

}  // namespace

std::string find_peer_cli(const std::string& given) {
  std::string p = given;
  if (p.empty())
    if (const char* e = std::getenv("CKJIT_PEER_CLI")) p = e;
  if (p.empty())
    throw Error("--reference llama needs llama.cpp's peer-cli: give --peer PATH (bash ../shared/peer/build.sh prints it) or set "
                "CKJIT_PEER_CLI, or pass dumps recorded beforehand with --llama-dump DIR --llama-dump-serial DIR");
  if (access(p.c_str(), X_OK) != 0) throw Error("peer-cli '" + p + "' is not an executable file");
  return p;
}

LlamaDumps record_llama_dumps(const XrayOptions& o, const std::vector<int32_t>& trajectory, bool image) {
  const std::string peer = find_peer_cli(o.peer_cli);
  LlamaDumps d;
  namespace fs = std::filesystem;
  if (!o.work_dir.empty()) {
    d.root = o.work_dir;
  } else {
    std::string tmpl = (fs::temp_directory_path() / "ckjit-xray-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw Error("xray: cannot create a temporary folder for llama.cpp's dumps");
    d.root = tmpl;
  }
  std::error_code ec;
  fs::create_directories(d.root, ec);
  if (ec) throw Error("xray: cannot create the dump folder " + d.root + ": " + ec.message());
  const std::string forced = d.root + "/trajectory.txt";
  {
    std::ofstream f(forced);
    for (int32_t id : trajectory) f << id << "\n";
    if (!f) throw Error("xray: cannot write " + forced);
  }
  const RunnerOptions& r = o.run;
  if (r.prompt.system) throw Error("--reference llama: peer-cli takes no system message; drop --system");
  std::string base = quote(peer) + (image ? " image" : " complete") + " -m " + quote(r.model);
  if (image) base += " --mmproj " + quote(r.mmproj) + " --image " + quote(r.image) + " --image-min-tokens " +
                     std::to_string(r.image_min_tokens) + " --image-max-tokens " + std::to_string(r.image_max_tokens);
  base += " -p " + quote(r.prompt.text) + (r.prompt.chat ? " --chat" : "") + " --force " + quote(forced) + " -c " +
          std::to_string(r.n_ctx) + " --dump-filter " + quote(llama_dump_filter(image));
  if (r.threads > 0) base += " -t " + std::to_string(r.threads);
  auto run = [&](const std::string& name, const std::string& extra, std::string& dir, std::string& embd) {
    dir = d.root + "/" + name;
    fs::remove_all(dir, ec);
    std::string cmd = base + extra + " --dump-tensors " + quote(dir);
    if (image) embd = d.root + "/" + name + ".embd", cmd += " --dump-embd " + quote(embd);
    const std::string out = d.root + "/" + name + ".json", err = d.root + "/" + name + ".err";
    std::fprintf(stderr, "xray: llama.cpp %s run (peer-cli)...\n", name.c_str());
    const int rc = std::system((cmd + " >" + quote(out) + " 2>" + quote(err)).c_str());
    if (rc != 0) throw Error("peer-cli failed (" + name + " run, status " + std::to_string(rc) + "): " + tail(err));
  };
  run("batched", " -b " + std::to_string(std::max<int64_t>(r.n_ubatch, 2048)) + " -ub " + std::to_string(r.n_ubatch), d.batched, d.embd);
  run("serial", " -b 1 -ub 1", d.serial, d.embd_serial);
  return d;
}

void check_recorded_trajectory(const LlamaDumps& d, const std::vector<int32_t>& trajectory) {
  for (const std::string& dir : {d.batched, d.serial}) {
    if (dir.empty()) continue;
    const std::filesystem::path t = std::filesystem::path(dir).lexically_normal().parent_path() / "trajectory.txt";
    std::ifstream in(t);
    if (!in) continue;  // recorded elsewhere: nothing to check against
    std::vector<int32_t> ids;
    for (int64_t id; in >> id;) ids.push_back(int32_t(id));
    if (ids != trajectory)
      throw Error("llama.cpp dump " + dir + " was recorded on another trajectory (" + t.string() +
                  "): this run's tokens differ, so its rows would not line up; record it again (drop --llama-dump)");
  }
}

void remove_llama_dumps(const LlamaDumps& d) {
  std::error_code ec;
  if (!d.root.empty()) std::filesystem::remove_all(d.root, ec);
}

}  // namespace ckjit::xray

#include "tools/ocr/journal.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/error.h"
#include "tools/ocr/inputs.h"

namespace ckjit::ocr {

namespace {

bool is_record(const Record& j) {
  return j.is_object() && j.contains("source") && j["source"].is_string() && j.contains("page") &&
         j["page"].is_number_integer() && j["page"].get<int64_t>() >= 1 && j["page"].get<int64_t>() <= INT32_MAX;
}

struct Parsed {
  std::vector<Record> records;
  size_t good_bytes = 0;  // the file up to the end of the last complete record line
  bool partial = false;
  std::string partial_text;
};

Parsed parse_file(const std::string& path) {
  Parsed out;
  std::error_code ec;
  // A device or a pipe (-o /dev/zero) would be read forever: a journal is a regular file.
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw Error("the journal '" + path + "' is not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (std::filesystem::exists(path)) throw Error("cannot read the journal '" + path + "'");
    return out;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str();
  size_t pos = 0, line_no = 0;
  while (pos < all.size()) {
    ++line_no;
    const size_t nl = all.find('\n', pos);
    const bool complete = nl != std::string::npos;
    const std::string line = all.substr(pos, complete ? nl - pos : std::string::npos);
    const size_t next = complete ? nl + 1 : all.size();
    Record j = Record::parse(line, nullptr, /*allow_exceptions=*/false);
    if (complete && is_record(j)) {
      out.records.push_back(std::move(j));
      out.good_bytes = next;
    } else if (next >= all.size()) {  // the last line: a killed run's page in progress
      out.partial = true;
      out.partial_text = line.substr(0, 80);
    } else if (line.find_first_not_of(" \t\r") != std::string::npos) {
      throw Error("'" + path + "' line " + std::to_string(line_no) +
                  " is not a ckjit ocr record (a JSON object with source and page); not appending to it");
    } else {
      out.good_bytes = next;  // a blank line in the middle is harmless
    }
    pos = next;
  }
  return out;
}

}  // namespace

JournalRead read_journal(const std::string& path) {
  Parsed p = parse_file(path);
  JournalRead r;
  std::set<std::string> ok;
  for (const auto& j : p.records) {
    const std::string key = page_key(j["source"].get<std::string>(), j["page"].get<int>());
    r.done.insert(key);
    (j.contains("error") ? r.failed : ok).insert(key);
  }
  for (const std::string& key : ok) r.failed.erase(key);  // an ok record anywhere: the page is done
  r.records = p.records.size();
  if (p.partial) {
    std::error_code ec;
    std::filesystem::resize_file(path, p.good_bytes, ec);
    if (ec) throw Error("cannot cut the unfinished last line of '" + path + "': " + ec.message());
    r.dropped_partial = true;
    r.dropped_text = p.partial_text;
  }
  return r;
}

std::vector<Record> load_records(const std::string& path) {
  if (!std::filesystem::exists(path)) throw Error("journal '" + path + "' does not exist");
  return parse_file(path).records;
}

JournalWriter::JournalWriter(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "ab")) {
  if (!f_) throw Error("cannot open '" + path + "' for appending");
  // Unbuffered: a failed write leaves nothing in a buffer that a later flush or close would append.
  std::setvbuf(f_, nullptr, _IONBF, 0);
}

JournalWriter::~JournalWriter() {
  if (f_) std::fclose(f_);
}

void JournalWriter::append(const Record& record) {
  // error_handler replace: a model's invalid UTF-8 must not make the page's record unwritable.
  const std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const long before = std::ftell(f_);
  // fsync per record: once append returns, a power cut or kill -9 keeps the whole line.
  if (std::fwrite(line.data(), 1, line.size(), f_) == line.size() && std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0) return;
  const int err = errno;
  // A full disk (ENOSPC) may have taken part of the line: cut it, so the journal ends on a whole record.
  std::clearerr(f_);
  if (before >= 0 && ::ftruncate(::fileno(f_), before) == 0) std::fseek(f_, 0, SEEK_END);
  throw Error("writing the record of " + record.value("source", std::string("?")) + " to '" + path_ + "' failed: " + std::strerror(err) +
              (err == ENOSPC ? " (free some space, then run the same command again: it resumes)" : ""));
}

namespace {
// Writes records to path through path.partial and a rename: never a half-written journal.
void replace_journal(const std::string& path, const std::vector<const Record*>& records) {
  const std::string tmp = path + ".partial";
  std::filesystem::remove(tmp);
  {
    JournalWriter w(tmp);
    for (const Record* j : records) w.append(*j);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error("cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
}
}  // namespace

size_t drop_error_records(const std::string& path, const std::set<std::string>& keys) {
  if (keys.empty()) return 0;
  const std::vector<Record> all = parse_file(path).records;
  std::vector<const Record*> kept;
  for (const Record& j : all)
    if (!j.contains("error") || !keys.count(page_key(j["source"].get<std::string>(), j["page"].get<int>())))
      kept.push_back(&j);
  if (kept.size() == all.size()) return 0;
  replace_journal(path, kept);
  return all.size() - kept.size();
}

size_t merge_journals(const std::vector<std::string>& inputs, const std::string& out) {
  // Keyed by (source, page) in a map: the output order, and one record per page.
  std::map<std::pair<std::string, int64_t>, Record> pages;
  size_t duplicates = 0;
  for (const std::string& in : inputs)
    for (auto& j : load_records(in)) {
      auto key = std::make_pair(j["source"].get<std::string>(), j["page"].get<int64_t>());
      auto it = pages.find(key);
      if (it == pages.end()) {
        pages.emplace(std::move(key), std::move(j));
        continue;
      }
      ++duplicates;
      if (it->second.contains("error") && !j.contains("error")) it->second = std::move(j);
    }
  std::vector<const Record*> sorted;
  for (const auto& [key, j] : pages) sorted.push_back(&j);
  replace_journal(out, sorted);
  return duplicates;
}

}  // namespace ckjit::ocr

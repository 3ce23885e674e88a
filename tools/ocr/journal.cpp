#include "tools/ocr/journal.h"

#include <unistd.h>

#include <cstdint>
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
  for (const auto& j : p.records) {
    const std::string key = page_key(j["source"].get<std::string>(), j["page"].get<int>());
    r.done.insert(key);
    if (j.contains("error")) r.failed.insert(key);
  }
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
}

JournalWriter::~JournalWriter() {
  if (f_) std::fclose(f_);
}

void JournalWriter::append(const Record& record) {
  // error_handler replace: a model's invalid UTF-8 must not make the page's record unwritable.
  const std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0)
    throw Error("writing to '" + path_ + "' failed");
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
  // Written aside and renamed: a failed merge never leaves a half output.
  const std::string tmp = out + ".partial";
  std::filesystem::remove(tmp);
  {
    JournalWriter w(tmp);
    for (const auto& [key, j] : pages) w.append(j);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out, ec);
  if (ec) throw Error("cannot rename '" + tmp + "' to '" + out + "': " + ec.message());
  return duplicates;
}

}  // namespace ckjit::ocr

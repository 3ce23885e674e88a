#pragma once
// The JSONL journal of `ckjit ocr`: one record per page, appended and flushed as each page ends,
// so a killed run loses at most the page in progress, and a rerun skips what is recorded.
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ckjit::ocr {

// A journal record; ordered so that lines read source, page, text, ... as they were built.
using Record = nlohmann::ordered_json;

struct JournalRead {
  std::set<std::string> done;     // page_key() of every record (ok or error)
  std::set<std::string> failed;   // page_key() of the pages with error records only (none ok)
  size_t records = 0;
  bool dropped_partial = false;   // a last line cut short (a killed run) was removed
  std::string dropped_text;       // what it held, for the message
};

// Reads an existing journal (a missing file reads as empty). A last line that is not a complete
// record — no final newline or not a JSON object with "source" and "page" — is the page a killed
// run was writing: it is cut from the file (so appends start on a clean line). Any earlier bad
// line means the file is not a journal: ckjit::Error, the file untouched.
JournalRead read_journal(const std::string& path);

// The records of a journal file as JSON objects, in file order (a bad last line ignored, as above,
// but the file not changed). Used by the merge.
std::vector<Record> load_records(const std::string& path);

// Rewrites the journal without the error records of the given pages (page_key()), written aside
// and renamed so that a failure leaves the journal as it was. Returns the records removed. For
// --retry-errors: the pages are done again and their new records appended, one record per page.
size_t drop_error_records(const std::string& path, const std::set<std::string>& keys);

// Appends one record per line and flushes each.
class JournalWriter {
 public:
  explicit JournalWriter(const std::string& path);  // creates or appends; throws ckjit::Error
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;
  void append(const Record& record);  // throws ckjit::Error if the write fails

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
};

// Merges journals (the shards of one run) into out: one record per page, ordered by source (byte
// order) then page number. A page recorded twice keeps its successful record over an error one,
// else the first. Returns the number of duplicates dropped.
size_t merge_journals(const std::vector<std::string>& inputs, const std::string& out);

}  // namespace ckjit::ocr

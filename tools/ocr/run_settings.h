#pragma once
// What decides a page's text (model, projector, prompt, DPI, schema, sampling, ...), kept beside the
// journal as OUT.settings.json, so that resuming with other settings does not mix two runs' pages in
// one journal: refused, naming what changed, unless --force-resume.
#include <string>

#include "tools/ocr/journal.h"
#include "tools/ocr/runner.h"

namespace ckjit::ocr {

std::string settings_path(const std::string& journal);
Record run_settings(const OcrOptions& o);
// Before the pages run: with records in the journal, the stored settings must equal this run's
// (Error invalid_argument naming the differences otherwise, unless force); then this run's are stored.
void check_and_store_settings(const OcrOptions& o, size_t journal_records, bool force);

}  // namespace ckjit::ocr

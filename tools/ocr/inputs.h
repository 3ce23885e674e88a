#pragma once
// What `ckjit ocr` works on: the documents named on the command line (image files, PDFs, folders
// searched recursively) expanded to pages, and the deterministic split of those pages into shards.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ckjit::ocr {

// tiff: an image file of one or more pages (each a page of its own, as a PDF's).
enum class DocKind { image, pdf, tiff };

struct Document {
  std::string source;  // the path as given (folder entries: the folder as given / relative path)
  DocKind kind;
  bool recognised = true;  // false: neither its bytes nor its name say image or PDF (read as an image,
                           // so its error record names what it is)
};

// One unit of work and one journal line. page is 1-based (1 for an image file).
struct Page {
  std::string source;
  int page = 1;
  DocKind kind = DocKind::image;
  std::string error;  // set when the document could not even be opened (broken or encrypted PDF)
};

// Kind of a file from its first bytes (PDF, TIFF or the other images' magic), else from its extension;
// nullopt when neither says image or PDF.
std::optional<DocKind> classify_file(const std::string& path);

// What a folder's walk left out, for the start line: nothing is dropped in silence.
struct SkippedFiles {
  size_t hidden = 0;   // names starting with '.'
  size_t outputs = 0;  // this run's own files (the journal, its settings, page files)
};

// The documents of the inputs, in order: each input in the order given; a folder's files sorted by
// path (byte order, so the same on every machine), recursively (not into symlinked folders). A
// folder's files are all kept but hidden ones and `outputs` (lexically normal paths; a predicate
// for page files), which are counted in *skipped: one that is not an image or PDF (a TIFF, a text,
// ...) is a document whose page gets an error record naming its format. The same path twice is one
// document. A missing input throws ckjit::Error.
std::vector<Document> enumerate_documents(const std::vector<std::string>& inputs,
                                          const std::function<bool(const std::string&)>& is_output = {}, SkippedFiles* skipped = nullptr);

// Expands documents into pages: PDFs (pdf.h) and TIFFs are opened to count their pages; one that cannot be
// opened gives a single page 1 carrying the error, and so does a document that is not an image or
// PDF (its error names its format from its first bytes; the file is not read further).
std::vector<Page> expand_pages(const std::vector<Document>& docs);

// --shard i/N: 0-based index i of N shards (0 <= i < N), as Slurm's --array=0-(N-1) numbers them.
struct Shard {
  uint32_t index = 0, count = 1;
};
// Throws ckjit::Error with the reason for anything but "i/N" with 0 <= i < N, N >= 1.
Shard parse_shard(const std::string& text);

// The stable key of a page ("source" and page), the journal's identity of a record too.
std::string page_key(const std::string& source, int page);

// The shard a page belongs to: FNV-1a 64 of its key modulo N. Depends only on the key, so a page
// stays in its shard whatever the machine, the other inputs or their order.
uint32_t shard_of(const std::string& source, int page, uint32_t count);

}  // namespace ckjit::ocr

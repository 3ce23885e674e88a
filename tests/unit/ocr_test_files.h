#pragma once
// Test documents for `ckjit ocr`, written by hand: minimal valid PDFs (a filled rectangle per page,
// no fonts), an encrypted one and a broken one.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include "tests/unit/slurp.h"

namespace ocr_test {

struct PdfPage {
  double w = 120, h = 90;  // points
};

// A PDF 1.4 with one content stream per page and a correct xref table. encrypted: the trailer names
// a Standard security handler (RC4 40-bit) whose user password is not empty, so a reader without
// the password finds it locked.
inline std::string make_pdf(const std::vector<PdfPage>& pages, bool encrypted = false) {
  std::string pdf = "%PDF-1.4\n%\xE2\xE3\xCF\xD3\n";
  std::vector<size_t> offsets;
  auto obj = [&](const std::string& body) {
    offsets.push_back(pdf.size());
    pdf += std::to_string(offsets.size()) + " 0 obj\n" + body + "\nendobj\n";
  };
  const size_t n = pages.size();
  std::string kids;
  for (size_t i = 0; i < n; ++i) kids += std::to_string(3 + 2 * i) + " 0 R ";
  obj("<< /Type /Catalog /Pages 2 0 R >>");
  obj("<< /Type /Pages /Kids [" + kids + "] /Count " + std::to_string(n) + " >>");
  for (size_t i = 0; i < n; ++i) {
    char box[128];
    std::snprintf(box, sizeof box, "[0 0 %g %g]", pages[i].w, pages[i].h);
    obj("<< /Type /Page /Parent 2 0 R /MediaBox " + std::string(box) + " /Resources << >> /Contents " +
        std::to_string(4 + 2 * i) + " 0 R >>");
    // Each page a different rectangle, so the pages' images differ.
    char draw[128];
    std::snprintf(draw, sizeof draw, "0.%zu 0.3 0.7 rg %zu 10 40 30 re f", (i % 9) + 1, 10 + 15 * i);
    const std::string content(draw);
    obj("<< /Length " + std::to_string(content.size()) + " >>\nstream\n" + content + "\nendstream");
  }
  if (encrypted)
    obj("<< /Filter /Standard /V 1 /R 2 /P -44 /O <" + std::string(64, 'a') + "> /U <" + std::string(64, '5') + "> >>");
  const size_t xref = pdf.size();
  pdf += "xref\n0 " + std::to_string(offsets.size() + 1) + "\n0000000000 65535 f \n";
  for (size_t off : offsets) {
    char e[32];
    std::snprintf(e, sizeof e, "%010zu 00000 n \n", off);  // each entry exactly 20 bytes
    pdf += e;
  }
  pdf += "trailer\n<< /Size " + std::to_string(offsets.size() + 1) + " /Root 1 0 R";
  if (encrypted)
    pdf += " /Encrypt " + std::to_string(offsets.size()) + " 0 R /ID [<0123456789abcdef0123456789abcdef> <0123456789abcdef0123456789abcdef>]";
  pdf += " >>\nstartxref\n" + std::to_string(xref) + "\n%%EOF\n";
  return pdf;
}

// Starts like a PDF, holds nothing a reader can use.
inline std::string broken_pdf() { return "%PDF-1.4\nthis is not a PDF body\n1 0 obj << /Type /Cat\n%%EOF\n"; }

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::string read_file(const std::filesystem::path& p) {
  return test_io::slurp(p);
}

}  // namespace ocr_test

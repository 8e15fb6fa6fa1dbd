// Fuzz target for the answers of web servers to the ranged GETs of remote reads (io::add_header_line,
// io::range_answer_body): status, header lines and body. The server holds a file F of known bytes and
// answers a request for [offset, offset + length) either with a well-formed Content-Range of the fuzzer's
// numbers and the bytes F holds there (an honest server that sends other bytes than asked), or with raw
// header lines from the input and the bytes F holds at `offset`. Whatever hzio accepts must be the bytes
// of F from `offset` on, no more than asked: a wrong range taken for the right one is silent wrong data.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "io/http_storage.hpp"

namespace {

uint8_t file_byte(uint64_t i) { return static_cast<uint8_t>(i * 131 + 7); }

std::string file_bytes(uint64_t from, uint64_t count, uint64_t file_size) {
  std::string s;
  for (uint64_t i = from; i < std::min(from + count, file_size); ++i) s.push_back(static_cast<char>(file_byte(i)));
  return s;
}

uint64_t u16(const uint8_t* p) { return p[0] | (uint64_t{p[1]} << 8); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kFixed = 16;
  if (size < kFixed) return 0;
  using hzio::io::HttpStorage;
  const long statuses[] = {206, 200, 404, 416, 500, 302};
  const long status = data[0] < 6 ? statuses[data[0]] : 100 + data[0];
  const bool raw = data[1] & 1;
  const uint64_t file_size = u16(data + 2) % 4097;
  const uint64_t offset = u16(data + 4) % (file_size + 17);
  const uint64_t length = 1 + u16(data + 6) % 4096;
  const uint64_t first = u16(data + 8), last = u16(data + 10), total = u16(data + 12), sent = u16(data + 14) % 4200;

  HttpStorage::Answer a;
  a.status = status;
  if (raw) {  // header lines as the input has them, and F's bytes from where they were asked
    std::string_view text(reinterpret_cast<const char*>(data + kFixed), size - kFixed);
    while (!text.empty()) {
      const size_t end = text.find('\n');
      hzio::io::add_header_line(text.substr(0, end), a);
      text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    }
    a.body = file_bytes(offset, sent, file_size);
  } else {  // a well-formed answer about the range the fuzzer chose, and F's bytes there
    const uint64_t from = status == 200 ? 0 : first;
    hzio::io::add_header_line("Content-Range: bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" +
                                  std::to_string(total) + "\r\n",
                              a);
    a.body = file_bytes(from, sent, file_size);
    hzio::io::add_header_line("content-length:" + std::to_string(a.body.size()), a);
  }
  int64_t known = -1;
  auto body = hzio::io::range_answer_body(a, "http://fuzz.invalid/f", offset, length, &known);
  if (!body.is_ok()) return 0;
  const std::string& got = body.value();
  if (got.size() > length) std::abort();  // more than asked
  if (got != file_bytes(offset, got.size(), file_size) || offset + got.size() > file_size)
    std::abort();  // bytes from elsewhere in F taken for those at `offset`
  if (known < static_cast<int64_t>(offset + got.size())) std::abort();  // a size that contradicts the bytes
  return 0;
}

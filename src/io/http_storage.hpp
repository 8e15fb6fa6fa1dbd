// Datasets read over HTTP(S) from any web server that serves their files with byte ranges (RFC 9110
// Range requests): an io::Storage whose files are URLs of one origin. libcurl does the HTTP. Read only.
// Layer: io.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "hzio/status.hpp"
#include "io/storage.hpp"

namespace hzio::io {

// Local. Splits "http[s]://host[:port]/path" into its origin ("http[s]://host[:port]") and path ("/path",
// lexically normalised; "/" when empty); nullopt when `url` is not an http or https URL.
std::optional<std::pair<std::string, std::string>> split_http_url(const std::string& url);

// The files of one origin, named by their paths on the server. Every request is a GET or HEAD with
// keep-alive connections (one per thread); failures that may pass (a refused or dropped connection, a
// timeout, 429 and 5xx answers) are retried with growing pauses, kRetries times. A file's size comes
// from the Content-Range of its first ranged answer, so that opening costs no request.
class HttpStorage final : public Storage, public std::enable_shared_from_this<HttpStorage> {
 public:
  static constexpr int kRetries = 4;
  // Requests sent at once for hints (browsers open about as many connections to one server).
  static constexpr size_t kWorkers = 8;

  // Local. Errors: kInvalidArgument (not an http or https origin), kUnsupported (built without HTTP).
  static Result<std::shared_ptr<HttpStorage>> make(const std::string& origin);

  const std::string& origin() const { return origin_; }
  // Local, thread-safe. Requests sent and body bytes received so far (retries included).
  int64_t requests() const { return requests_.load(); }
  int64_t bytes() const { return bytes_.load(); }

  bool writable() const override { return false; }
  bool cheap_small_reads() const override { return false; }
  bool checks_commits() const override { return false; }
  std::string describe(const std::string& path) const override { return origin_ + path; }
  Result<std::shared_ptr<const Readable>> open(const std::string& path) const override;
  Result<std::string> read_text(const std::string& path, size_t max_bytes) const override;
  Result<PathKind> path_kind(const std::string& path) const override;
  Result<std::array<uint64_t, 5>> identity(const std::string& path) const override;
  Result<std::vector<std::string>> list_files(const std::string& dir, int max_depth) const override;
  Traffic traffic() const override { return {requests_.load(), bytes_.load()}; }

  // What one request brought back.
  struct Answer {
    long status = 0;
    std::string body;
    std::string content_range, etag, last_modified;
    int64_t content_length = -1;
  };
  // Local, thread-safe. One request (GET, or HEAD when `head`), with `range` ("a-b") when not empty;
  // a body larger than `max_body` ends the transfer with an error. Retries as above. Errors: kIo
  // naming the URL and the reason.
  Result<Answer> request(const std::string& path, bool head, const std::string& range, size_t max_body) const;
  // Local, thread-safe. Runs `job` on one of kWorkers threads (started when needed); jobs not started
  // when the storage goes are dropped.
  void run(std::function<void()> job) const;
  ~HttpStorage() override;

 private:
  explicit HttpStorage(std::string origin) : origin_(std::move(origin)) {}
  std::string origin_;
  mutable std::atomic<int64_t> requests_{0}, bytes_{0};
  mutable std::mutex jobs_mutex_;
  mutable std::condition_variable jobs_ready_;
  mutable std::deque<std::function<void()>> jobs_;
  mutable std::vector<std::thread> workers_;
  mutable size_t busy_ = 0;
  std::atomic<bool> stopping_{false};  // the storage goes: transfers in flight abort
};

// Local. Adds one header line of an answer ("Name: value", CR LF ending or not) to `a`: Content-Range,
// Content-Length (-1 unless all digits), ETag and Last-Modified; other lines are ignored.
void add_header_line(std::string_view line, HttpStorage::Answer& a);

// Local. The bytes of [offset, offset + length) that the answer `a` to a ranged GET of `url` brought,
// checked against what was asked: a 206 whose Content-Range ("bytes first-last/total") names exactly the
// bytes of the body, starting at `offset`, no more than asked, fewer only at the end of the file; or a 200
// with the whole file, when it is no longer than asked and `offset` is 0. Sets *size to the file's size
// when the answer tells it (0 for a 416 at offset 0: an empty file). Errors: kNotFound (404), kCorrupt
// (416: the file ends before `offset`), kIo (any other answer, naming the URL and what is wrong).
Result<std::string> range_answer_body(HttpStorage::Answer a, const std::string& url, uint64_t offset, uint64_t length,
                                      int64_t* size);

}  // namespace hzio::io

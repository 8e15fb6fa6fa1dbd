// Reading datasets over HTTP with libcurl (http_storage.hpp).
#include "io/http_storage.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>
#include <mutex>
#include <thread>

#include <charconv>

#if HZIO_WITH_HTTP
#include <curl/curl.h>
#endif

namespace hzio::io {

std::optional<std::pair<std::string, std::string>> split_http_url(const std::string& url) {
  size_t scheme = 0;
  if (url.rfind("http://", 0) == 0)
    scheme = 7;
  else if (url.rfind("https://", 0) == 0)
    scheme = 8;
  else
    return std::nullopt;
  const size_t slash = url.find('/', scheme);
  std::string origin = url.substr(0, slash), path = slash == std::string::npos ? "/" : url.substr(slash);
  if (origin.size() == scheme) return std::nullopt;  // no host
  path = std::filesystem::path(path).lexically_normal().string();
  return std::make_pair(std::move(origin), path.empty() ? std::string("/") : path);
}

namespace {

std::string_view trimmed(std::string_view v) {
  while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ' || v.back() == '\t'))
    v.remove_suffix(1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  return v;
}

// All of `v` as a non-negative decimal integer, or nullopt.
std::optional<int64_t> whole_number(std::string_view v) {
  int64_t n = -1;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < 0 || v.empty() || v.front() == '-') return std::nullopt;
  return n;
}

struct ContentRange {
  int64_t first = 0, last = 0, total = 0;
};

// "bytes first-last/total" (RFC 9110 14.4), strictly; nullopt otherwise (also for an unknown total, "*").
std::optional<ContentRange> parse_content_range(std::string_view v) {
  constexpr std::string_view kUnit = "bytes ";
  if (v.substr(0, kUnit.size()) != kUnit) return std::nullopt;
  v.remove_prefix(kUnit.size());
  const size_t dash = v.find('-'), slash = v.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || dash > slash) return std::nullopt;
  const auto first = whole_number(v.substr(0, dash)), last = whole_number(v.substr(dash + 1, slash - dash - 1)),
             total = whole_number(v.substr(slash + 1));
  if (!first || !last || !total || *first > *last || *last >= *total) return std::nullopt;
  return ContentRange{*first, *last, *total};
}

}  // namespace

void add_header_line(std::string_view line, HttpStorage::Answer& a) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return;
  std::string name(trimmed(line.substr(0, colon)));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string_view value = trimmed(line.substr(colon + 1));
  if (name == "content-range") a.content_range = std::string(value);
  if (name == "etag") a.etag = std::string(value);
  if (name == "last-modified") a.last_modified = std::string(value);
  if (name == "content-length") a.content_length = whole_number(value).value_or(-1);
}

Result<std::string> range_answer_body(HttpStorage::Answer a, const std::string& url, uint64_t offset, uint64_t length,
                                      int64_t* size) {
  const std::string asked =
      "GET " + url + " with Range bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1);
  if (a.status == 404) return not_found("GET " + url + ": 404 Not Found");
  if (a.status == 416) {
    if (offset == 0) *size = 0;
    return corrupt("read " + url + ": the file ends before byte " + std::to_string(offset + 1) +
                   " (416 Range Not Satisfiable)");
  }
  if (a.status == 200) {
    if (offset == 0 && a.content_length >= 0 && static_cast<uint64_t>(a.content_length) <= length &&
        a.body.size() == static_cast<size_t>(a.content_length)) {
      *size = a.content_length;  // the whole file fits what was asked for: a plain answer will do
      return std::move(a.body);
    }
    return io_error(asked +
                    ": the server answered 200 with the whole file; hzio reads remote datasets only from "
                    "servers that answer byte ranges (206)");
  }
  if (a.status != 206) return io_error("GET " + url + ": answered " + std::to_string(a.status));
  const auto r = parse_content_range(a.content_range);
  if (!r)
    return io_error(asked + ": a 206 answer whose Content-Range '" + a.content_range.substr(0, 100) +
                    "' is not 'bytes first-last/size'");
  const uint64_t first = static_cast<uint64_t>(r->first), n = static_cast<uint64_t>(r->last - r->first) + 1;
  if (first != offset || n > length ||
      (n < length && static_cast<uint64_t>(r->last) + 1 != static_cast<uint64_t>(r->total)))
    return io_error(asked + ": the server sent bytes " + std::to_string(r->first) + "-" + std::to_string(r->last) +
                    " of " + std::to_string(r->total) + " instead");
  if (a.body.size() != n)
    return io_error(asked + ": a 206 answer of " + std::to_string(a.body.size()) + " bytes for a Content-Range of " +
                    std::to_string(n));
  *size = r->total;
  return std::move(a.body);
}

#if HZIO_WITH_HTTP

namespace {

// One easy handle per thread: its connections stay open between requests (keep-alive).
CURL* thread_handle() {
  static std::once_flag global;
  std::call_once(global, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  struct Handle {
    CURL* curl = curl_easy_init();
    ~Handle() { curl_easy_cleanup(curl); }
  };
  thread_local Handle handle;
  return handle.curl;
}

struct Transfer {
  HttpStorage::Answer* answer;
  size_t max_body;
  bool too_large = false;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (t->answer->body.size() + n > t->max_body) {
    t->too_large = true;
    return 0;  // ends the transfer
  }
  t->answer->body.append(data, n);
  return n;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  add_header_line(std::string_view(data, size * count), *static_cast<Transfer*>(user)->answer);
  return size * count;
}

// Transfer limits: a policy, not a measurement. A server that accepts no connection within
// kConnectSeconds, or sends nothing for kStallSeconds, fails the attempt; retries pause kFirstPause, then
// twice as long each time (15 x kFirstPause in all over kRetries), enough to ride out a server that restarts.
constexpr long kConnectSeconds = 10;
constexpr long kStallSeconds = 30;
constexpr auto kFirstPause = std::chrono::milliseconds(50);

// Aborts a transfer when its storage goes (a hint still fetching when the dataset closes).
int on_progress(void* stopping, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<std::atomic<bool>*>(stopping)->load() ? 1 : 0;
}

// Whether a failure may pass when tried again.
bool transient(CURLcode code, long status) {
  if (code == CURLE_OK) return status == 429 || status >= 500;
  return code == CURLE_COULDNT_CONNECT || code == CURLE_OPERATION_TIMEDOUT || code == CURLE_GOT_NOTHING ||
         code == CURLE_RECV_ERROR || code == CURLE_SEND_ERROR || code == CURLE_PARTIAL_FILE;
}

// A file of an HttpStorage. Its size is learnt from the first ranged answer (or asked with HEAD). Hints
// (advise_willneed) fetch ranges ahead on the storage's workers, all at once; reads take them from there.
class HttpFile final : public Readable {
 public:
  // Bytes of a range fetched ahead: kept until read, at most this many per file.
  static constexpr uint64_t kMaxAhead = uint64_t{256} << 20;

  HttpFile(std::shared_ptr<const HttpStorage> storage, std::string path)
      : storage_(std::move(storage)), path_(std::move(path)), url_(storage_->origin() + path_) {}
  const std::string& path() const override { return path_; }
  Result<uint64_t> size() const override {
    if (const int64_t known = size_->load(); known >= 0) return static_cast<uint64_t>(known);
    HZIO_ASSIGN_OR_RETURN(HttpStorage::Answer a, storage_->request(path_, true, "", 0));
    if (a.status == 404) return not_found("GET " + url_ + ": 404 Not Found");
    if (a.status != 200 || a.content_length < 0)
      return io_error("HEAD " + url_ + ": answered " + std::to_string(a.status) + " without a size");
    *size_ = a.content_length;
    return static_cast<uint64_t>(a.content_length);
  }
  // What a server tells of a file's version (ETag, Last-Modified) costs a request and may be absent:
  // remote files are not remembered across opens (io::Storage::identity asks when needed).
  Result<std::array<uint64_t, 5>> identity() const override {
    return unsupported("the version of " + url_ + " is not known without asking the server");
  }

  Status read_at(uint64_t offset, std::span<std::byte> out) const override {
    if (out.empty()) return Status::ok();
    std::shared_ptr<const std::string> body;
    uint64_t at = 0;
    if (auto ahead = take_ahead(offset, out.size(), &at);
        ahead && ahead->is_ok() && ahead->value()->size() >= at + out.size()) {
      body = ahead->value();
    } else {
      at = 0;
      HZIO_ASSIGN_OR_RETURN(body, fetch(*storage_, path_, *size_, offset, out.size()));
    }
    if (body->size() < at + out.size()) {
      return corrupt("read " + url_ + ": the file ends before byte " + std::to_string(offset + out.size()));
    }
    std::memcpy(out.data(), body->data() + at, out.size());
    return Status::ok();
  }

  Result<std::vector<std::byte>> read_prefix(uint64_t max_bytes, uint64_t* size, uint64_t limit) const override {
    std::shared_ptr<const std::string> body;
    uint64_t at = 0;
    if (auto ahead = take_ahead(0, max_bytes, &at, true); ahead && ahead->is_ok()) {
      body = ahead->value();
    } else {
      auto f = fetch(*storage_, path_, *size_, 0, max_bytes);
      if (!f.is_ok() && f.status().code() == ErrorCode::kCorrupt && size_->load() == 0) {
        *size = 0;  // an empty file
        return std::vector<std::byte>();
      }
      HZIO_RETURN_IF_ERROR(f.status());
      body = std::move(f).value();
    }
    *size = static_cast<uint64_t>(size_->load());
    if (*size > limit) return corrupt("file " + url_ + " is implausibly large (" + std::to_string(*size) + " bytes)");
    const auto* p = reinterpret_cast<const std::byte*>(body->data());
    return std::vector<std::byte>(p, p + std::min<uint64_t>(body->size(), max_bytes));
  }

  const std::byte* map_readonly() const override { return nullptr; }
  size_t mapped_bytes() const override { return 0; }
  bool mapped() const override { return false; }
  Status load(uint64_t, uint64_t) const override { return Status::ok(); }
  bool resident(uint64_t, uint64_t) const override { return false; }
  // Fetches [offset, offset + length) ahead (length 0: the whole file, as posix_fadvise reads it).
  void advise_willneed(uint64_t offset, uint64_t length) const override {
    const uint64_t want = length == 0 ? kMaxAhead : length;
    {
      std::lock_guard lock(mutex_);
      if (ahead_bytes_ + want > kMaxAhead) return;  // a hint: reads fetch what did not fit
      for (const Ahead& a : ahead_)
        if (a.begin == offset && a.length == length) return;
      ahead_bytes_ += want;
    }
    auto promise = std::make_shared<std::promise<Result<std::shared_ptr<const std::string>>>>();
    {
      std::lock_guard lock(mutex_);
      ahead_.push_back({offset, length, want, want, promise->get_future().share()});
    }
    const HttpStorage* storage = storage_.get();  // outlives its workers' jobs
    storage_->run([storage, path = path_, size = size_, offset, length, promise] {
      promise->set_value(fetch(*storage, path, *size, offset, length == 0 ? kMaxAhead : length));
    });
  }

 private:
  struct Ahead {
    uint64_t begin, length, bytes;  // length 0: the whole file
    uint64_t unread;                // bytes no read has taken yet
    std::shared_future<Result<std::shared_ptr<const std::string>>> data;
  };

  // One ranged GET of [offset, offset + length): the bytes there (fewer at the file's end). Static, so
  // that hints running on the storage's workers hold no reference to the file.
  static Result<std::shared_ptr<const std::string>> fetch(const HttpStorage& storage, const std::string& path,
                                                          std::atomic<int64_t>& size_, uint64_t offset,
                                                          uint64_t length) {
    const std::string range = std::to_string(offset) + "-" + std::to_string(offset + length - 1);
    HZIO_ASSIGN_OR_RETURN(HttpStorage::Answer a, storage.request(path, false, range, length));
    int64_t size = -1;
    auto body = range_answer_body(std::move(a), storage.origin() + path, offset, length, &size);
    if (size >= 0) size_ = size;
    HZIO_RETURN_IF_ERROR(body.status());
    return std::make_shared<const std::string>(std::move(body).value());
  }

  // A range fetched ahead that holds [offset, offset + length) (`prefix`: any fetched from 0 holding as much
  // of the file as there is), taken out of the list; its data's offset of `offset` in *at.
  std::optional<Result<std::shared_ptr<const std::string>>> take_ahead(uint64_t offset, uint64_t length, uint64_t* at,
                                                                       bool prefix = false) const {
    std::shared_future<Result<std::shared_ptr<const std::string>>> data;
    {
      std::lock_guard lock(mutex_);
      auto it = std::find_if(ahead_.begin(), ahead_.end(), [&](const Ahead& a) {
        if (a.length == 0) return offset == 0 || !prefix;
        return a.begin <= offset && offset + length <= a.begin + a.length;
      });
      if (it == ahead_.end()) return std::nullopt;
      *at = offset - it->begin;
      data = it->data;
      // A range merged from several blocks' serves each of them: it goes when all its bytes were read.
      it->unread -= std::min(it->unread, length);
      if (it->length == 0 || it->unread == 0) {
        ahead_bytes_ -= it->bytes;
        ahead_.erase(it);
      }
    }
    return data.get();
  }

  std::shared_ptr<const HttpStorage> storage_;
  std::string path_, url_;
  std::shared_ptr<std::atomic<int64_t>> size_ = std::make_shared<std::atomic<int64_t>>(-1);  // -1: unknown
  mutable std::mutex mutex_;
  mutable std::vector<Ahead> ahead_;
  mutable uint64_t ahead_bytes_ = 0;
};

}  // namespace

Result<std::shared_ptr<HttpStorage>> HttpStorage::make(const std::string& origin) {
  auto split = split_http_url(origin + "/");
  if (!split || split->first != origin) return invalid_argument("'" + origin + "' is not an http or https origin");
  return std::shared_ptr<HttpStorage>(new HttpStorage(origin));
}

HttpStorage::~HttpStorage() {
  {
    std::lock_guard lock(jobs_mutex_);
    stopping_ = true;
  }
  jobs_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void HttpStorage::run(std::function<void()> job) const {
  std::lock_guard lock(jobs_mutex_);
  if (stopping_) return;
  jobs_.push_back(std::move(job));
  if (workers_.size() < kWorkers && workers_.size() < jobs_.size() + busy_) {
    workers_.emplace_back([this] {
      std::unique_lock lock(jobs_mutex_);
      for (;;) {
        jobs_ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, nothing left
        auto next = std::move(jobs_.front());
        jobs_.pop_front();
        ++busy_;
        lock.unlock();
        next();
        lock.lock();
        --busy_;
      }
    });
  }
  jobs_ready_.notify_one();
}

Result<HttpStorage::Answer> HttpStorage::request(const std::string& path, bool head, const std::string& range,
                                                 size_t max_body) const {
  const std::string url = origin_ + path;
  CURL* curl = thread_handle();
  if (!curl) return io_error("GET " + url + ": libcurl could not start");
  std::string error;
  for (int attempt = 0;; ++attempt) {
    Answer answer;
    Transfer transfer{&answer, head ? 0 : max_body};
    char message[CURL_ERROR_SIZE] = {};
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOBODY, head ? 1L : 0L);
    if (!range.empty()) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, message);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, kConnectSeconds);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a transfer that stalls for kStallSeconds fails
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, kStallSeconds);
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "identity");
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &stopping_);
    const CURLcode code = curl_easy_perform(curl);
    requests_ += 1;
    bytes_ += static_cast<int64_t>(answer.body.size());
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
    if (transfer.too_large && answer.status == 200 && !range.empty()) return answer;  // the caller names it
    if (transfer.too_large) {
      return io_error((head ? "HEAD " : "GET ") + url + ": the answer is larger than the " + std::to_string(max_body) +
                      " bytes asked for");
    }
    if (code == CURLE_OK && !transient(code, answer.status)) return answer;
    error = code == CURLE_OK ? "answered " + std::to_string(answer.status)
                             : std::string(message[0] ? message : curl_easy_strerror(code));
    if (attempt == kRetries || !transient(code, answer.status) || stopping_) break;
    std::this_thread::sleep_for(kFirstPause * (1 << attempt));
  }
  return io_error(std::string(head ? "HEAD " : "GET ") + url + ": " + error + " (after " +
                  std::to_string(kRetries + 1) + " attempts)");
}

Result<std::shared_ptr<const Readable>> HttpStorage::open(const std::string& path) const {
  // No request: the first read finds out whether the file is there (404: kNotFound then).
  return std::shared_ptr<const Readable>(std::make_shared<HttpFile>(shared_from_this(), path));
}

Result<std::string> HttpStorage::read_text(const std::string& path, size_t max_bytes) const {
  HZIO_ASSIGN_OR_RETURN(Answer a, request(path, false, "", max_bytes));
  if (a.status == 404) return not_found("GET " + origin_ + path + ": 404 Not Found");
  if (a.status != 200) return io_error("GET " + origin_ + path + ": answered " + std::to_string(a.status));
  return std::move(a.body);
}

Result<PathKind> HttpStorage::path_kind(const std::string& path) const {
  HZIO_ASSIGN_OR_RETURN(Answer a, request(path, true, "", 0));
  if (a.status == 404) return PathKind::kMissing;
  if (a.status == 200) return PathKind::kFile;
  return io_error("HEAD " + origin_ + path + ": answered " + std::to_string(a.status));
}

Result<std::array<uint64_t, 5>> HttpStorage::identity(const std::string& path) const {
  HZIO_ASSIGN_OR_RETURN(Answer a, request(path, true, "", 0));
  if (a.status == 404) return not_found("HEAD " + origin_ + path + ": 404 Not Found");
  if (a.status != 200) return io_error("HEAD " + origin_ + path + ": answered " + std::to_string(a.status));
  const uint64_t tag = std::hash<std::string>{}(a.etag + "\n" + a.last_modified);
  return std::array<uint64_t, 5>{0, tag, static_cast<uint64_t>(std::max<int64_t>(a.content_length, 0)), 0, 0};
}

Result<std::vector<std::string>> HttpStorage::list_files(const std::string& dir, int) const {
  return unsupported("listing " + origin_ + dir + ": a web server does not list folders to hzio");
}

#else  // built without libcurl

Result<std::shared_ptr<HttpStorage>> HttpStorage::make(const std::string& origin) {
  return unsupported("reading " + origin + ": this hzio was built without HTTP support (libcurl)");
}

#endif

}  // namespace hzio::io

#include "allocator/settings.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdlib>
#include <vector>

namespace vramlab::alloc {

namespace {

// Splits "key:val,key:[a:b,>:c]" into keys, values and the four punctuation tokens,
// ignoring whitespace (PyTorch's ConfigTokenizer).
std::vector<std::string> tokenize(const std::string& env) {
  std::vector<std::string> out;
  std::string buf;
  for (char ch : env) {
    if (ch == ',' || ch == ':' || ch == '[' || ch == ']') {
      if (!buf.empty()) out.push_back(std::move(buf)), buf.clear();
      out.emplace_back(1, ch);
    } else if (!std::isspace(static_cast<unsigned char>(ch))) {
      buf += ch;
    }
  }
  if (!buf.empty()) out.push_back(std::move(buf));
  return out;
}

// Error messages quote the user's string and tokens; a huge string (a 100 MB alloc_conf)
// must still give a short message, so each echo is clipped.
constexpr size_t kEchoChars = 80;
std::string clip(const std::string& s) {
  if (s.size() <= kEchoChars) return s;
  return s.substr(0, kEchoChars) + "... (" + std::to_string(s.size()) + " characters)";
}

class Parser {
 public:
  explicit Parser(const std::string& conf) : conf_(conf), tok_(tokenize(conf)) {}

  size_t size() const { return tok_.size(); }
  const std::string& at(size_t i, const std::string& key) const {
    if (i >= tok_.size()) fail(key, "expected a value after '" + clip(key) + "'");
    return tok_[i];
  }
  void expect(size_t i, const char* t, const std::string& key) const {
    if (i >= tok_.size() || tok_[i] != t)
      fail(key, std::string("expected '") + t + "'" +
                    (i < tok_.size() ? " but found '" + clip(tok_[i]) + "'" : " but the string ended"));
  }
  size_t to_size(size_t i, const std::string& key) const {
    const std::string& s = at(i, key);
    if (s.empty() ||
        !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      fail(key, "expected a non-negative integer but found '" + clip(s) + "'");
    errno = 0;
    char* end = nullptr;
    unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (errno == ERANGE) fail(key, "value '" + clip(s) + "' is out of range");
    return static_cast<size_t>(v);
  }
  double to_double(size_t i, const std::string& key) const {
    const std::string& s = at(i, key);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) fail(key, "expected a number but found '" + clip(s) + "'");
    return v;
  }
  bool to_bool(size_t i, const std::string& key) const {
    const std::string& s = at(i, key);
    if (s == "True") return true;
    if (s == "False") return false;
    fail(key, "expected 'True' or 'False' but found '" + clip(s) + "'");
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw SettingsError("Invalid allocator setting '" + clip(key) + "' in \"" + clip(conf_) + "\": " + what);
  }
  const std::string& conf() const { return conf_; }
  const std::string& operator[](size_t i) const { return tok_[i]; }

 private:
  std::string conf_;
  std::vector<std::string> tok_;
};

bool is_pow2(size_t v) { return v != 0 && (v & (v - 1)) == 0; }

size_t parse_roundup(const Parser& p, size_t i, AllocatorSettings& s) {
  const std::string key = "roundup_power2_divisions";
  p.expect(++i, ":", key);
  auto& div = s.roundup_power2_divisions;
  if (p.at(++i, key) == "[") {
    bool first = true;
    size_t last_index = 0;
    while (++i < p.size() && p[i] != "]") {
      size_t boundary_index = i;
      p.expect(++i, ":", key);
      size_t value = p.to_size(++i, key);
      if (value != 0 && !is_pow2(value))
        p.fail(key, "the divisions have to be a power of 2 or 0 to disable roundup, got " + std::to_string(value));
      if (p[boundary_index] == ">") {
        std::fill(div.begin() + std::min(last_index + 1, div.size()), div.end(), value);
      } else {
        size_t boundary = p.to_size(boundary_index, key);
        if (!is_pow2(boundary))
          p.fail(key, "the intervals have to be powers of 2 (in MiB), got " + std::to_string(boundary));
        size_t index = std::min<size_t>(std::bit_width(boundary) - 1, div.size() - 1);
        if (first) {
          std::fill(div.begin(), div.begin() + index, value);
          first = false;
        }
        div[index] = value;
        last_index = index;
      }
      if (i + 1 < p.size() && p[i + 1] != "]") p.expect(++i, ",", key);
    }
    if (i >= p.size()) p.fail(key, "expected a closing ']'");
  } else {
    size_t value = p.to_size(i, key);
    if (!is_pow2(value)) p.fail(key, "the divisions have to be a power of 2, got " + std::to_string(value));
    div.fill(value);
  }
  return i;
}

}  // namespace

AllocatorSettings AllocatorSettings::parse(const std::string& conf) {
  AllocatorSettings s;
  s.source = conf;
  Parser p(conf);
  auto skip_value = [&](size_t i, const std::string& key) {
    p.expect(++i, ":", key);
    p.at(++i, key);
    return i;
  };

  // large_segment_size_mb first: it bounds max_split_size_mb and max_non_split_rounding_mb.
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == "large_segment_size_mb") {
      p.expect(++i, ":", "large_segment_size_mb");  // not p[i - 1]: argument order is unspecified
      size_t mb = p.to_size(++i, "large_segment_size_mb");
      if (mb <= kMinLargeAlloc / kMB)
        p.fail("large_segment_size_mb", "must be > " + std::to_string(kMinLargeAlloc / kMB) + " MB");
      s.large_segment_size = std::min(mb, std::numeric_limits<size_t>::max() / kMB) * kMB;
    }
  }
  s.max_non_split_rounding_size = s.large_segment_size;

  for (size_t i = 0; i < p.size(); ++i) {
    const std::string key = p[i];
    if (key == "large_segment_size_mb") {
      i = skip_value(i, key);
    } else if (key == "max_split_size_mb" || key == "max_non_split_rounding_mb") {
      p.expect(++i, ":", key);
      size_t mb = p.to_size(++i, key);
      size_t min_mb = s.large_segment_size / kMB;
      if (mb < min_mb)
        p.fail(key, "too small, must be >= " + std::to_string(min_mb) + " (got " + std::to_string(mb) + ")");
      size_t bytes = std::min(mb, std::numeric_limits<size_t>::max() / kMB) * kMB;
      (key == "max_split_size_mb" ? s.max_split_size : s.max_non_split_rounding_size) = bytes;
    } else if (key == "garbage_collection_threshold") {
      p.expect(++i, ":", key);
      double v = p.to_double(++i, key);
      if (!(v > 0.0 && v < 1.0)) p.fail(key, "must be in (0.0, 1.0), got " + clip(p[i]));
      s.garbage_collection_threshold = v;
    } else if (key == "roundup_power2_divisions") {
      i = parse_roundup(p, i, s);
    } else if (key == "expandable_segments") {
      p.expect(++i, ":", key);
      s.expandable_segments = p.to_bool(++i, key);
    } else if (key == "per_process_memory_fraction") {
      p.expect(++i, ":", key);
      double v = p.to_double(++i, key);
      if (!(v >= 0.0 && v <= 1.0)) p.fail(key, "must be within [0, 1], got " + clip(p[i]));
      s.per_process_memory_fraction = v;
    } else if (key == "backend") {
      p.expect(++i, ":", key);
      const std::string& v = p.at(++i, key);
      if (v == "cudaMallocAsync") p.fail(key, "backend:cudaMallocAsync is not modelled; only 'native' is supported");
      if (v != "native")
        p.fail(key, "unknown allocator backend '" + clip(v) + "', options are native and cudaMallocAsync");
    } else if (key == "release_lock_on_cudamalloc" || key == "pinned_use_cuda_host_register" ||
               key == "pinned_use_background_threads" || key == "graph_capture_record_stream_reuse") {
      // Accepted for compatibility; they do not change placement decisions.
      p.expect(++i, ":", key);
      p.to_bool(++i, key);
    } else if (key == "pinned_num_register_threads") {
      p.expect(++i, ":", key);
      size_t v = p.to_size(++i, key);
      if (!is_pow2(v)) p.fail(key, "has to be a power of 2");
    } else {
      throw SettingsError("Unrecognized key '" + clip(key) + "' in allocator settings \"" + clip(conf) + "\"");
    }
    if (i + 1 < p.size()) p.expect(++i, ",", key);
  }
  return s;
}

}  // namespace vramlab::alloc

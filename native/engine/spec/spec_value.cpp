#include "engine/spec/spec_value.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace vramlab::engine {

const SpecValue& SpecValue::operator[](const std::string& key) const {
  if (const SpecValue* v = find(key)) return *v;
  throw std::out_of_range("no key \"" + key + "\"");
}

SpecValue SpecValue::boolean(bool b) {
  SpecValue v;
  v.kind_ = Kind::Bool;
  v.b_ = b;
  return v;
}
SpecValue SpecValue::number(double d) {
  SpecValue v;
  v.kind_ = Kind::Number;
  v.num_ = d;
  return v;
}
SpecValue SpecValue::string(std::string s) {
  SpecValue v;
  v.kind_ = Kind::String;
  v.str_ = std::move(s);
  return v;
}
SpecValue SpecValue::array(std::vector<SpecValue> items) {
  SpecValue v;
  v.kind_ = Kind::Array;
  v.items_ = std::move(items);
  return v;
}
SpecValue SpecValue::object(std::map<std::string, SpecValue> fields) {
  SpecValue v;
  v.kind_ = Kind::Object;
  v.fields_ = std::move(fields);
  return v;
}

bool SpecValue::has(const std::string& key) const { return find(key) != nullptr; }

const SpecValue* SpecValue::find(const std::string& key) const {
  if (kind_ != Kind::Object) return nullptr;
  auto it = fields_.find(key);
  return it == fields_.end() ? nullptr : &it->second;
}

bool SpecValue::as_bool(const std::string& path) const {
  if (kind_ != Kind::Bool) throw std::invalid_argument(path + " must be true or false");
  return b_;
}

double SpecValue::as_number(const std::string& path) const {
  if (kind_ != Kind::Number || !std::isfinite(num_)) throw std::invalid_argument(path + " must be a finite number");
  return num_;
}

int64_t SpecValue::as_int(const std::string& path) const {
  double d = as_number(path);
  if (d != std::floor(d) || std::fabs(d) > 9007199254740992.0)
    throw std::invalid_argument(path + " must be an integer");
  return int64_t(d);
}

const std::string& SpecValue::as_string(const std::string& path) const {
  if (kind_ != Kind::String) throw std::invalid_argument(path + " must be a string");
  return str_;
}

namespace {

void write_string(std::ostringstream& o, const std::string& s) {
  o << '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      o << '\\' << c;
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o << buf;
    } else
      o << c;
  }
  o << '"';
}

void write(std::ostringstream& o, const SpecValue& v) {
  switch (v.kind()) {
    case SpecValue::Kind::Null:
      o << "null";
      break;
    case SpecValue::Kind::Bool:
      o << (v.as_bool("") ? "true" : "false");
      break;
    case SpecValue::Kind::Number: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", v.as_number(""));
      o << buf;
      break;
    }
    case SpecValue::Kind::String:
      write_string(o, v.as_string(""));
      break;
    case SpecValue::Kind::Array: {
      o << '[';
      bool first = true;
      for (auto& i : v.items()) {
        if (!first) o << ',';
        first = false;
        write(o, i);
      }
      o << ']';
      break;
    }
    case SpecValue::Kind::Object: {
      o << '{';
      bool first = true;
      for (auto& [k, f] : v.fields()) {
        if (!first) o << ',';
        first = false;
        write_string(o, k);
        o << ':';
        write(o, f);
      }
      o << '}';
      break;
    }
  }
}

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  SpecValue parse() {
    SpecValue v = value(0);
    ws();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const char* what) const {
    throw std::invalid_argument(std::string("JSON: ") + what + " at offset " + std::to_string(i_));
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  bool eat(const char* lit) {
    size_t n = std::char_traits<char>::length(lit);
    if (s_.compare(i_, n, lit) != 0) return false;
    i_ += n;
    return true;
  }
  SpecValue value(int depth) {
    if (depth > 64) fail("nesting deeper than 64");
    ws();
    if (i_ >= s_.size()) fail("unexpected end");
    char c = s_[i_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return SpecValue::string(string());
    if (eat("true")) return SpecValue::boolean(true);
    if (eat("false")) return SpecValue::boolean(false);
    if (eat("null")) return SpecValue();
    return SpecValue::number(number());
  }
  SpecValue object(int depth) {
    ++i_;
    std::map<std::string, SpecValue> f;
    ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return SpecValue::object(std::move(f));
    }
    for (;;) {
      ws();
      if (i_ >= s_.size() || s_[i_] != '"') fail("expected a key");
      std::string k = string();
      ws();
      if (i_ >= s_.size() || s_[i_] != ':') fail("expected ':'");
      ++i_;
      f[k] = value(depth + 1);
      ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return SpecValue::object(std::move(f));
      }
      fail("expected ',' or '}'");
    }
  }
  SpecValue array(int depth) {
    ++i_;
    std::vector<SpecValue> a;
    ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return SpecValue::array(std::move(a));
    }
    for (;;) {
      a.push_back(value(depth + 1));
      ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return SpecValue::array(std::move(a));
      }
      fail("expected ',' or ']'");
    }
  }
  std::string string() {
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      char e = s_[i_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("bad \\u escape");
          unsigned cp = unsigned(std::stoul(s_.substr(i_, 4), nullptr, 16));
          i_ += 4;
          if (cp < 0x80)
            out += char(cp);
          else if (cp < 0x800) {
            out += char(0xC0 | (cp >> 6));
            out += char(0x80 | (cp & 0x3F));
          } else {
            out += char(0xE0 | (cp >> 12));
            out += char(0x80 | ((cp >> 6) & 0x3F));
            out += char(0x80 | (cp & 0x3F));
          }
          break;
        }
        default:
          out += e;
      }
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
  double number() {
    size_t start = i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '-' || s_[i_] == '+' ||
                              s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E'))
      ++i_;
    if (start == i_) fail("unexpected character");
    try {
      return std::stod(s_.substr(start, i_ - start));
    } catch (const std::exception&) {
      fail("bad number");
    }
  }
  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace

std::string SpecValue::to_json() const {
  std::ostringstream o;
  write(o, *this);
  return o.str();
}

SpecValue parse_json(const std::string& text) { return JsonParser(text).parse(); }

SpecValue load_json_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::invalid_argument("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_json(ss.str());
}

SpecValue merge_values(const SpecValue& base, const SpecValue& over) {
  if (!base.is_object() || !over.is_object()) return over;
  auto out = base.fields();
  for (auto& [k, v] : over.fields()) {
    auto it = out.find(k);
    out[k] = it == out.end() ? v : merge_values(it->second, v);
  }
  return SpecValue::object(std::move(out));
}

}  // namespace vramlab::engine

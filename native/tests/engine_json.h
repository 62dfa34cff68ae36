#pragma once
// Minimal JSON reader for the engine tests (test/refs/pytorch_reference.json).
#include <cctype>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace vramlab::testjson {

struct Value {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  double num = 0;
  bool b = false;
  std::string str;
  std::vector<Value> arr;
  std::vector<std::pair<std::string, Value>> obj;
  const Value& operator[](const std::string& k) const {
    for (auto& [n, v] : obj)
      if (n == k) return v;
    throw std::out_of_range("json: no key " + k);
  }
  bool has(const std::string& k) const {
    for (auto& [n, v] : obj)
      if (n == k) return true;
    return false;
  }
};

class Parser {
 public:
  explicit Parser(std::string s) : s_(std::move(s)) {}
  Value parse() {
    Value v = value();
    ws();
    if (i_ != s_.size()) throw std::runtime_error("json: trailing data");
    return v;
  }

 private:
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  char peek() {
    ws();
    if (i_ >= s_.size()) throw std::runtime_error("json: unexpected end");
    return s_[i_];
  }
  std::string string_lit() {
    ++i_;  // opening quote
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] == '\\') {
        ++i_;
        char c = s_[i_];
        out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
      } else {
        out += s_[i_];
      }
      ++i_;
    }
    ++i_;
    return out;
  }
  Value value() {
    char c = peek();
    Value v;
    if (c == '{') {
      v.kind = Value::Object;
      ++i_;
      if (peek() == '}') { ++i_; return v; }
      while (true) {
        peek();
        std::string k = string_lit();
        if (peek() != ':') throw std::runtime_error("json: expected ':'");
        ++i_;
        v.obj.emplace_back(k, value());
        char d = peek();
        ++i_;
        if (d == '}') break;
        if (d != ',') throw std::runtime_error("json: expected ','");
      }
    } else if (c == '[') {
      v.kind = Value::Array;
      ++i_;
      if (peek() == ']') { ++i_; return v; }
      while (true) {
        v.arr.push_back(value());
        char d = peek();
        ++i_;
        if (d == ']') break;
        if (d != ',') throw std::runtime_error("json: expected ','");
      }
    } else if (c == '"') {
      v.kind = Value::String;
      v.str = string_lit();
    } else if (s_.compare(i_, 4, "true") == 0) {
      v.kind = Value::Bool; v.b = true; i_ += 4;
    } else if (s_.compare(i_, 5, "false") == 0) {
      v.kind = Value::Bool; i_ += 5;
    } else if (s_.compare(i_, 4, "null") == 0) {
      i_ += 4;
    } else {
      v.kind = Value::Number;
      size_t used = 0;
      v.num = std::stod(s_.substr(i_, 40), &used);
      i_ += used;
    }
    return v;
  }
  std::string s_;
  size_t i_ = 0;
};

inline Value load_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return Parser(ss.str()).parse();
}

}  // namespace vramlab::testjson

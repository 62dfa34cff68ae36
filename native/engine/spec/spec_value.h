#pragma once
// A JSON-shaped value tree: the one form every entry point hands the spec reader in
// (the addon converts JS objects into it, tests and tools parse JSON into it), so the
// spec is read by one reader whatever it came from. Accessors name the path on errors.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vramlab::engine {

class SpecValue {
 public:
  enum class Kind : uint8_t { Null, Bool, Number, String, Array, Object };

  SpecValue() = default;
  static SpecValue boolean(bool b);
  static SpecValue number(double d);
  static SpecValue string(std::string s);
  static SpecValue array(std::vector<SpecValue> items);
  static SpecValue object(std::map<std::string, SpecValue> fields);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_string() const { return kind_ == Kind::String; }
  bool has(const std::string& key) const;
  const SpecValue* find(const std::string& key) const;        // null when absent or not an object
  const SpecValue& operator[](const std::string& key) const;  // throws std::out_of_range when absent
  const std::map<std::string, SpecValue>& fields() const { return fields_; }
  const std::vector<SpecValue>& items() const { return items_; }

  // Typed reads; `path` ("spec.model.dim") goes into the error message.
  bool as_bool(const std::string& path) const;
  double as_number(const std::string& path) const;
  int64_t as_int(const std::string& path) const;  // a finite integral number in ±2^53
  const std::string& as_string(const std::string& path) const;

  std::string to_json() const;

 private:
  Kind kind_ = Kind::Null;
  bool b_ = false;
  double num_ = 0;
  std::string str_;
  std::vector<SpecValue> items_;
  std::map<std::string, SpecValue> fields_;
};

// Parses JSON text (RFC 8259, nesting at most 64 deep); throws std::invalid_argument.
SpecValue parse_json(const std::string& text);
SpecValue load_json_file(const std::string& path);

// `over` merged onto `base` key by key (objects recursively, anything else replaced).
SpecValue merge_values(const SpecValue& base, const SpecValue& over);

}  // namespace vramlab::engine

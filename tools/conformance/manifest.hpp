// tools/conformance/manifest.hpp — one conformance case on disk: its manifest.json and raw tensors.
//
// Format: ../shared/conformance/README.md ("schema": "fla-linear-attn-vectors/1"). Every tensor is a raw
// little-endian, C-contiguous file whose dtype (float32, float64, int64) and shape the manifest gives.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <linea/config.hpp>

namespace linea::conformance {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A case that cannot be run as stated (unreadable file, a feature this build lacks): reported as a failure.
struct case_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One tensor of a case: where it is, its dtype and shape.
struct stored_tensor {
  std::string name, dtype;
  std::vector<index_t> shape;
  fs::path file;

  index_t elements() const {
    index_t n = 1;
    for (index_t e : shape) n *= e;
    return n;
  }
  int rank() const { return static_cast<int>(shape.size()); }

  // The values, converted to T (little-endian host assumed, as everywhere this library runs).
  template <class T>
  std::vector<T> read() const {
    const std::size_t width = dtype == "float64" || dtype == "int64" ? 8 : dtype == "float32" ? 4 : 0;
    if (width == 0) throw case_error("tensor '" + name + "' has dtype '" + dtype + "'; expected float32, float64 or int64");
    const auto n = static_cast<std::size_t>(elements());
    std::ifstream in(file, std::ios::binary);
    if (!in) throw case_error("cannot open " + file.string());
    std::vector<char> bytes(n * width);
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (static_cast<std::size_t>(in.gcount()) != bytes.size() || in.peek() != std::char_traits<char>::eof())
      throw case_error(file.string() + " does not hold exactly " + std::to_string(n) + " " + dtype + " values");
    std::vector<T> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      const char* p = bytes.data() + i * width;
      if (dtype == "float32") {
        float x;
        std::memcpy(&x, p, 4);
        out[i] = static_cast<T>(x);
      } else if (dtype == "float64") {
        double x;
        std::memcpy(&x, p, 8);
        out[i] = static_cast<T>(x);
      } else {
        std::int64_t x;
        std::memcpy(&x, p, 8);
        out[i] = static_cast<T>(x);
      }
    }
    return out;
  }
};

class conformance_case {
 public:
  // Reads <dir>/manifest.json; `label` is how the case is printed (e.g. "fla/kda/t63").
  static conformance_case load(const fs::path& dir, std::string label) {
    conformance_case c;
    c.dir_ = dir;
    c.label_ = std::move(label);
    std::ifstream in(dir / "manifest.json");
    if (!in) throw case_error("cannot open " + (dir / "manifest.json").string());
    try {
      c.manifest_ = json::parse(in);
    } catch (const std::exception& e) {
      throw case_error("manifest.json is not valid JSON: " + std::string(e.what()));
    }
    c.op_ = c.manifest_.value("op", std::string());
    if (c.op_.empty()) throw case_error("manifest.json names no 'op'");
    if (c.manifest_.contains("params") && c.manifest_["params"].is_object()) c.params_ = c.manifest_["params"];
    if (c.manifest_.contains("files"))
      for (const auto& [name, f] : c.manifest_["files"].items()) {
        stored_tensor t;
        t.name = name;
        t.dtype = f.value("dtype", std::string());
        t.file = dir / f.value("file", name + ".bin");
        for (const auto& e : f.value("shape", json::array())) t.shape.push_back(e.get<index_t>());
        c.files_.push_back(std::move(t));
      }
    return c;
  }

  const std::string& label() const { return label_; }
  const std::string& op() const { return op_; }
  const json& params() const { return params_; }
  const fs::path& dir() const { return dir_; }

  bool has(const std::string& name) const {
    return std::any_of(files_.begin(), files_.end(), [&](const stored_tensor& t) { return t.name == name; });
  }
  const stored_tensor& file(const std::string& name) const {
    for (const auto& t : files_)
      if (t.name == name) return t;
    throw case_error("the case has no tensor '" + name + "'");
  }
  const std::vector<stored_tensor>& files() const { return files_; }

  // params[key] is the boolean true.
  bool flag(const std::string& key) const { return params_.contains(key) && params_[key].is_boolean() && params_[key].get<bool>(); }
  // params[key] is present and not null.
  bool given(const std::string& key) const { return params_.contains(key) && !params_[key].is_null(); }

  // The read policy the case asks for: params.read, "identity" when absent (every fla case).
  std::string read_policy() const { return given("read") ? params_["read"].get<std::string>() : "identity"; }

  // Gradient truths (dq_ref64, dk_ref64, ...): present in the *_grad cases.
  std::vector<std::string> gradient_truths() const {
    std::vector<std::string> names;
    for (const auto& t : files_)
      if (t.name.size() > 6 && t.name[0] == 'd' && t.name.ends_with("_ref64")) names.push_back(t.name);
    return names;
  }

 private:
  fs::path dir_;
  std::string label_, op_;
  json manifest_, params_ = json::object();
  std::vector<stored_tensor> files_;
};

// Every directory under `root` (itself included) that holds a manifest.json, in sorted order.
inline std::vector<fs::path> find_cases(const fs::path& root) {
  std::vector<fs::path> dirs;
  if (fs::exists(root / "manifest.json")) dirs.push_back(root);
  for (const auto& e : fs::recursive_directory_iterator(root, fs::directory_options::follow_directory_symlink))
    if (e.is_regular_file() && e.path().filename() == "manifest.json" && e.path().parent_path() != root)
      dirs.push_back(e.path().parent_path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

}  // namespace linea::conformance

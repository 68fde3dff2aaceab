#include "compiler/ir/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace podsim::ir {
namespace {

// A header larger than this is hostile rather than useful (the reference
// implementation uses the same bound).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;
constexpr int kMaxRank = 64;

struct DtypeName {
  PrimitiveType type;
  std::string_view name;
};
constexpr std::array kDtypes = {
    DtypeName{PrimitiveType::kPred, "BOOL"}, DtypeName{PrimitiveType::kS8, "I8"},
    DtypeName{PrimitiveType::kS16, "I16"},   DtypeName{PrimitiveType::kS32, "I32"},
    DtypeName{PrimitiveType::kS64, "I64"},   DtypeName{PrimitiveType::kU8, "U8"},
    DtypeName{PrimitiveType::kU16, "U16"},   DtypeName{PrimitiveType::kU32, "U32"},
    DtypeName{PrimitiveType::kU64, "U64"},   DtypeName{PrimitiveType::kF16, "F16"},
    DtypeName{PrimitiveType::kBF16, "BF16"}, DtypeName{PrimitiveType::kF32, "F32"},
    DtypeName{PrimitiveType::kF64, "F64"},
};

struct Entry {
  std::string name;
  PrimitiveType type;
  std::vector<int64_t> dims;
  uint64_t begin;
  uint64_t end;
};

Entry parse_entry(const std::string& name, const nlohmann::json& info, uint64_t data_size,
                  std::string_view filename) {
  auto bad = [&](std::string_view what) {
    fail("{}: tensor '{}': {}", filename, name, what);
  };
  if (!info.is_object()) bad("entry is not a JSON object");
  for (const auto& [key, value] : info.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets") bad(fmt::format("unknown field '{}'", key));
  if (!info.contains("dtype") || !info["dtype"].is_string()) bad("missing or non-string 'dtype'");
  if (!info.contains("shape") || !info["shape"].is_array()) bad("missing or non-array 'shape'");
  if (!info.contains("data_offsets") || !info["data_offsets"].is_array() || info["data_offsets"].size() != 2)
    bad("'data_offsets' must be an array [begin, end]");

  Entry e{name, PrimitiveType::kF32, {}, 0, 0};
  const std::string dtype = info["dtype"].get<std::string>();
  auto it = std::find_if(kDtypes.begin(), kDtypes.end(), [&](const DtypeName& d) { return d.name == dtype; });
  if (it == kDtypes.end()) bad(fmt::format("unsupported dtype '{}'", dtype));
  e.type = it->type;

  if (info["shape"].size() > kMaxRank) bad("rank above 64");
  for (const auto& d : info["shape"]) {
    if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<int64_t>() >= 0))
      bad("shape entries must be non-negative integers");
    uint64_t v = d.get<uint64_t>();
    if (v > static_cast<uint64_t>(kMaxElements)) bad("dimension too large");
    e.dims.push_back(static_cast<int64_t>(v));
  }
  int64_t elements = checked_num_elements(e.dims);
  if (elements < 0) bad("shape has too many elements");

  for (const auto& o : info["data_offsets"])
    if (!o.is_number_unsigned() && !(o.is_number_integer() && o.get<int64_t>() >= 0))
      bad("data_offsets must be non-negative integers");
  e.begin = info["data_offsets"][0].get<uint64_t>();
  e.end = info["data_offsets"][1].get<uint64_t>();
  if (e.begin > e.end || e.end > data_size)
    bad(fmt::format("data_offsets [{}, {}] outside the {} data bytes", e.begin, e.end, data_size));
  uint64_t expected = static_cast<uint64_t>(elements) * static_cast<uint64_t>(type_byte_size(e.type));
  if (e.end - e.begin != expected)
    bad(fmt::format("{} x {} needs {} bytes but data_offsets span {}", dtype,
                    Shape(e.type, e.dims).to_string(false), expected, e.end - e.begin));
  return e;
}

}  // namespace

std::string_view safetensors_dtype(PrimitiveType type) {
  for (const auto& d : kDtypes)
    if (d.type == type) return d.name;
  fail("type {} has no safetensors dtype", type_name(type));
}

namespace {

// Checks the whole file; returns its header JSON and its tensors.
struct Parsed {
  nlohmann::json header;
  NamedLiterals tensors;
};
Parsed parse_file(std::span<const std::byte> bytes, std::string_view filename) {
  if (bytes.size() < 8) fail("{}: not a safetensors file: {} bytes, shorter than the 8-byte header length", filename, bytes.size());
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | std::to_integer<uint64_t>(bytes[static_cast<size_t>(i)]);
  if (header_len > kMaxHeaderBytes || header_len > bytes.size() - 8)
    fail("{}: header length {} does not fit the {}-byte file", filename, header_len, bytes.size());

  std::string_view header(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<size_t>(header_len));
  nlohmann::json json = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) fail("{}: header is not a JSON object", filename);

  const uint64_t data_size = bytes.size() - 8 - header_len;
  std::vector<Entry> entries;
  for (const auto& [name, info] : json.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) fail("{}: __metadata__ must be an object of strings", filename);
      for (const auto& [k, v] : info.items())
        if (!v.is_string()) fail("{}: __metadata__ value '{}' is not a string", filename, k);
      continue;
    }
    entries.push_back(parse_entry(name, info, data_size, filename));
  }

  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  for (const Entry& e : entries) {
    if (e.begin < covered) fail("{}: tensor '{}' overlaps the previous tensor's data", filename, e.name);
    if (e.begin > covered) fail("{}: {} unused bytes before tensor '{}'", filename, e.begin - covered, e.name);
    covered = e.end;
  }
  if (covered != data_size) fail("{}: {} trailing bytes after the last tensor", filename, data_size - covered);

  NamedLiterals out;
  const std::span<const std::byte> data = bytes.subspan(8 + header_len);
  for (const Entry& e : entries) {
    Literal l(Shape(e.type, e.dims));
    // Not memcpy: an empty tensor's storage has a null data(), which memcpy must not
    // see even for zero bytes.
    std::ranges::copy(data.subspan(e.begin, e.end - e.begin), l.bytes().begin());
    if (e.type == PrimitiveType::kPred)
      for (std::byte& b : l.bytes())
        if (std::to_integer<unsigned>(b) > 1) fail("{}: tensor '{}': BOOL byte other than 0 or 1", filename, e.name);
    out.emplace_back(e.name, std::move(l));
  }
  return {std::move(json), std::move(out)};
}


std::vector<std::byte> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open '{}': {}", path, std::strerror(errno));
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) fail("cannot read '{}'", path);
  in.seekg(0);
  std::vector<std::byte> bytes(static_cast<size_t>(size));
  if (!in.read(reinterpret_cast<char*>(bytes.data()), size)) fail("cannot read '{}'", path);
  return bytes;
}

}  // namespace

NamedLiterals parse_safetensors(std::span<const std::byte> bytes, std::string_view filename) {
  return parse_file(bytes, filename).tensors;
}

NamedLiterals read_safetensors(const std::string& path) { return parse_safetensors(read_bytes(path), path); }

std::map<std::string, std::string> read_safetensors_metadata(const std::string& path) {
  Parsed parsed = parse_file(read_bytes(path), path);
  std::map<std::string, std::string> meta;
  if (parsed.header.contains("__metadata__"))
    for (const auto& [key, value] : parsed.header["__metadata__"].items()) meta[key] = value.get<std::string>();
  return meta;
}


std::vector<std::byte> serialize_safetensors(const NamedLiterals& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  uint64_t offset = 0;
  for (const auto& [name, literal] : tensors) {
    if (literal.shape().is_tuple()) fail("safetensors: tensor '{}' is a tuple; write its elements instead", name);
    if (header.contains(name)) fail("safetensors: duplicate tensor name '{}'", name);
    uint64_t size = literal.bytes().size();
    header[name] = {{"dtype", safetensors_dtype(literal.type())},
                    {"shape", literal.shape().dims()},
                    {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  std::vector<std::byte> out(8 + text.size() + offset);
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<std::byte>((len >> (8 * i)) & 0xff);
  std::memcpy(out.data() + 8, text.data(), text.size());
  std::byte* data = out.data() + 8 + text.size();
  // ranges::copy, not memcpy: an empty tensor's bytes().data() is null.
  for (const auto& [name, literal] : tensors) data = std::ranges::copy(literal.bytes(), data).out;
  return out;
}

void write_safetensors(const std::string& path, const NamedLiterals& tensors) {
  std::vector<std::byte> bytes = serialize_safetensors(tensors);
  // Unique per process and call: concurrent writers of one path never share a file.
  static std::atomic<uint64_t> serial{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create '{}': {}", tmp, std::strerror(errno));
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail("cannot write '{}': {}", tmp, std::strerror(err));
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot flush '{}': {}", tmp, std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot rename '{}' to '{}': {}", tmp, path, std::strerror(err));
  }
  // The rename is durable once the directory is: sync it too (best effort: the file is
  // complete and in place either way).
  std::string dir = std::filesystem::path(path).parent_path().string();
  int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace podsim::ir

// safetensors files: an 8-byte little-endian header length, a JSON header mapping
// tensor names to {dtype, shape, data_offsets}, then the raw little-endian data.
// The reader treats every file as hostile: header length against file size, offsets in
// bounds, disjoint and covering the data, dtype x shape = byte length, no overflow.
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/literal.h"

namespace podsim::ir {

using NamedLiterals = std::vector<std::pair<std::string, Literal>>;

// Tensors in the order of their data offsets. Throws podsim::Error naming what is wrong.
NamedLiterals parse_safetensors(std::span<const std::byte> file_bytes, std::string_view filename = "<input>");
NamedLiterals read_safetensors(const std::string& path);
// The file's "__metadata__" string map (empty if absent), validated like the tensors.
std::map<std::string, std::string> read_safetensors_metadata(const std::string& path);

std::vector<std::byte> serialize_safetensors(const NamedLiterals& tensors);
// Writes to a temporary file, fsyncs it and renames it over path, so that an
// interrupted write leaves any previous file intact.
void write_safetensors(const std::string& path, const NamedLiterals& tensors);

// safetensors dtype names ("F32", "BF16", "BOOL", ...).
std::string_view safetensors_dtype(PrimitiveType type);

}  // namespace podsim::ir

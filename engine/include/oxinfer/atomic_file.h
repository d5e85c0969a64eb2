#pragma once
// Writes a whole file or nothing: data goes to a temporary file beside the target, is flushed,
// then renamed over it. A crash or a full disk never leaves a half-written output.

#include <filesystem>
#include <string_view>

namespace oxinfer {

void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace oxinfer

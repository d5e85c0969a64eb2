#pragma once
// A read-only view of a zip archive's stored (uncompressed) entries, as torch.save writes them:
// the end-of-central-directory record (and its ZIP64 forms), the central directory, and each
// entry's data located through its local header. Nothing is copied or decompressed: an entry's
// data is a span of the archive's bytes. Every offset and size is checked against the archive;
// a compressed, encrypted or multi-disk archive is refused with a message saying so.
// Format: PKWARE APPNOTE.TXT, sections 4.3 (structure) and 4.5.3 (ZIP64 extra field).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace oxinfer {

struct ZipEntry {
    std::string_view name;            // as stored (UTF-8 or CP437), a view into the archive
    std::span<const std::byte> data;  // the stored bytes
    uint32_t crc32 = 0;               // from the central directory
    uint64_t local_header_offset = 0;
};

class ZipArchive {
public:
    // Reads the central directory and every entry's local header; throws Error(subject, ...).
    ZipArchive(std::span<const std::byte> archive, std::string subject);

    const std::vector<ZipEntry>& entries() const { return entries_; }
    const ZipEntry* find(std::string_view name) const;
    bool zip64() const { return zip64_; }
    const std::string& subject() const { return subject_; }

    // Throws unless the entry's data matches its central-directory CRC-32.
    void verify_crc(const ZipEntry& entry) const;

private:
    std::span<const std::byte> archive_;
    std::string subject_;
    std::vector<ZipEntry> entries_;
    std::unordered_map<std::string_view, size_t> index_;
    bool zip64_ = false;
};

// CRC-32 (ISO-HDLC, the zip/gzip polynomial 0xEDB88320).
uint32_t crc32(std::span<const std::byte> data, uint32_t crc = 0);

}  // namespace oxinfer

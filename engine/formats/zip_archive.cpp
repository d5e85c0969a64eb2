// Zip central-directory reader for stored archives (torch.save's format since torch 1.6).
// APPNOTE.TXT: end of central directory record 4.3.16, ZIP64 end record 4.3.14, ZIP64 locator
// 4.3.15, central directory header 4.3.12, local file header 4.3.7, ZIP64 extra field 4.5.3.

#include "formats/zip_archive.h"

#include "formats/byte_reader.h"

#include <oxinfer/error.h>

#include <array>
#include <cstring>

namespace oxinfer {
namespace {

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kEnd64Signature = 0x06064b50;
constexpr uint32_t kEnd64LocatorSignature = 0x07064b50;

constexpr size_t kEndSize = 22;
constexpr size_t kEnd64LocatorSize = 20;
constexpr size_t kEnd64MinSize = 56;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kMaxCommentBytes = 0xffff;

constexpr uint16_t kFlagEncrypted = 1u << 0;
constexpr uint16_t kFlagStrongEncryption = 1u << 6;
constexpr uint16_t kZip64ExtraId = 0x0001;

std::string hex32(uint32_t value) {
    static const char digits[] = "0123456789abcdef";
    std::string out = "0x";
    for (int shift = 28; shift >= 0; shift -= 4) out += digits[(value >> shift) & 0xf];
    return out;
}

std::string method_name(uint16_t method) {
    switch (method) {
        case 8: return "deflate";
        case 9: return "deflate64";
        case 12: return "bzip2";
        case 14: return "lzma";
        case 93: return "zstd";
        case 95: return "xz";
        case 99: return "AES encryption";
        default: return "method " + std::to_string(method);
    }
}

uint32_t read_u32_at(std::span<const std::byte> bytes, size_t pos) {
    uint32_t value;
    std::memcpy(&value, bytes.data() + pos, 4);
    return value;
}

constexpr std::array<uint32_t, 256> make_crc_table() {
    std::array<uint32_t, 256> table{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
    return table;
}

constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

// The end-of-central-directory record ends the archive; a comment of up to 64 KiB may follow it.
// We require the comment to run exactly to the end of the file, so that the signature bytes
// turning up inside stored tensor data near the end are not mistaken for the record.
std::optional<size_t> find_end_record(std::span<const std::byte> archive) {
    if (archive.size() < kEndSize) return std::nullopt;
    const size_t last = archive.size() - kEndSize;
    const size_t first = last > kMaxCommentBytes ? last - kMaxCommentBytes : 0;
    for (size_t pos = last + 1; pos-- > first;) {
        if (read_u32_at(archive, pos) != kEndSignature) continue;
        uint16_t comment_bytes;
        std::memcpy(&comment_bytes, archive.data() + pos + 20, 2);
        if (pos + kEndSize + comment_bytes == archive.size()) return pos;
    }
    return std::nullopt;
}

}  // namespace

uint32_t crc32(std::span<const std::byte> data, uint32_t crc) {
    crc = ~crc;
    for (std::byte b : data) crc = kCrcTable[(crc ^ static_cast<uint8_t>(b)) & 0xff] ^ (crc >> 8);
    return ~crc;
}

ZipArchive::ZipArchive(std::span<const std::byte> archive, std::string subject) : archive_(archive), subject_(std::move(subject)) {
    ByteReader reader(archive, subject_);
    auto fail = [&](const std::string& problem) { reader.fail(problem); };

    const std::optional<size_t> end_record = find_end_record(archive);
    if (!end_record) {
        const bool zip_start = archive.size() >= 4 && read_u32_at(archive, 0) == kLocalHeaderSignature;
        if (zip_start)
            fail("truncated zip archive: the end-of-central-directory record is missing (" + std::to_string(archive.size()) +
                 " bytes; the file was probably cut short while copying or downloading)");
        fail("not a zip archive: no end-of-central-directory record");
    }

    // End of central directory record.
    reader.seek(*end_record + 4);
    const uint16_t disk = reader.read<uint16_t>();
    const uint16_t cd_disk = reader.read<uint16_t>();
    uint64_t disk_entries = reader.read<uint16_t>();
    uint64_t total_entries = reader.read<uint16_t>();
    uint64_t cd_size = reader.read<uint32_t>();
    uint64_t cd_offset = reader.read<uint32_t>();
    if (disk != 0 || cd_disk != 0) fail("multi-disk (split) zip archives are not supported");
    uint64_t cd_limit = *end_record;  // the central directory must end before the records that follow it

    // ZIP64: a locator just before the end record points at the ZIP64 end record, whose 64-bit
    // counts and offsets replace the 16/32-bit ones (which then read 0xffff / 0xffffffff).
    if (*end_record >= kEnd64LocatorSize && read_u32_at(archive, *end_record - kEnd64LocatorSize) == kEnd64LocatorSignature) {
        zip64_ = true;
        reader.seek(*end_record - kEnd64LocatorSize + 4);
        const uint32_t end64_disk = reader.read<uint32_t>();
        const uint64_t end64_offset = reader.read<uint64_t>();
        const uint32_t disks = reader.read<uint32_t>();
        if (end64_disk != 0 || disks > 1) fail("multi-disk (split) zip archives are not supported");
        const uint64_t locator = *end_record - kEnd64LocatorSize;
        if (end64_offset > locator || locator - end64_offset < kEnd64MinSize)
            fail("ZIP64 end-of-central-directory record offset " + std::to_string(end64_offset) + " is outside the archive");
        reader.seek(static_cast<size_t>(end64_offset));
        if (reader.read<uint32_t>() != kEnd64Signature)
            fail("no ZIP64 end-of-central-directory record at offset " + std::to_string(end64_offset));
        reader.read<uint64_t>();  // size of the record
        reader.read<uint16_t>();  // version made by
        reader.read<uint16_t>();  // version needed
        const uint32_t disk64 = reader.read<uint32_t>();
        const uint32_t cd_disk64 = reader.read<uint32_t>();
        if (disk64 != 0 || cd_disk64 != 0) fail("multi-disk (split) zip archives are not supported");
        disk_entries = reader.read<uint64_t>();
        total_entries = reader.read<uint64_t>();
        cd_size = reader.read<uint64_t>();
        cd_offset = reader.read<uint64_t>();
        cd_limit = end64_offset;
    } else if (total_entries == 0xffff || cd_size == 0xffffffff || cd_offset == 0xffffffff) {
        fail("the end-of-central-directory record calls for ZIP64 records, but the archive has none: truncated or corrupt");
    }
    if (disk_entries != total_entries) fail("multi-disk (split) zip archives are not supported");

    if (cd_offset > archive.size() || cd_size > archive.size() - cd_offset)
        fail("central directory (offset " + std::to_string(cd_offset) + ", " + std::to_string(cd_size) +
             " bytes) lies past the end of the file (" + std::to_string(archive.size()) + " bytes): truncated or corrupt");
    if (cd_offset + cd_size > cd_limit)
        fail("central directory (offset " + std::to_string(cd_offset) + ", " + std::to_string(cd_size) +
             " bytes) overlaps the end-of-central-directory record at offset " + std::to_string(cd_limit));
    if (total_entries > cd_size / kCentralHeaderSize)
        fail("the archive claims " + std::to_string(total_entries) + " entries but its central directory (" + std::to_string(cd_size) +
             " bytes) has room for at most " + std::to_string(cd_size / kCentralHeaderSize));

    const uint64_t cd_end = cd_offset + cd_size;
    entries_.reserve(static_cast<size_t>(total_entries));
    uint64_t pos = cd_offset;
    for (uint64_t index = 0; index < total_entries; ++index) {
        const std::string where = "central directory entry " + std::to_string(index);
        if (cd_end - pos < kCentralHeaderSize) fail(where + " runs past the end of the central directory");
        reader.seek(static_cast<size_t>(pos));
        if (reader.read<uint32_t>() != kCentralHeaderSignature)
            fail(where + " at offset " + std::to_string(pos) + " has no central directory signature: corrupt archive");
        reader.read<uint16_t>();  // version made by
        reader.read<uint16_t>();  // version needed
        const uint16_t flags = reader.read<uint16_t>();
        const uint16_t method = reader.read<uint16_t>();
        reader.read<uint32_t>();  // modification time and date
        const uint32_t crc = reader.read<uint32_t>();
        uint64_t compressed_size = reader.read<uint32_t>();
        uint64_t size = reader.read<uint32_t>();
        const uint16_t name_bytes = reader.read<uint16_t>();
        const uint16_t extra_bytes = reader.read<uint16_t>();
        const uint16_t comment_bytes = reader.read<uint16_t>();
        uint32_t start_disk = reader.read<uint16_t>();
        reader.read<uint16_t>();  // internal attributes
        reader.read<uint32_t>();  // external attributes
        uint64_t local_offset = reader.read<uint32_t>();
        const uint64_t variable_bytes = uint64_t{name_bytes} + extra_bytes + comment_bytes;
        if (cd_end - pos - kCentralHeaderSize < variable_bytes) fail(where + " runs past the end of the central directory");
        const std::string_view name = reader.take_string(name_bytes);
        const auto extra = reader.take(extra_bytes);
        reader.take(comment_bytes);
        pos += kCentralHeaderSize + variable_bytes;

        const std::string what = "zip entry '" + std::string(name) + "'";
        // ZIP64 extended information: present values replace those stored as 0xffffffff, in order.
        if (size == 0xffffffff || compressed_size == 0xffffffff || local_offset == 0xffffffff || start_disk == 0xffff) {
            ByteReader extras(extra, subject_);
            bool found = false;
            while (extras.remaining() >= 4) {
                const uint16_t id = extras.read<uint16_t>();
                const uint16_t length = extras.read<uint16_t>();
                if (length > extras.remaining()) fail(what + " has a malformed extra field");
                ByteReader field(extras.take(length), subject_);
                if (id != kZip64ExtraId) continue;
                found = true;
                auto next = [&](const char* which) -> uint64_t {
                    if (field.remaining() < 8) fail(what + " has a ZIP64 extra field without its " + which);
                    return field.read<uint64_t>();
                };
                if (size == 0xffffffff) size = next("size");
                if (compressed_size == 0xffffffff) compressed_size = next("compressed size");
                if (local_offset == 0xffffffff) local_offset = next("local header offset");
                if (start_disk == 0xffff) {
                    if (field.remaining() < 4) fail(what + " has a ZIP64 extra field without its disk number");
                    start_disk = field.read<uint32_t>();
                }
                break;
            }
            if (!found) fail(what + " needs a ZIP64 extra field but has none");
        }
        if (start_disk != 0) fail("multi-disk (split) zip archives are not supported");
        if (flags & (kFlagEncrypted | kFlagStrongEncryption)) fail(what + " is encrypted; encrypted archives are not supported");
        if (method != 0)
            fail(what + " is compressed (" + method_name(method) +
                 "); torch.save stores entries uncompressed, so this archive was re-packed: unzip it and re-save it with torch.save");
        if (compressed_size != size)
            fail(what + " is stored uncompressed but its compressed size (" + std::to_string(compressed_size) +
                 ") differs from its size (" + std::to_string(size) + ")");

        // The local header repeats the name; its extra field may differ in length from the
        // central one (torch pads it to align tensor data), so the data follows the local lengths.
        if (local_offset > cd_offset || cd_offset - local_offset < kLocalHeaderSize)
            fail(what + " local header offset " + std::to_string(local_offset) + " is outside the archive's data area");
        reader.seek(static_cast<size_t>(local_offset));
        if (reader.read<uint32_t>() != kLocalHeaderSignature)
            fail(what + " has no local header at offset " + std::to_string(local_offset) + ": corrupt archive");
        reader.read<uint16_t>();  // version needed
        const uint16_t local_flags = reader.read<uint16_t>();
        const uint16_t local_method = reader.read<uint16_t>();
        reader.take(16);  // time, date, crc, sizes (may be zero when a data descriptor follows)
        const uint16_t local_name_bytes = reader.read<uint16_t>();
        const uint16_t local_extra_bytes = reader.read<uint16_t>();
        if (local_flags & (kFlagEncrypted | kFlagStrongEncryption)) fail(what + " is encrypted; encrypted archives are not supported");
        if (local_method != 0) fail(what + " is compressed (" + method_name(local_method) + ") according to its local header");
        const uint64_t header_end = local_offset + kLocalHeaderSize + local_name_bytes + local_extra_bytes;
        if (header_end > cd_offset) fail(what + " local header runs into the central directory: corrupt archive");
        if (reader.take_string(local_name_bytes) != name) fail(what + " local header names a different file: corrupt archive");
        if (size > cd_offset - header_end)
            fail(what + " data (" + std::to_string(size) + " bytes at offset " + std::to_string(header_end) +
                 ") runs past the start of the central directory at offset " + std::to_string(cd_offset) + ": corrupt archive");

        if (!index_.emplace(name, entries_.size()).second) fail("the archive holds two entries named '" + std::string(name) + "'");
        ZipEntry entry;
        entry.name = name;
        entry.data = archive.subspan(static_cast<size_t>(header_end), static_cast<size_t>(size));
        entry.crc32 = crc;
        entry.local_header_offset = local_offset;
        entries_.push_back(entry);
    }
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &entries_[it->second];
}

void ZipArchive::verify_crc(const ZipEntry& entry) const {
    const uint32_t actual = crc32(entry.data);
    if (actual != entry.crc32)
        throw Error(subject_, "zip entry '" + std::string(entry.name) + "' fails its CRC-32 check (stored " + hex32(entry.crc32) +
                                  ", computed " + hex32(actual) + "): the file is corrupt");
}

}  // namespace oxinfer

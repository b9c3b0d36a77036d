//! Telling binary files from text, and naming common binary types.

/// Bytes sniffed at the start of a file.
pub const SNIFF_BYTES: usize = 8192;

/// Whether a file's first bytes look binary (a NUL byte, as git and ripgrep judge).
pub fn looks_binary(head: &[u8]) -> bool {
    // UTF-16 text has NULs but a BOM; still refuse it, but name it.
    memchr::memchr(0, head).is_some()
}

/// A short name for the type of a binary file, from its magic number.
pub fn kind(head: &[u8]) -> &'static str {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "PNG image"),
        (b"\xff\xd8\xff", "JPEG image"),
        (b"GIF87a", "GIF image"),
        (b"GIF89a", "GIF image"),
        (b"%PDF-", "PDF document"),
        (b"PK\x03\x04", "ZIP archive (or docx/xlsx/jar)"),
        (b"\x1f\x8b", "gzip archive"),
        (b"\x7fELF", "ELF executable or library"),
        (b"\0asm", "WebAssembly module"),
        (b"SQLite format 3\0", "SQLite database"),
        (b"\xfd7zXZ\0", "xz archive"),
        (b"BZh", "bzip2 archive"),
        (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
        (b"\x28\xb5\x2f\xfd", "zstd archive"),
        (b"\xff\xfe", "UTF-16 (little-endian) text"),
        (b"\xfe\xff", "UTF-16 (big-endian) text"),
        (b"RIFF", "RIFF media (WAV/AVI/WebP)"),
        (b"OggS", "Ogg media"),
        (b"ID3", "MP3 audio"),
        (b"\xca\xfe\xba\xbe", "Java class or Mach-O file"),
    ];
    if head.len() > 262 && &head[257..262] == b"ustar" {
        return "tar archive";
    }
    MAGIC
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map(|(_, name)| *name)
        .unwrap_or("binary data")
}

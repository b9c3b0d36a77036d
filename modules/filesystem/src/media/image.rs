//! Images for read_file: PNG, JPEG, GIF and WebP, recognised by their first
//! bytes, decoded under limits, and downscaled when large, then handed to
//! the client as an MCP image block.

use std::io::Cursor;

use image::imageops::FilterType;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};
use toolhost_core::ToolError;

/// Largest image file read_file opens.
pub const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;
/// Largest width or height an image may declare.
pub const MAX_SIDE: u32 = 16_384;
/// Memory the decoder may allocate (a 100,000 × 100,000 header fails here).
pub const MAX_DECODE_BYTES: u64 = 128 * 1024 * 1024;
/// Longest side of the image returned; larger ones are downscaled to it.
pub const MAX_EDGE: u32 = 1568;
/// Largest encoded image returned (before base64).
pub const MAX_BLOCK_BYTES: usize = 1024 * 1024;

/// The formats read_file returns as images, by their magic bytes.
pub fn format_of(head: &[u8]) -> Option<ImageFormat> {
    match image::guess_format(head).ok()? {
        f @ (ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Gif | ImageFormat::WebP) => Some(f),
        _ => None,
    }
}

/// An image ready for a content block.
pub struct Prepared {
    /// MIME type of `data`.
    pub mime: &'static str,
    /// The encoded image.
    pub data: Vec<u8>,
    /// Size as returned.
    pub size: (u32, u32),
    /// Size of the file's image.
    pub original: (u32, u32),
    /// The format name of the file.
    pub format: &'static str,
}

impl Prepared {
    /// One line describing what was returned.
    pub fn summary(&self, display: &str, file_bytes: usize) -> String {
        let (w, h) = self.original;
        let scaled = if self.size != self.original {
            format!(
                "; downscaled to {}×{} ({}, {} bytes) to fit {MAX_EDGE} px and {} KiB",
                self.size.0,
                self.size.1,
                self.mime,
                self.data.len(),
                MAX_BLOCK_BYTES >> 10
            )
        } else {
            String::new()
        };
        format!(
            "{display}: {} image, {w}×{h}, {file_bytes} bytes{scaled}; the image is attached as an image content block",
            self.format
        )
    }
}

fn name(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => "PNG",
        ImageFormat::Jpeg => "JPEG",
        ImageFormat::Gif => "GIF",
        ImageFormat::WebP => "WebP",
        _ => "image",
    }
}

fn mime(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Jpeg => "image/jpeg",
        ImageFormat::Gif => "image/gif",
        ImageFormat::WebP => "image/webp",
        _ => "image/png",
    }
}

fn reader(bytes: &[u8], format: ImageFormat) -> ImageReader<Cursor<&[u8]>> {
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits);
    reader
}

/// Decodes `bytes` (checking it is a whole, sane image) and returns it as
/// is when small enough, or downscaled and re-encoded.
pub fn prepare(bytes: &[u8], display: &str) -> Result<Prepared, ToolError> {
    let format = format_of(bytes).ok_or_else(|| {
        ToolError::new(
            "unsupported_file_type",
            format!("{display} is not a PNG, JPEG, GIF or WebP image"),
        )
    })?;
    let bad = |e: image::ImageError| {
        let code = match e {
            image::ImageError::Limits(_) => "image_too_large",
            _ => "malformed_file",
        };
        ToolError::new(
            code,
            format!(
                "{display} ({} bytes) cannot be read as a {} image: {e} (read_file decodes images up to {MAX_SIDE}×{MAX_SIDE} px and {} MiB of pixels)",
                bytes.len(),
                name(format),
                MAX_DECODE_BYTES >> 20
            ),
        )
    };
    let (w, h) = reader(bytes, format).into_dimensions().map_err(bad)?;
    if w > MAX_SIDE || h > MAX_SIDE {
        return Err(bad(image::ImageError::Limits(
            image::error::LimitError::from_kind(image::error::LimitErrorKind::DimensionError),
        )));
    }
    let decoded = reader(bytes, format).decode().map_err(bad)?;
    if w.max(h) <= MAX_EDGE && bytes.len() <= MAX_BLOCK_BYTES {
        return Ok(Prepared {
            mime: mime(format),
            data: bytes.to_vec(),
            size: (w, h),
            original: (w, h),
            format: name(format),
        });
    }
    let mut small = if w.max(h) > MAX_EDGE {
        decoded.resize(MAX_EDGE, MAX_EDGE, FilterType::Triangle)
    } else {
        decoded
    };
    // Photos stay JPEG; the rest become PNG unless that is still too big.
    let mut data = if format == ImageFormat::Jpeg {
        jpeg(&small, 85)?
    } else {
        png(&small)?
    };
    let mut out_mime = if format == ImageFormat::Jpeg {
        "image/jpeg"
    } else {
        "image/png"
    };
    if data.len() > MAX_BLOCK_BYTES {
        data = jpeg(&small, 70)?;
        out_mime = "image/jpeg";
    }
    // Noise-like images stay large as JPEG too: shrink by 3/4 steps (a few
    // at most, each cheaper than the last) until the block fits.
    while data.len() > MAX_BLOCK_BYTES && small.width().max(small.height()) > 64 {
        let edge = small.width().max(small.height()) * 3 / 4;
        small = small.resize(edge, edge, FilterType::Triangle);
        data = jpeg(&small, 70)?;
    }
    if data.len() > MAX_BLOCK_BYTES {
        return Err(ToolError::new(
            "image_too_large",
            format!(
                "{display} is still larger than {} KiB after downscaling",
                MAX_BLOCK_BYTES >> 10
            ),
        ));
    }
    let size = (small.width(), small.height());
    Ok(Prepared {
        mime: out_mime,
        data,
        size,
        original: (w, h),
        format: name(format),
    })
}

fn encode_error(e: image::ImageError) -> ToolError {
    ToolError::new("io_error", format!("cannot re-encode the image: {e}"))
}

fn png(image: &DynamicImage) -> Result<Vec<u8>, ToolError> {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, ImageFormat::Png).map_err(encode_error)?;
    Ok(out.into_inner())
}

fn jpeg(image: &DynamicImage, quality: u8) -> Result<Vec<u8>, ToolError> {
    let mut out = Vec::new();
    let rgb = image.to_rgb8();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
        .encode_image(&rgb)
        .map_err(encode_error)?;
    Ok(out)
}

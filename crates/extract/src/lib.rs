//! What Coffer derives from stored content: thumbnails of images, and the text of documents
//! for the search index ([`text`]: plain text and source code, HTML, PDF, DOCX, XLSX, PPTX,
//! OpenDocument).
//!
//! Everything here reads untrusted bytes, so every call is bounded: the input's size, the
//! image's pixel count and the decoder's allocations are checked against [`Limits`] before the
//! pixels are decoded (a header claiming 100000 × 100000 is refused at once), the work is
//! proportional to those bounds, and a panic in a decoder is caught and answered as
//! [`ExtractError::Panicked`] instead of taking the process down. The crate is pure: no
//! database, no network, no threads of its own; callers run it on a blocking thread and may add
//! a wall-clock limit around it.
//!
//! Only the decoders for PNG, JPEG, GIF, WebP and BMP are compiled in. The format is sniffed
//! from the bytes, never taken from a name.

mod text;

pub use text::{text, text_format, Format, TextLimits};

use image::{DynamicImage, ImageDecoder, ImageError, ImageFormat, ImageReader};
use std::fmt;
use std::io::Cursor;
use std::panic::{self, AssertUnwindSafe};

/// The bounds of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The largest input accepted, in bytes.
    pub max_input_bytes: u64,
    /// The most pixels (width × height) an image may have.
    pub max_pixels: u64,
    /// The most memory the decoder may allocate at once, in bytes (the decoded image included).
    pub max_alloc: u64,
    /// The longer side of a thumbnail, in pixels.
    pub max_dim: u32,
}

impl Default for Limits {
    /// 64 MiB of input, 50 megapixels, 512 MiB of decoder memory, 256-pixel thumbnails.
    fn default() -> Limits {
        Limits {
            max_input_bytes: 64 * 1024 * 1024,
            max_pixels: 50_000_000,
            max_alloc: 512 * 1024 * 1024,
            max_dim: 256,
        }
    }
}

/// Why no thumbnail was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtractError {
    /// The input, its pixel count, the memory its decoding needs, or (for text) the bytes it
    /// unpacks, its parts or the time it takes exceed the limits.
    TooLarge,
    /// Not a format this crate decodes.
    Unsupported,
    /// The bytes claim a supported format but do not decode.
    Corrupt(String),
    /// A decoder panicked; the panic was caught.
    Panicked,
}

impl fmt::Display for ExtractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExtractError::TooLarge => f.write_str("the input exceeds the limits"),
            ExtractError::Unsupported => f.write_str("not a supported format"),
            ExtractError::Corrupt(why) => write!(f, "the input does not decode: {why}"),
            ExtractError::Panicked => f.write_str("the decoder panicked"),
        }
    }
}

impl std::error::Error for ExtractError {}

/// The MIME types [`thumbnail`] decodes (parameters such as `; charset=` are ignored). SVG is
/// not among them: it is a document that can run script, not a picture.
pub fn is_thumbnailable(mime: &str) -> bool {
    let base = mime.split(';').next().unwrap_or("").trim();
    const TYPES: &[&str] = &[
        "image/png",
        "image/jpeg",
        "image/jpg",
        "image/pjpeg",
        "image/gif",
        "image/webp",
        "image/bmp",
        "image/x-ms-bmp",
    ];
    TYPES.iter().any(|t| base.eq_ignore_ascii_case(t))
}

/// Decodes an image (its format sniffed from the bytes) within `limits` and returns a PNG
/// thumbnail whose longer side is at most `limits.max_dim`, the aspect ratio kept; an image
/// already that small keeps its size (never upscaled). The dimensions and the memory the
/// decoding needs are checked against the limits from the header, before any pixel is decoded.
/// The EXIF orientation of a photo is applied. A decoder panic is caught and answered as
/// [`ExtractError::Panicked`].
pub fn thumbnail(bytes: &[u8], limits: &Limits) -> Result<Vec<u8>, ExtractError> {
    if bytes.len() as u64 > limits.max_input_bytes {
        return Err(ExtractError::TooLarge);
    }
    guarded(|| decode_and_shrink(bytes, limits))
}

/// Runs `f`, answering a panic inside it as [`ExtractError::Panicked`]. Nothing `f` touches
/// outlives it, so no broken state can be observed after a caught panic.
fn guarded<T>(f: impl FnOnce() -> Result<T, ExtractError>) -> Result<T, ExtractError> {
    panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or(Err(ExtractError::Panicked))
}

/// The formats compiled in; anything else sniffed is unsupported.
fn supported(format: ImageFormat) -> bool {
    matches!(
        format,
        ImageFormat::Png
            | ImageFormat::Jpeg
            | ImageFormat::Gif
            | ImageFormat::WebP
            | ImageFormat::Bmp
    )
}

fn decode_and_shrink(bytes: &[u8], limits: &Limits) -> Result<Vec<u8>, ExtractError> {
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| ExtractError::Corrupt(e.to_string()))?;
    match reader.format() {
        Some(f) if supported(f) => {}
        _ => return Err(ExtractError::Unsupported),
    }
    let mut reader = reader;
    let side = u32::try_from(limits.max_pixels).unwrap_or(u32::MAX);
    let mut bounds = image::Limits::default();
    bounds.max_image_width = Some(side);
    bounds.max_image_height = Some(side);
    bounds.max_alloc = Some(limits.max_alloc);
    reader.limits(bounds);
    // Reads the header only; the decoder checks the width and height limits here.
    let mut decoder = reader.into_decoder().map_err(from_image)?;
    let (w, h) = decoder.dimensions();
    if w == 0 || h == 0 {
        return Err(ExtractError::Corrupt("the image has no pixels".into()));
    }
    if u64::from(w) * u64::from(h) > limits.max_pixels || decoder.total_bytes() > limits.max_alloc {
        return Err(ExtractError::TooLarge);
    }
    let orientation = decoder.orientation().map_err(from_image)?;
    let full = DynamicImage::from_decoder(decoder).map_err(from_image)?;
    let (tw, th) = fit(w, h, limits.max_dim);
    let mut small = if (tw, th) == (w, h) {
        full
    } else {
        let s = full.thumbnail_exact(tw, th);
        drop(full);
        s
    };
    small.apply_orientation(orientation);
    let small = eight_bit(small);
    let mut out = Vec::new();
    small
        .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
        .map_err(from_image)?;
    Ok(out)
}

/// The size that fits `w × h` within `max × max`, aspect kept, never larger than it was.
fn fit(w: u32, h: u32, max: u32) -> (u32, u32) {
    let max = max.max(1);
    if w <= max && h <= max {
        return (w, h);
    }
    let (long, short) = (u64::from(w.max(h)), u64::from(w.min(h)));
    let scaled = ((short * u64::from(max) + long / 2) / long).clamp(1, u64::from(max)) as u32;
    if w >= h {
        (max, scaled)
    } else {
        (scaled, max)
    }
}

/// Eight bits per channel (a thumbnail needs no more), keeping alpha when there is some.
fn eight_bit(img: DynamicImage) -> DynamicImage {
    match img {
        DynamicImage::ImageLuma8(_)
        | DynamicImage::ImageLumaA8(_)
        | DynamicImage::ImageRgb8(_)
        | DynamicImage::ImageRgba8(_) => img,
        DynamicImage::ImageLuma16(_) => DynamicImage::ImageLuma8(img.to_luma8()),
        DynamicImage::ImageLumaA16(_) => DynamicImage::ImageLumaA8(img.to_luma_alpha8()),
        other if other.color().has_alpha() => DynamicImage::ImageRgba8(other.to_rgba8()),
        other => DynamicImage::ImageRgb8(other.to_rgb8()),
    }
}

fn from_image(e: ImageError) -> ExtractError {
    match e {
        ImageError::Limits(_) => ExtractError::TooLarge,
        ImageError::Unsupported(_) => ExtractError::Unsupported,
        other => {
            let text: String = other.to_string().chars().take(300).collect();
            ExtractError::Corrupt(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{ImageBuffer, Rgb, Rgba};
    use std::time::{Duration, Instant};

    fn encode(img: &DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut out = Vec::new();
        img.write_to(&mut Cursor::new(&mut out), format).unwrap();
        out
    }

    fn gradient(w: u32, h: u32) -> DynamicImage {
        DynamicImage::ImageRgb8(ImageBuffer::from_fn(w, h, |x, y| {
            Rgb([(x % 256) as u8, (y % 256) as u8, 128])
        }))
    }

    /// Decodes a thumbnail, checking it is a PNG.
    fn decoded(png: &[u8]) -> DynamicImage {
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        image::load_from_memory_with_format(png, ImageFormat::Png).unwrap()
    }

    #[test]
    fn a_png_shrinks_to_the_longer_side_with_its_aspect() {
        let png = encode(&gradient(800, 400), ImageFormat::Png);
        let t = decoded(&thumbnail(&png, &Limits::default()).unwrap());
        assert_eq!((t.width(), t.height()), (256, 128));
        let tall = encode(&gradient(300, 1000), ImageFormat::Png);
        let t = decoded(&thumbnail(&tall, &Limits::default()).unwrap());
        assert_eq!((t.width(), t.height()), (77, 256));
    }

    #[test]
    fn a_jpeg_becomes_a_png_thumbnail() {
        let jpeg = encode(&gradient(640, 480), ImageFormat::Jpeg);
        assert_eq!(&jpeg[..2], b"\xff\xd8");
        let limits = Limits {
            max_dim: 100,
            ..Limits::default()
        };
        let t = decoded(&thumbnail(&jpeg, &limits).unwrap());
        assert_eq!((t.width(), t.height()), (100, 75));
    }

    #[test]
    fn gif_webp_and_bmp_decode_and_alpha_is_kept() {
        let img = DynamicImage::ImageRgba8(ImageBuffer::from_fn(300, 30, |x, _| {
            Rgba([200, 10, 10, (x % 256) as u8])
        }));
        for format in [ImageFormat::Gif, ImageFormat::WebP, ImageFormat::Bmp] {
            let bytes = encode(&img, format);
            let t = decoded(&thumbnail(&bytes, &Limits::default()).unwrap());
            assert_eq!((t.width(), t.height()), (256, 26), "{format:?}");
        }
        let png = encode(&img, ImageFormat::Png);
        let t = decoded(&thumbnail(&png, &Limits::default()).unwrap());
        assert!(t.color().has_alpha());
    }

    #[test]
    fn a_small_image_is_not_upscaled() {
        for (w, h) in [(1, 1), (256, 10), (10, 256)] {
            let png = encode(&gradient(w, h), ImageFormat::Png);
            let t = decoded(&thumbnail(&png, &Limits::default()).unwrap());
            assert_eq!((t.width(), t.height()), (w, h));
        }
    }

    /// A PNG chunk: length, type, data, CRC-32 of type and data.
    fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
        let mut crc = 0xffff_ffffu32;
        for &b in kind.iter().chain(data) {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        let mut out = (data.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&(!crc).to_be_bytes());
        out
    }

    /// A PNG whose header claims `w × h` RGBA pixels, with a few bytes of image data.
    fn claimed_png(w: u32, h: u32) -> Vec<u8> {
        let mut ihdr = w.to_be_bytes().to_vec();
        ihdr.extend_from_slice(&h.to_be_bytes());
        ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend(chunk(b"IHDR", &ihdr));
        // A zlib stream of zeros: it would inflate to far more than it is.
        png.extend(chunk(
            b"IDAT",
            &[0x78, 0x9c, 0xed, 0xc1, 0x01, 0x0d, 0x00, 0x00],
        ));
        png.extend(chunk(b"IEND", &[]));
        png
    }

    #[test]
    fn a_decompression_bomb_is_refused_from_its_header() {
        let bomb = claimed_png(100_000, 100_000);
        let started = Instant::now();
        assert_eq!(
            thumbnail(&bomb, &Limits::default()),
            Err(ExtractError::TooLarge)
        );
        assert!(started.elapsed() < Duration::from_secs(1));
        // Within the side limits but over the pixel count.
        let wide = claimed_png(40_000, 2_000);
        assert_eq!(
            thumbnail(&wide, &Limits::default()),
            Err(ExtractError::TooLarge)
        );
        // Within the pixel count but over the memory the decoder may use.
        let limits = Limits {
            max_alloc: 1024 * 1024,
            ..Limits::default()
        };
        assert_eq!(
            thumbnail(&claimed_png(1000, 1000), &limits),
            Err(ExtractError::TooLarge)
        );
    }

    #[test]
    fn too_many_bytes_are_refused_before_decoding() {
        let png = encode(&gradient(64, 64), ImageFormat::Png);
        let limits = Limits {
            max_input_bytes: 16,
            ..Limits::default()
        };
        assert_eq!(thumbnail(&png, &limits), Err(ExtractError::TooLarge));
    }

    #[test]
    fn garbage_is_unsupported_or_corrupt() {
        assert_eq!(
            thumbnail(b"hello, not an image", &Limits::default()),
            Err(ExtractError::Unsupported)
        );
        assert_eq!(
            thumbnail(b"", &Limits::default()),
            Err(ExtractError::Unsupported)
        );
        assert_eq!(
            thumbnail(b"%PDF-1.7\n", &Limits::default()),
            Err(ExtractError::Unsupported)
        );
        // A TIFF is recognised but not decoded here.
        assert_eq!(
            thumbnail(b"II*\0\x08\0\0\0\0\0\0\0\0\0\0\0", &Limits::default()),
            Err(ExtractError::Unsupported)
        );
        // The right magic, then garbage; and a real image cut short.
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend_from_slice(&[0xab; 64]);
        assert!(matches!(
            thumbnail(&png, &Limits::default()),
            Err(ExtractError::Corrupt(_))
        ));
        let mut jpeg = b"\xff\xd8\xff\xe0".to_vec();
        jpeg.extend_from_slice(&[0xab; 64]);
        assert!(matches!(
            thumbnail(&jpeg, &Limits::default()),
            Err(ExtractError::Corrupt(_))
        ));
        // A JPEG cut short decodes as far as it goes, or not at all; never a panic.
        let whole = encode(&gradient(200, 200), ImageFormat::Jpeg);
        assert!(matches!(
            thumbnail(&whole[..whole.len() / 3], &Limits::default()),
            Ok(_) | Err(ExtractError::Corrupt(_))
        ));
        let whole = encode(&gradient(200, 200), ImageFormat::Png);
        assert!(matches!(
            thumbnail(&whole[..whole.len() / 2], &Limits::default()),
            Err(ExtractError::Corrupt(_))
        ));
    }

    #[test]
    fn a_panic_is_an_error() {
        let r: Result<(), ExtractError> = guarded(|| panic!("a decoder bug"));
        assert_eq!(r, Err(ExtractError::Panicked));
        assert_eq!(guarded(|| Ok(7)), Ok(7));
    }

    #[test]
    fn types_that_are_thumbnailed() {
        for t in [
            "image/png",
            "image/jpeg",
            "IMAGE/GIF",
            "image/webp",
            "image/bmp; x=1",
        ] {
            assert!(is_thumbnailable(t), "{t}");
        }
        for t in [
            "image/svg+xml",
            "image/tiff",
            "application/pdf",
            "text/plain",
            "",
        ] {
            assert!(!is_thumbnailable(t), "{t}");
        }
    }

    #[test]
    fn fit_keeps_the_aspect_and_never_upscales() {
        assert_eq!(fit(800, 400, 256), (256, 128));
        assert_eq!(fit(400, 800, 256), (128, 256));
        assert_eq!(fit(100_000, 1, 256), (256, 1));
        assert_eq!(fit(1, 1, 256), (1, 1));
        assert_eq!(fit(300, 300, 0), (1, 1));
    }
}

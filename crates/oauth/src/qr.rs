//! QR codes as PNG data URIs (`data:image/png;base64,…`), so that an authenticator app can
//! enrol by scanning the `otpauth://` URI of a TOTP secret.
//!
//! The `qrcode` crate lays out the modules; the PNG is written here: one bit per pixel,
//! grayscale, its image data in stored (uncompressed) deflate blocks. A QR code of a TOTP URI is
//! a few kilobytes that way, and no image or compression library is needed.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use qrcode::{Color, EcLevel, QrCode};

/// Pixels per module.
const SCALE: usize = 4;
/// Light modules around the code, as the QR standard asks.
const QUIET_ZONE: usize = 4;

/// The QR code of `text` (error correction level M) as a PNG data URI. Fails only when the
/// text is too long for any QR code (about 2,300 bytes at this level).
pub fn png_data_uri(text: &str) -> Result<String, String> {
    let code = QrCode::with_error_correction_level(text.as_bytes(), EcLevel::M)
        .map_err(|e| format!("QR code: {e}"))?;
    let modules = code.width();
    let side = (modules + 2 * QUIET_ZONE) * SCALE;
    let dark = |x: usize, y: usize| {
        let (mx, my) = (x / SCALE, y / SCALE);
        (QUIET_ZONE..QUIET_ZONE + modules).contains(&mx)
            && (QUIET_ZONE..QUIET_ZONE + modules).contains(&my)
            && code[(mx - QUIET_ZONE, my - QUIET_ZONE)] == Color::Dark
    };
    let png = png_1bit(side, dark);
    Ok(format!("data:image/png;base64,{}", STANDARD.encode(png)))
}

/// A square 1-bit grayscale PNG of `side` pixels; `dark(x, y)` says which pixels are black.
fn png_1bit(side: usize, dark: impl Fn(usize, usize) -> bool) -> Vec<u8> {
    let row_bytes = side.div_ceil(8);
    let mut raw = Vec::with_capacity(side * (row_bytes + 1));
    for y in 0..side {
        raw.push(0); // filter type: none
        for byte in 0..row_bytes {
            let mut b = 0u8;
            for bit in 0..8 {
                let x = byte * 8 + bit;
                // 1 is white in 1-bit grayscale.
                if x >= side || !dark(x, y) {
                    b |= 0x80 >> bit;
                }
            }
            raw.push(b);
        }
    }
    let side = u32::try_from(side).unwrap_or(u32::MAX);
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&side.to_be_bytes());
    ihdr.extend_from_slice(&side.to_be_bytes());
    // Bit depth 1, grayscale, deflate, adaptive filtering, no interlace.
    ihdr.extend_from_slice(&[1, 0, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &zlib_stored(&raw));
    chunk(&mut out, b"IEND", &[]);
    out
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A zlib stream (RFC 1950) of stored deflate blocks (RFC 1951 §3.2.4).
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    const MAX_BLOCK: usize = 65_535;
    let mut out = vec![0x78, 0x01];
    let mut blocks = data.chunks(MAX_BLOCK).peekable();
    if blocks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(block) = blocks.next() {
        out.push(u8::from(blocks.peek().is_none()));
        let len = u16::try_from(block.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    out.extend_from_slice(&adler32(data).to_be_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunks of a PNG, each checked against its CRC.
    fn chunks(png: &[u8]) -> Vec<(String, Vec<u8>)> {
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let mut at = 8;
        let mut out = Vec::new();
        while at < png.len() {
            let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
            let body = &png[at + 4..at + 8 + len];
            let crc = u32::from_be_bytes(png[at + 8 + len..at + 12 + len].try_into().unwrap());
            assert_eq!(crc32(body), crc, "chunk CRC");
            out.push((
                String::from_utf8(body[..4].to_vec()).unwrap(),
                body[4..].to_vec(),
            ));
            at += 12 + len;
        }
        out
    }

    /// The data of a zlib stream of stored blocks, checked against its Adler-32.
    fn unstore(z: &[u8]) -> Vec<u8> {
        assert_eq!(&z[..2], &[0x78, 0x01]);
        assert_eq!(
            u16::from_be_bytes([z[0], z[1]]) % 31,
            0,
            "zlib header check"
        );
        let mut at = 2;
        let mut out = Vec::new();
        loop {
            let last = z[at] & 1 == 1;
            assert_eq!(z[at] >> 1, 0, "a stored block");
            let len = u16::from_le_bytes([z[at + 1], z[at + 2]]);
            let nlen = u16::from_le_bytes([z[at + 3], z[at + 4]]);
            assert_eq!(len, !nlen);
            out.extend_from_slice(&z[at + 5..at + 5 + len as usize]);
            at += 5 + len as usize;
            if last {
                break;
            }
        }
        assert_eq!(
            u32::from_be_bytes(z[at..at + 4].try_into().unwrap()),
            adler32(&out)
        );
        assert_eq!(at + 4, z.len());
        out
    }

    #[test]
    fn checksums_match_known_values() {
        assert_eq!(crc32(b"IEND"), 0xae42_6082);
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
    }

    #[test]
    fn long_data_spans_several_blocks() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(unstore(&zlib_stored(&data)), data);
        assert!(unstore(&zlib_stored(&[])).is_empty());
    }

    #[test]
    fn the_image_holds_the_code_module_by_module() {
        let uri = "otpauth://totp/Coffer:ann%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=Coffer\
                   &algorithm=SHA1&digits=6&period=30";
        let data = png_data_uri(uri).unwrap();
        let b64 = data.strip_prefix("data:image/png;base64,").unwrap();
        let png = STANDARD.decode(b64).unwrap();
        let chunks = chunks(&png);
        let kinds: Vec<&str> = chunks.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kinds, ["IHDR", "IDAT", "IEND"]);
        let ihdr = &chunks[0].1;
        let side = u32::from_be_bytes(ihdr[0..4].try_into().unwrap()) as usize;
        assert_eq!(&ihdr[4..8], &ihdr[0..4], "square");
        assert_eq!(&ihdr[8..], &[1, 0, 0, 0, 0]);

        let code = QrCode::with_error_correction_level(uri, EcLevel::M).unwrap();
        assert_eq!(side, (code.width() + 2 * QUIET_ZONE) * SCALE);
        let raw = unstore(&chunks[1].1);
        let row = side.div_ceil(8) + 1;
        assert_eq!(raw.len(), side * row);
        let pixel_dark = |x: usize, y: usize| raw[y * row + 1 + x / 8] & (0x80 >> (x % 8)) == 0;
        for y in 0..side {
            assert_eq!(raw[y * row], 0, "filter byte");
            for x in 0..side {
                let (mx, my) = (x / SCALE, y / SCALE);
                let inside = (QUIET_ZONE..QUIET_ZONE + code.width()).contains(&mx)
                    && (QUIET_ZONE..QUIET_ZONE + code.width()).contains(&my);
                let expect = inside && code[(mx - QUIET_ZONE, my - QUIET_ZONE)] == Color::Dark;
                assert_eq!(pixel_dark(x, y), expect, "({x}, {y})");
            }
        }
    }

    #[test]
    fn text_too_long_for_a_qr_code_is_an_error() {
        assert!(png_data_uri(&"x".repeat(5000)).is_err());
    }
}

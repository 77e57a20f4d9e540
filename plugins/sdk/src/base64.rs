//! Standard base64 (RFC 4648, padded), for binary data that travels in JSON: a command's
//! non-UTF-8 output, a binary file's content. Hand-written: the guest side builds with
//! rustc 1.63, which the maintained crates no longer support.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity((bytes.len() + 2) / 3 * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].iter().enumerate() {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// None when `text` is not valid base64 (whitespace is ignored).
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if digits.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(digits.len() / 4 * 3);
    for chunk in digits.chunks(4) {
        let mut n = 0u32;
        let mut padding = 0;
        for &digit in chunk {
            let value = match digit {
                b'A'..=b'Z' => digit - b'A',
                b'a'..=b'z' => digit - b'a' + 26,
                b'0'..=b'9' => digit - b'0' + 52,
                b'+' => 62,
                b'/' => 63,
                b'=' => {
                    padding += 1;
                    0
                }
                _ => return None,
            };
            if digit != b'=' && padding > 0 {
                return None;
            }
            n = (n << 6) | u32::from(value);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - padding.min(2)]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trips() {
        for input in [&b""[..], b"f", b"fo", b"foo", b"foob", b"\xff\x00\xfe"] {
            let encoded = super::encode(input);
            assert_eq!(super::decode(&encoded).as_deref(), Some(input));
        }
        assert_eq!(super::encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(super::decode("Zm9v!"), None);
    }
}

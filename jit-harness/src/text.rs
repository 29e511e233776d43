//! Text hygiene for everything the harness prints: no line longer than a
//! screenful (a failing CHECK line or an output line may be megabytes), no
//! terminal escape sequences from a library's diagnostics.

/// Longest line the harness prints, in bytes, before cutting it.
pub const MAX_LINE: usize = 300;

/// `line` cut to at most `max` bytes (at a character boundary) followed by
/// ` ... [N more bytes]` when it is longer.
pub fn cut_line(line: &str, max: usize) -> String {
    if line.len() <= max {
        return line.to_string();
    }
    let mut end = max;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} ... [{} more bytes]", &line[..end], line.len() - end)
}

/// Every line of `text` cut to `max` bytes; line structure kept.
pub fn cut_lines(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(64 * 1024));
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.len() <= max {
            out.push_str(line);
        } else {
            out.push_str(&cut_line(line, max));
        }
    }
    out
}

/// `text` without ANSI escape sequences (`ESC [ ... letter`).
pub fn strip_ansi(text: &str) -> String {
    if !text.contains('\x1b') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `out` with every hexadecimal address (`0x` and 6 or more hex digits,
/// as `printMemref*` prints a buffer's `base@`) replaced by `0x?`: heap
/// addresses differ from run to run under any schedule, and a replay's
/// outputs are compared without them.
pub fn mask_addresses(out: &[u8]) -> Vec<u8> {
    let mut masked = Vec::with_capacity(out.len());
    let mut i = 0;
    while i < out.len() {
        if out[i..].starts_with(b"0x") {
            let digits = out[i + 2..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
            if digits >= 6 {
                masked.extend_from_slice(b"0x?");
                i += 2 + digits;
                continue;
            }
        }
        masked.push(out[i]);
        i += 1;
    }
    masked
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn cuts_long_lines_only() {
        assert_eq!(cut_line("short", 10), "short");
        assert_eq!(cut_line(&"x".repeat(25), 10), format!("{} ... [15 more bytes]", "x".repeat(10)));
        assert_eq!(cut_lines("ab\ncdefgh\n", 3), "ab\ncde ... [3 more bytes]\n");
    }

    #[test]
    fn cuts_at_a_character_boundary() {
        // 'é' is two bytes: a cut at byte 3 would split the second one.
        assert_eq!(cut_line("aéé", 4), "aé ... [2 more bytes]");
    }

    #[test]
    fn strips_colour_codes() {
        assert_eq!(strip_ansi("\x1b[0;1;31merror: \x1b[0mx"), "error: x");
        assert_eq!(strip_ansi("plain"), "plain");
    }
}

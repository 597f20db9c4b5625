//! Secrets: one type that never prints itself, and one scrubber for text oemputx did not
//! write itself (a client library's error, a flow's last lines, a command line).
//!
//! A [`Secret`] prints as `***` through `Debug` and `Display`, so a struct holding one can
//! derive `Debug` and be formatted anywhere without leaking it; the value is reached only
//! through [`Secret::expose`], at the one place that hands it to a client. Every secret made
//! is also remembered, so that [`scrub`] can take it out of free text even where it appears
//! bare (a responder that prints its password, a library that quotes a token), besides the
//! password of every URL (`scheme://user:password@host`) and the `password=` of keyword and
//! query forms (PostgreSQL's `host=h password=p`, `?password=p`).

use std::sync::{Mutex, OnceLock};

/// What a secret prints as.
pub const MASK: &str = "***";

/// Public default credentials: no secret, and far too common in ordinary text (user names,
/// URL schemes, process names) to be scrubbed by value. RabbitMQ's `guest`, ActiveMQ's
/// `admin`, the PostgreSQL images' `postgres`.
const PUBLIC_DEFAULTS: [&str; 3] = ["guest", "admin", "postgres"];

/// Values shorter than this are not scrubbed by value (they would match inside ordinary
/// words); they are still masked wherever they stand in a URL or a `password=`.
const MIN_SCRUBBED: usize = 4;

/// A password or token: shown as `***`, reached only through [`Secret::expose`].
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap `value`, and remember it for [`scrub`].
    pub fn new(value: impl Into<String>) -> Secret {
        let value = value.into();
        remember(&value);
        Secret(value)
    }

    /// The value itself: for a client's login or a child's environment, never for printing.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(MASK)
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(MASK)
    }
}

fn known() -> &'static Mutex<Vec<String>> {
    static KNOWN: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    KNOWN.get_or_init(|| Mutex::new(Vec::new()))
}

/// Remember a secret that did not come through [`Secret::new`] (one a child was handed).
pub(crate) fn remember(value: &str) {
    if value.chars().count() < MIN_SCRUBBED || PUBLIC_DEFAULTS.contains(&value) {
        return;
    }
    if let Ok(mut k) = known().lock()
        && !k.iter().any(|s| s == value)
    {
        k.push(value.to_string());
        // Longest first, so that a secret containing another is masked whole.
        k.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// `text` with every secret taken out: every secret this process has made, in any
/// spelling (as it is, or percent-encoded as a URL carries it), URL passwords and
/// `password=` values, each replaced by `***`.
pub fn scrub(text: &str) -> String {
    // Known secrets first: a decoded password with a '/' or '@' in a URL
    // (`amqp://u:p@ss/word@h`) would otherwise be cut where the URL rule ends its authority.
    let mut out = text.to_string();
    if let Ok(k) = known().lock() {
        for secret in k.iter() {
            out = mask_spellings(&out, secret);
        }
    }
    keyword_passwords(&url_passwords(&out))
}

/// The value of a `%XX` escape's two hex digits.
fn hex_byte(digits: &[u8]) -> Option<u8> {
    std::str::from_utf8(digits)
        .ok()
        .and_then(|d| u8::from_str_radix(d, 16).ok())
}

/// Where `secret` ends if it is spelled at `text[at..]`: each of its bytes as it is or as a
/// `%XX` escape (either case, any mix: encoders differ in what they escape, `%2F` or `%2f`
/// or a bare `/`), a space also as `+` (forms). A flow is handed its broker's password
/// percent-encoded in `OEMPUTX_URL`, and may print it so (issue 48, item 16).
fn spelled_at(text: &[u8], at: usize, secret: &[u8]) -> Option<usize> {
    let mut k = at;
    for &want in secret {
        let escaped = match text.get(k..k + 3) {
            Some([b'%', digits @ ..]) => hex_byte(digits),
            _ => None,
        };
        if escaped == Some(want) {
            k += 3;
        } else if text.get(k) == Some(&want) || (want == b' ' && text.get(k) == Some(&b'+')) {
            k += 1;
        } else {
            return None;
        }
    }
    Some(k)
}

/// `text` with every spelling of `secret` (see [`spelled_at`]) replaced by `***`.
fn mask_spellings(text: &str, secret: &str) -> String {
    let (t, s) = (text.as_bytes(), secret.as_bytes());
    // Every spelling starts with the secret's first byte or a '%' (or a '+' for a space).
    let Some(&first) = s.first() else {
        return text.to_string();
    };
    if !t.iter().any(|b| *b == first || *b == b'%' || *b == b'+') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let (mut last, mut i) = (0, 0);
    while i < t.len() {
        match spelled_at(t, i, s) {
            Some(end) if text.is_char_boundary(i) && text.is_char_boundary(end) => {
                out.push_str(&text[last..i]);
                out.push_str(MASK);
                (last, i) = (end, end);
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[last..]);
    out
}

/// Best-effort for a URL that may not parse: `scheme://user:***@rest`.
pub(crate) fn redact_url(raw: &str) -> String {
    if let Some((scheme, rest)) = raw.split_once("://")
        && let Some((userinfo, host)) = rest.rsplit_once('@')
    {
        let user = userinfo.split(':').next().unwrap_or("");
        return format!("{scheme}://{user}:{MASK}@{host}");
    }
    raw.to_string()
}

/// The password of every URL in `text` (`scheme://user:password@host`) replaced by `***`.
fn url_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        // The authority ends at the first of these; a password is what lies between the
        // first ':' and the last '@' before it.
        let end = tail
            .find(|c: char| c.is_whitespace() || "/?#\"'`<>".contains(c))
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rsplit_once('@') {
            Some((userinfo, host)) if userinfo.contains(':') => {
                let user = userinfo.split(':').next().unwrap_or("");
                out.push_str(&format!("{user}:{MASK}@{host}"));
            }
            _ => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Keys whose value is a secret in keyword (`password=p`, `password = 'p q'`) and query
/// (`?password=p&`) forms.
const SECRET_KEYS: [&str; 4] = ["password", "passwd", "pwd", "token"];

/// Every `KEY=VALUE` of [`SECRET_KEYS`] with its value replaced by `***`: PostgreSQL's
/// keyword connection strings and URL queries, and the same in free text.
fn keyword_passwords(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !text.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let Some(key) = SECRET_KEYS.iter().find(|k| lower[i..].starts_with(*k)) else {
            i += 1;
            continue;
        };
        // The key must start a word (`?password=`, ` password=`, not `mypassword=`).
        let starts_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let mut j = i + key.len();
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        if !starts_word || j >= bytes.len() || bytes[j] != b'=' {
            i += key.len();
            continue;
        }
        j += 1;
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        let (value_start, value_end) = if j < bytes.len() && (bytes[j] == b'\'' || bytes[j] == b'"')
        {
            let quote = bytes[j];
            let close = text[j + 1..]
                .find(quote as char)
                .map_or(bytes.len(), |k| j + 1 + k + 1);
            (j, close)
        } else {
            let end = text[j..]
                .find(|c: char| c.is_whitespace() || "&;,\"'`<>".contains(c))
                .map_or(bytes.len(), |k| j + k);
            (j, end)
        };
        if value_end > value_start {
            out.push_str(&text[at..value_start]);
            out.push_str(MASK);
            at = value_end;
        }
        i = value_end.max(i + 1);
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_never_prints_itself() {
        let s = Secret::new("hunter22");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(format!("{s:?}"), "***");
        assert_eq!(s.expose(), "hunter22");
        #[derive(Debug)]
        #[allow(dead_code)]
        struct Login {
            user: String,
            password: Secret,
        }
        let l = Login {
            user: "app".into(),
            password: s,
        };
        assert!(!format!("{l:?}").contains("hunter22"));
    }

    #[test]
    fn passwords_in_free_text_are_hidden() {
        assert_eq!(
            scrub(
                "sample-flow --db postgres://postgres:SeCrEt99@127.0.0.1:5432/test --url amqp://u:p%40w@h/%2f"
            ),
            "sample-flow --db postgres://postgres:***@127.0.0.1:5432/test --url amqp://u:***@h/%2f"
        );
        assert_eq!(
            scrub("url = \"amqp://guest:SeCrEt99@host"),
            "url = \"amqp://guest:***@host"
        );
        for t in [
            "amqp://host:5672/%2f",
            "amqp://user@host",
            "no url at all",
            "x://",
        ] {
            assert_eq!(scrub(t), t);
        }
    }

    #[test]
    fn keyword_and_query_passwords_are_hidden() {
        assert_eq!(
            scrub("--db 'host=127.0.0.1 user=app password=pa55word dbname=test'"),
            "--db 'host=127.0.0.1 user=app password=*** dbname=test'"
        );
        assert_eq!(
            scrub("host=h password = 'two words' port=5432"),
            "host=h password = *** port=5432"
        );
        assert_eq!(
            scrub("postgres://app@h/test?sslmode=disable&password=pa55word&x=1"),
            "postgres://app@h/test?sslmode=disable&password=***&x=1"
        );
        assert_eq!(scrub("PASSWORD=abc"), "PASSWORD=***");
        // Not a key of its own.
        assert_eq!(scrub("mypassword=abc"), "mypassword=abc");
        assert_eq!(scrub("the password is long"), "the password is long");
        // Not ASCII around it: no slicing inside a character.
        assert_eq!(scrub("é password=€uro ü"), "é password=*** ü");
    }

    #[test]
    fn a_secret_is_scrubbed_in_its_percent_encoded_spellings_too() {
        // Issue 48, item 16: a flow handed `p@ss/word` as `p%40ss%2Fword` in OEMPUTX_URL
        // printed it so, and only the decoded spelling was masked.
        let _s = Secret::new("p@ss/word x");
        for (text, masked) in [
            (
                "retrying p%40ss%2Fword%20x@127.0.0.1",
                "retrying ***@127.0.0.1",
            ),
            ("lower p%40ss%2fword+x end", "lower *** end"),
            ("mixed p%40ss/word%20x", "mixed ***"),
            ("as is: 'p@ss/word x'", "as is: '***'"),
            (
                "in a url amqp://app:p@ss/word x@h/%2f",
                "in a url amqp://app:***@h/%2f",
            ),
            (
                "twice p%40ss%2Fword%20x and p@ss/word x",
                "twice *** and ***",
            ),
        ] {
            assert_eq!(scrub(text), masked, "{text}");
        }
        // Near misses stay.
        for text in ["p%40ss%2Fwor", "p%4", "%", "p%40ss%2Fword%2"] {
            assert_eq!(scrub(text), text);
        }
    }

    #[test]
    fn a_secret_made_anywhere_is_scrubbed_where_it_stands_bare() {
        let _t = Secret::new("s3cr3t-T0ken-42");
        assert_eq!(
            scrub("refused the login of user 's3cr3t-T0ken-42'"),
            "refused the login of user '***'"
        );
        // Public defaults and short values are masked in URLs only.
        let _g = Secret::new("guest");
        assert_eq!(scrub("user guest"), "user guest");
        assert_eq!(redact_url("amqp://bob:pw@h:x"), "amqp://bob:***@h:x");
    }
}

//! The reference flow's message processing, free of I/O so that it can be tested alone.
//!
//! The nodes follow the broker paper's production flow: check the request (well-formed XML
//! with one root and at least one field), transform its fields (trim, upper-case text, parse
//! numbers, a checksum), check the record (business rules), enrich it (counts per field name,
//! a summary), filter (route on whether the record carries amounts), and build the reply XML.
//! The database insert, the audit copy and the outputs are I/O and live in the engine.

use quick_xml::Reader;
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use std::collections::BTreeMap;

/// At most this many fields in one request: a guard against a runaway message.
pub const MAX_FIELDS: usize = 10_000;

/// Why a request was turned away; the reason goes back in an error reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("the request is not UTF-8 text")]
    NotText,
    #[error("the request is not well-formed XML: {0}")]
    NotXml(String),
    #[error("the request has no root element")]
    NoRoot,
    #[error("the request has text or a second element outside its root element")]
    OutsideRoot,
    #[error("the request has no fields (elements with text)")]
    NoFields,
    #[error("the request has more than {MAX_FIELDS} fields")]
    TooManyFields,
    #[error("field {0} holds a number that is not finite")]
    NotFinite(String),
    #[error("field {0} holds a negative amount")]
    Negative(String),
}

/// A request as the first check node leaves it: its root and its leaf fields in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub root: String,
    /// (path from the root, e.g. `SaleList/Invoice/Surname`, text).
    pub fields: Vec<(String, String)>,
}

/// Check node 1: the request is UTF-8, well-formed XML with one root, and has fields.
pub fn check_request(body: &[u8]) -> Result<Request, Invalid> {
    let text = std::str::from_utf8(body).map_err(|_| Invalid::NotText)?;
    let mut reader = Reader::from_str(text);
    let mut path: Vec<String> = Vec::new();
    // Text of the innermost open element, and whether it has child elements.
    let mut text_now = String::new();
    let mut has_child = false;
    let (mut root, mut fields) = (None::<String>, Vec::new());
    loop {
        let event = reader
            .read_event()
            .map_err(|e| Invalid::NotXml(e.to_string()))?;
        match event {
            Event::Start(e) => {
                if path.is_empty() && root.is_some() {
                    return Err(Invalid::OutsideRoot);
                }
                let name = e.name().as_ref().to_string();
                if path.is_empty() {
                    root = Some(name.clone());
                }
                path.push(name);
                text_now.clear();
                has_child = false;
            }
            Event::End(_) => {
                if !has_child && !text_now.trim().is_empty() {
                    if fields.len() >= MAX_FIELDS {
                        return Err(Invalid::TooManyFields);
                    }
                    fields.push((path[1..].join("/"), std::mem::take(&mut text_now)));
                }
                path.pop();
                text_now.clear();
                // The parent of the element just closed has a child.
                has_child = true;
            }
            Event::Empty(_) if path.is_empty() => return Err(Invalid::OutsideRoot),
            Event::Empty(_) => has_child = true,
            Event::Text(t) => {
                let s = t.xml10_content();
                if path.is_empty() {
                    if !s.trim().is_empty() {
                        return Err(Invalid::OutsideRoot);
                    }
                } else {
                    text_now.push_str(&s);
                }
            }
            Event::CData(t) => text_now.push_str(&t),
            Event::GeneralRef(r) => {
                // Entity references come as events of their own: a character reference,
                // or one of XML's five predefined entities.
                match r.resolve_char_ref() {
                    Ok(Some(c)) => text_now.push(c),
                    Ok(None) => {
                        let name: &str = &r;
                        let reference = format!("&{name};");
                        let resolved = quick_xml::escape::unescape(&reference)
                            .map_err(|e| Invalid::NotXml(e.to_string()))?;
                        text_now.push_str(&resolved);
                    }
                    Err(e) => return Err(Invalid::NotXml(e.to_string())),
                }
            }
            Event::Eof => break,
            // Declarations, comments, processing instructions, DOCTYPE: nothing to check.
            _ => {}
        }
    }
    if !path.is_empty() {
        return Err(Invalid::NotXml(format!(
            "element <{}> is not closed",
            path.join("/")
        )));
    }
    let root = root.ok_or(Invalid::NoRoot)?;
    if fields.is_empty() {
        return Err(Invalid::NoFields);
    }
    Ok(Request { root, fields })
}

/// A field's value after the transformation.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Number(f64),
    Text(String),
}

/// A request transformed into a record.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub root: String,
    pub fields: Vec<(String, Value)>,
    /// Sum of the numeric fields.
    pub total: f64,
    /// FNV-1a over the normalised fields: what the database row and the reply carry.
    pub checksum: u64,
}

/// Compute node 1: trim every field, read numbers as numbers, upper-case text, checksum.
pub fn transform(req: Request) -> Record {
    let mut total = 0.0;
    let mut hash = Fnv::new();
    let fields = req
        .fields
        .into_iter()
        .map(|(path, text)| {
            let t = text.trim();
            let value = match t.parse::<f64>() {
                Ok(n) => {
                    total += n;
                    Value::Number(n)
                }
                Err(_) => Value::Text(t.to_uppercase()),
            };
            hash.add(path.as_bytes());
            match &value {
                Value::Number(n) => hash.add(&n.to_bits().to_le_bytes()),
                Value::Text(s) => hash.add(s.as_bytes()),
            }
            (path, value)
        })
        .collect();
    Record {
        root: req.root,
        fields,
        total,
        checksum: hash.0,
    }
}

/// Check node 2: the business rules: amounts are finite and not negative.
pub fn check_record(r: &Record) -> Result<(), Invalid> {
    for (path, v) in &r.fields {
        if let Value::Number(n) = v {
            if !n.is_finite() {
                return Err(Invalid::NotFinite(path.clone()));
            }
            if *n < 0.0 {
                return Err(Invalid::Negative(path.clone()));
            }
        }
    }
    Ok(())
}

/// A record with what the enrich node derived.
#[derive(Debug, Clone, PartialEq)]
pub struct Enriched {
    pub record: Record,
    /// How many fields carry each leaf name (`Code`, `Price`, …).
    pub counts: BTreeMap<String, u32>,
    /// The first text field, as a short human label for the row.
    pub summary: String,
}

/// Compute node 2: counts per field name and a one-line summary.
pub fn enrich(record: Record) -> Enriched {
    let mut counts = BTreeMap::new();
    for (path, _) in &record.fields {
        let leaf = path.rsplit('/').next().unwrap_or(path);
        *counts.entry(leaf.to_string()).or_insert(0) += 1;
    }
    let first_text = record.fields.iter().find_map(|(_, v)| match v {
        Value::Text(s) => Some(s.as_str()),
        Value::Number(_) => None,
    });
    let summary = format!(
        "{} {} fields {}",
        record.root,
        record.fields.len(),
        first_text.unwrap_or("-")
    );
    Enriched {
        record,
        counts,
        summary,
    }
}

/// Where the filter node sends a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// It carries amounts: priced, and the reply says so.
    Priced,
    /// No numeric field at all.
    Unpriced,
}

impl Route {
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Priced => "PRICED",
            Route::Unpriced => "UNPRICED",
        }
    }
}

/// Filter node: route on whether the record has any numeric field.
pub fn filter(e: &Enriched) -> Route {
    if e.record
        .fields
        .iter()
        .any(|(_, v)| matches!(v, Value::Number(_)))
    {
        Route::Priced
    } else {
        Route::Unpriced
    }
}

/// Compute node 3: the reply XML, carrying the transformed fields and the derived figures.
pub fn build_reply(e: &Enriched, route: Route) -> Vec<u8> {
    let mut w = Writer::new(Vec::with_capacity(1024));
    // Writing into a Vec cannot fail; the results are ignored for that reason.
    let _ = w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)));
    let reply_root = format!("{}Reply", e.record.root);
    let _ = w.write_event(Event::Start(BytesStart::new(reply_root.as_str())));
    let leaf = |w: &mut Writer<Vec<u8>>, name: &str, text: &str| {
        let _ = w.write_event(Event::Start(BytesStart::new(name)));
        let _ = w.write_event(Event::Text(BytesText::new(text)));
        let _ = w.write_event(Event::End(BytesEnd::new(name)));
    };
    leaf(&mut w, "Status", "OK");
    leaf(&mut w, "Route", route.as_str());
    leaf(&mut w, "Fields", &e.record.fields.len().to_string());
    leaf(&mut w, "Total", &format!("{:.2}", e.record.total));
    leaf(&mut w, "Checksum", &format!("{:016x}", e.record.checksum));
    leaf(&mut w, "Summary", &e.summary);
    let _ = w.write_event(Event::Start(BytesStart::new("Values")));
    for (path, v) in &e.record.fields {
        let mut f = BytesStart::new("Field");
        f.push_attribute(("path", path.as_str()));
        let _ = w.write_event(Event::Start(f));
        let text = match v {
            Value::Number(n) => format!("{n}"),
            Value::Text(s) => s.clone(),
        };
        let _ = w.write_event(Event::Text(BytesText::new(&text)));
        let _ = w.write_event(Event::End(BytesEnd::new("Field")));
    }
    let _ = w.write_event(Event::End(BytesEnd::new("Values")));
    let _ = w.write_event(Event::End(BytesEnd::new(reply_root.as_str())));
    w.into_inner()
}

/// The reply to a request the flow turned away: the driver still gets an answer.
pub fn error_reply(why: &Invalid) -> Vec<u8> {
    let mut w = Writer::new(Vec::with_capacity(256));
    let _ = w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)));
    let _ = w.write_event(Event::Start(BytesStart::new("Error")));
    let _ = w.write_event(Event::Text(BytesText::new(&why.to_string())));
    let _ = w.write_event(Event::End(BytesEnd::new("Error")));
    w.into_inner()
}

/// 64-bit FNV-1a: tiny, stable across runs and platforms, good enough to spot a change.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn add(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SALE: &[u8] = include_bytes!("../../msgfiles/request-630.xml");

    #[test]
    fn the_sample_request_passes_every_node() {
        let req = check_request(SALE).expect("valid");
        assert_eq!(req.root, "SaleEnvelope");
        assert_eq!(req.fields[0], ("Header/SaleListCount".into(), "1".into()));
        assert!(
            req.fields
                .iter()
                .any(|(p, t)| p == "SaleList/Invoice/Surname" && t == "Braithwaite")
        );
        let rec = transform(req);
        // Numeric fields: count 1, codes 0+1+2+3, prices .30+.20, quantities 1+1, balance .50.
        assert!((rec.total - 10.0).abs() < 1e-9, "total {}", rec.total);
        check_record(&rec).expect("business rules");
        let e = enrich(rec);
        assert_eq!(e.counts.get("Code"), Some(&4));
        assert_eq!(e.summary, "SaleEnvelope 20 fields K");
        assert_eq!(filter(&e), Route::Priced);
        let reply = String::from_utf8(build_reply(&e, Route::Priced)).expect("utf8");
        assert!(reply.contains("<Total>10.00</Total>"), "{reply}");
        assert!(reply.contains(r#"<Field path="SaleList/Invoice/Surname">BRAITHWAITE</Field>"#));
        // The reply is itself a request the flow would accept.
        assert!(check_request(reply.as_bytes()).is_ok());
    }

    #[test]
    fn every_shipped_message_file_passes_the_flow() {
        // The msgfiles folder of the workspace, beside this crate.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../msgfiles");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).expect("msgfiles/") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "xml") {
                let body = std::fs::read(&path).expect("read");
                let rec = transform(check_request(&body).expect("valid XML request"));
                check_record(&rec).expect("business rules");
                seen += 1;
            }
        }
        assert!(
            seen >= 5,
            "the 64 B, 128 B, 630 B, 1 KiB and 4 KiB requests"
        );
    }

    #[test]
    fn the_checksum_follows_the_content() {
        let a = transform(check_request(b"<a><b>x</b></a>").expect("ok"));
        let b = transform(check_request(b"<a><b> X </b></a>").expect("ok"));
        let c = transform(check_request(b"<a><b>y</b></a>").expect("ok"));
        assert_eq!(a.checksum, b.checksum, "normalised the same");
        assert_ne!(a.checksum, c.checksum);
    }

    #[test]
    fn malformed_requests_are_turned_away_with_a_reason() {
        assert_eq!(check_request(&[0xff, 0xfe]), Err(Invalid::NotText));
        assert!(matches!(
            check_request(b"<a><b>x</a>"),
            Err(Invalid::NotXml(_))
        ));
        assert!(matches!(
            check_request(b"<a><b>x</b>"),
            Err(Invalid::NotXml(_))
        ));
        assert_eq!(check_request(b"plain text"), Err(Invalid::OutsideRoot));
        assert_eq!(check_request(b""), Err(Invalid::NoRoot));
        assert_eq!(check_request(b"<a><b/></a>"), Err(Invalid::NoFields));
        assert_eq!(
            check_request(b"<a><b>1</b></a><c>2</c>"),
            Err(Invalid::OutsideRoot)
        );
        let neg = transform(check_request(b"<a><p>-1.5</p></a>").expect("xml"));
        assert_eq!(check_record(&neg), Err(Invalid::Negative("p".into())));
        let err = String::from_utf8(error_reply(&Invalid::NoFields)).expect("utf8");
        assert!(err.contains("<Error>the request has no fields"), "{err}");
    }

    #[test]
    fn entities_are_resolved_and_escaped_again_in_the_reply() {
        let req = check_request(b"<a><n>Fish &amp; Chips &#65;</n></a>").expect("ok");
        assert_eq!(req.fields[0].1, "Fish & Chips A");
        let e = enrich(transform(req));
        assert_eq!(filter(&e), Route::Unpriced);
        let reply = String::from_utf8(build_reply(&e, Route::Unpriced)).expect("utf8");
        assert!(reply.contains("FISH &amp; CHIPS A"), "{reply}");
    }
}

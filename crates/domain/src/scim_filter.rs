//! The SCIM 2.0 `filter` grammar (RFC 7644 §3.4.2.2): a pure parser into a [`Filter`] tree and
//! an in-memory evaluator ([`Filter::matches`]) over SCIM resource JSON.
//!
//! The server translates the tree to SQL separately; [`Filter::matches`] exists so a handler can
//! filter in memory when it must, and so the semantics the SQL translation has to reproduce are
//! written down and tested in one place.
//!
//! # Grammar
//!
//! ```text
//! filter    = orExp
//! orExp     = andExp *("or" andExp)            ; "or" binds loosest
//! andExp    = unary *("and" unary)
//! unary     = "not" "(" orExp ")"              ; RFC: "not" always takes parentheses
//!           / "(" orExp ")"
//!           / attrPath "pr"
//!           / attrPath compareOp compValue
//!           / attrPath "[" orExp "]"            ; value path; never inside another one
//! compareOp = "eq" / "ne" / "co" / "sw" / "ew" / "gt" / "ge" / "lt" / "le"
//! compValue = "false" / "null" / "true" / JSON number / JSON string
//! attrPath  = [URI ":"] ATTRNAME ["." subAttr]
//! ATTRNAME  = ALPHA *(ALPHA / DIGIT / "-" / "_" / "$")  ; plus the RFC 7643 name "$ref"
//! ```
//!
//! Operators, logical keywords and the literals `true`/`false`/`null` are case-insensitive.
//! Tokens may be separated by any ASCII whitespace, and the separator may be left out where the
//! tokens cannot run together (`userName eq"x"`, `not(a pr)`): being lenient there costs no
//! ambiguity.
//! `and`/`or` chains associate to the left. Inside a value path (`emails[type eq "work"]`) the
//! attribute paths name sub-attributes of the multi-valued attribute, so they must be plain names.
//! A sub-attribute after a value path (`emails[type eq "work"].value`) is PATCH-path syntax
//! (RFC 7644 §3.5.2) and is refused here.
//!
//! # Limits
//!
//! A filter comes straight from a client, so parsing is bounded: at most [`MAX_LEN`] characters,
//! at most [`MAX_DEPTH`] levels of nesting (parentheses, `not`, value paths) and at most
//! [`MAX_COMPARISONS`] comparisons (`pr` included). The depth is checked *before* the parser
//! recurses, so a filter nested thousands deep is refused without growing the stack. Every
//! error is a [`FilterError`] whose detail names the problem and its position (a 1-based
//! character column), fit to return to the client with `scimType` `invalidFilter`.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;

use serde_json::Value as Json;

/// The longest filter accepted, in characters.
pub const MAX_LEN: usize = 4096;
/// The deepest nesting accepted; `not (…)`, `(…)` and `attr[…]` each add one level.
pub const MAX_DEPTH: usize = 32;
/// The most comparisons (`pr` included) one filter may hold.
pub const MAX_COMPARISONS: usize = 100;

/// A parsed SCIM filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    And(Box<Filter>, Box<Filter>),
    Or(Box<Filter>, Box<Filter>),
    Not(Box<Filter>),
    /// `path op value`.
    Compare {
        path: AttrPath,
        op: CompareOp,
        value: Value,
    },
    /// `path pr`.
    Present(AttrPath),
    /// `path[filter]`: some element of the multi-valued attribute `path` matches `filter`,
    /// whose attribute paths name sub-attributes of that element.
    ValuePath {
        path: AttrPath,
        filter: Box<Filter>,
    },
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompareOp {
    Eq,
    Ne,
    Co,
    Sw,
    Ew,
    Gt,
    Ge,
    Lt,
    Le,
}

impl CompareOp {
    pub const ALL: [CompareOp; 9] = [
        CompareOp::Eq,
        CompareOp::Ne,
        CompareOp::Co,
        CompareOp::Sw,
        CompareOp::Ew,
        CompareOp::Gt,
        CompareOp::Ge,
        CompareOp::Lt,
        CompareOp::Le,
    ];

    /// The operator as the RFC spells it (lower case).
    pub fn keyword(self) -> &'static str {
        match self {
            CompareOp::Eq => "eq",
            CompareOp::Ne => "ne",
            CompareOp::Co => "co",
            CompareOp::Sw => "sw",
            CompareOp::Ew => "ew",
            CompareOp::Gt => "gt",
            CompareOp::Ge => "ge",
            CompareOp::Lt => "lt",
            CompareOp::Le => "le",
        }
    }

    fn from_keyword(word: &str) -> Option<CompareOp> {
        CompareOp::ALL
            .into_iter()
            .find(|op| op.keyword().eq_ignore_ascii_case(word))
    }

    /// `gt`/`ge`/`lt`/`le`: RFC 7644 forbids them on booleans and null.
    fn is_ordering(self) -> bool {
        matches!(
            self,
            CompareOp::Gt | CompareOp::Ge | CompareOp::Lt | CompareOp::Le
        )
    }

    /// `co`/`sw`/`ew`: substring operators, meaningful on strings only.
    fn is_substring(self) -> bool {
        matches!(self, CompareOp::Co | CompareOp::Sw | CompareOp::Ew)
    }
}

/// An attribute path: `[uri:]attr[.sub]`.
///
/// Names keep the case the client wrote; SCIM attribute names are case-insensitive
/// (RFC 7643 §2.1), so consumers compare them ignoring ASCII case.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AttrPath {
    /// The schema URN prefix, e.g. `urn:ietf:params:scim:schemas:core:2.0:User`.
    pub uri: Option<String>,
    pub attr: String,
    pub sub: Option<String>,
}

impl fmt::Display for AttrPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(uri) = &self.uri {
            write!(f, "{uri}:")?;
        }
        f.write_str(&self.attr)?;
        if let Some(sub) = &self.sub {
            write!(f, ".{sub}")?;
        }
        Ok(())
    }
}

/// A comparison value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// The decoded JSON string.
    Str(String),
    /// A JSON number, validated and kept as written so the SQL translation can bind it without
    /// a round trip through `f64`.
    Num(String),
    Bool(bool),
    Null,
}

/// Why a filter was refused; `detail` is meant for the client (`scimType` `invalidFilter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError {
    pub detail: String,
}

impl FilterError {
    /// `pos` is a 0-based character index; messages show it 1-based, as an editor column would.
    fn at(pos: usize, what: impl fmt::Display) -> FilterError {
        FilterError {
            detail: format!("{what} at position {}", pos + 1),
        }
    }

    fn plain(what: impl Into<String>) -> FilterError {
        FilterError {
            detail: what.into(),
        }
    }
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid filter: {}", self.detail)
    }
}

impl std::error::Error for FilterError {}

/// Parses a SCIM filter (RFC 7644 §3.4.2.2) within the module's limits.
pub fn parse(input: &str) -> Result<Filter, FilterError> {
    parse_with(input, Limits::DEFAULT)
}

/// A PATCH operation's `path` (RFC 7644 §3.5.2): `attrPath` or `valuePath [subAttr]`, that is
/// `[uri:]attr[.sub]` or `[uri:]attr[filter][.sub]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchPath {
    /// The attribute; with a filter, `sub` is the sub-attribute written after the brackets.
    pub path: AttrPath,
    /// The value filter in brackets; its attribute paths name sub-attributes of one element.
    pub filter: Option<Filter>,
}

/// Parses a PATCH path (RFC 7644 §3.5.2) within the module's limits. The filter in brackets
/// follows the value-path rules of [`parse`]; nothing but `.sub` may follow the brackets, and no
/// whitespace may appear outside them.
pub fn parse_patch_path(input: &str) -> Result<PatchPath, FilterError> {
    if input.chars().nth(MAX_LEN).is_some() {
        return Err(FilterError::plain(format!(
            "path is too long (at most {MAX_LEN} characters)"
        )));
    }
    let Some(open) = input.find('[') else {
        return Ok(PatchPath {
            path: attr_path(input, 0)?,
            filter: None,
        });
    };
    let head = &input[..open];
    let path = attr_path(head, 0)?;
    let open_pos = head.chars().count();
    if path.sub.is_some() {
        return Err(FilterError::at(
            open_pos,
            format!(
                "a value path needs a multi-valued attribute, not the sub-attribute '{}'",
                clip(head)
            ),
        ));
    }
    let chars: Vec<char> = input[open..].chars().collect();
    let mut tokens = lex(&chars)?;
    for token in &mut tokens {
        token.pos += open_pos;
    }
    // The first token is the '[' that `find` located.
    let mut parser = Parser {
        tokens,
        idx: 1,
        end: open_pos + chars.len(),
        depth: 0,
        comparisons: 0,
        limits: Limits::DEFAULT,
    };
    parser.enter(open_pos)?;
    let filter = parser.or_expr(true)?;
    parser.close(Kind::RBracket, open_pos)?;
    parser.leave();
    let close_pos = parser.tokens[parser.idx - 1].pos;
    let sub = match parser.peek() {
        None => None,
        Some(tok) => {
            let sub = tok
                .word()
                .filter(|_| tok.pos == close_pos + 1 && parser.peek_at(1).is_none())
                .and_then(|w| w.strip_prefix('.'));
            match sub {
                Some(sub) if is_attr_name(sub) => Some(sub.to_owned()),
                Some(sub) => {
                    return Err(FilterError::at(
                        tok.pos + 1,
                        format!("invalid sub-attribute name '{}' after ']'", clip(sub)),
                    ))
                }
                None => {
                    return Err(FilterError::at(
                        tok.pos,
                        format!(
                            "expected the end of the path or '.' and a sub-attribute name after ']', found {}",
                            tok.describe()
                        ),
                    ))
                }
            }
        }
    };
    Ok(PatchPath {
        path: AttrPath { sub, ..path },
        filter: Some(filter),
    })
}

/// The parser's bounds; a separate value so tests can lift the length limit and prove the depth
/// guard on its own.
#[derive(Debug, Clone, Copy)]
struct Limits {
    max_len: usize,
    max_depth: usize,
    max_comparisons: usize,
}

impl Limits {
    const DEFAULT: Limits = Limits {
        max_len: MAX_LEN,
        max_depth: MAX_DEPTH,
        max_comparisons: MAX_COMPARISONS,
    };
}

fn parse_with(input: &str, limits: Limits) -> Result<Filter, FilterError> {
    // `nth` stops after max_len + 1 characters, so a huge input is not even scanned in full.
    if input.chars().nth(limits.max_len).is_some() {
        return Err(FilterError::plain(format!(
            "filter is too long (at most {} characters)",
            limits.max_len
        )));
    }
    let chars: Vec<char> = input.chars().collect();
    let tokens = lex(&chars)?;
    if tokens.is_empty() {
        return Err(FilterError::plain("empty filter"));
    }
    let mut parser = Parser {
        tokens,
        idx: 0,
        end: chars.len(),
        depth: 0,
        comparisons: 0,
        limits,
    };
    let filter = parser.or_expr(false)?;
    if let Some(tok) = parser.peek() {
        return Err(match tok.kind {
            Kind::RParen => FilterError::at(tok.pos, "unbalanced ')' with no matching '('"),
            Kind::RBracket => FilterError::at(tok.pos, "unbalanced ']' with no matching '['"),
            _ => FilterError::at(
                tok.pos,
                format!(
                    "expected 'and', 'or' or the end of the filter, found {}",
                    tok.describe()
                ),
            ),
        });
    }
    Ok(filter)
}

// ---------------------------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    LParen,
    RParen,
    LBracket,
    RBracket,
    /// An attribute path or a keyword; which one is the parser's call, by position.
    Word(String),
    Str(String),
    Num(String),
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    /// 0-based character index of the token's first character.
    pos: usize,
}

impl Token {
    fn describe(&self) -> String {
        match &self.kind {
            Kind::LParen => "'('".into(),
            Kind::RParen => "')'".into(),
            Kind::LBracket => "'['".into(),
            Kind::RBracket => "']'".into(),
            Kind::Word(w) => format!("'{}'", clip(w)),
            Kind::Str(_) => "a string".into(),
            Kind::Num(n) => format!("the number {}", clip(n)),
        }
    }

    fn word(&self) -> Option<&str> {
        match &self.kind {
            Kind::Word(w) => Some(w),
            _ => None,
        }
    }

    fn is_keyword(&self, keyword: &str) -> bool {
        self.word().is_some_and(|w| w.eq_ignore_ascii_case(keyword))
    }

    /// Whether the token could only be read as a comparison value.
    fn is_value(&self) -> bool {
        matches!(self.kind, Kind::Str(_) | Kind::Num(_))
            || ["true", "false", "null"]
                .iter()
                .any(|lit| self.is_keyword(lit))
    }
}

/// Echoes of client input in messages are bounded, so an error never carries a 4 KiB token.
fn clip(s: &str) -> Cow<'_, str> {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => Cow::Owned(format!("{}…", &s[..cut])),
        None => Cow::Borrowed(s),
    }
}

fn is_word_start(c: char) -> bool {
    // '.' and '_' start a word only so the parser can name the mistake (`].value`, `_x`)
    // instead of the lexer reporting a bare unexpected character.
    c.is_ascii_alphabetic() || matches!(c, '$' | '.' | '_')
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '$' | '.' | ':')
}

fn lex(chars: &[char]) -> Result<Vec<Token>, FilterError> {
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        let kind = match c {
            ' ' | '\t' | '\r' | '\n' => {
                i += 1;
                continue;
            }
            '(' => Kind::LParen,
            ')' => Kind::RParen,
            '[' => Kind::LBracket,
            ']' => Kind::RBracket,
            '"' => {
                let (s, next) = lex_string(chars, i)?;
                i = next;
                tokens.push(Token {
                    kind: Kind::Str(s),
                    pos: start,
                });
                continue;
            }
            '-' | '0'..='9' => {
                // Take the whole run, garbage included, so `1abc` is one bad number rather than
                // a number followed by a confusing word.
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '.' | '+' | '-'))
                {
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                if !is_json_number(&text) {
                    return Err(FilterError::at(
                        start,
                        format!("invalid number '{}'", clip(&text)),
                    ));
                }
                tokens.push(Token {
                    kind: Kind::Num(text),
                    pos: start,
                });
                continue;
            }
            c if is_word_start(c) => {
                while i < chars.len() && is_word_char(chars[i]) {
                    i += 1;
                }
                tokens.push(Token {
                    kind: Kind::Word(chars[start..i].iter().collect()),
                    pos: start,
                });
                continue;
            }
            '\'' => {
                return Err(FilterError::at(
                    i,
                    "unexpected character ''' (strings must be in double quotes)",
                ))
            }
            other => {
                return Err(FilterError::at(
                    i,
                    format!("unexpected character {other:?}"),
                ))
            }
        };
        tokens.push(Token { kind, pos: start });
        i += 1;
    }
    Ok(tokens)
}

/// Reads the JSON string whose opening quote is at `start`; returns it decoded and the index
/// after the closing quote.
fn lex_string(chars: &[char], start: usize) -> Result<(String, usize), FilterError> {
    let mut out = String::new();
    let mut i = start + 1;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(FilterError::at(start, "unterminated string starting"));
        };
        match c {
            '"' => return Ok((out, i + 1)),
            '\\' => {
                let Some(&esc) = chars.get(i + 1) else {
                    return Err(FilterError::at(start, "unterminated string starting"));
                };
                let plain = match esc {
                    '"' => Some('"'),
                    '\\' => Some('\\'),
                    '/' => Some('/'),
                    'b' => Some('\u{8}'),
                    'f' => Some('\u{c}'),
                    'n' => Some('\n'),
                    'r' => Some('\r'),
                    't' => Some('\t'),
                    'u' => None,
                    other => {
                        return Err(FilterError::at(
                            i,
                            format!("invalid escape '\\{other}' in string"),
                        ))
                    }
                };
                if let Some(ch) = plain {
                    out.push(ch);
                    i += 2;
                    continue;
                }
                let unit = hex4(chars, i)?;
                i += 6;
                let code = match unit {
                    0xD800..=0xDBFF => {
                        // JSON spells astral characters as a surrogate pair; a high surrogate
                        // without its low half is not a character.
                        let low = if chars.get(i) == Some(&'\\') && chars.get(i + 1) == Some(&'u') {
                            hex4(chars, i)?
                        } else {
                            0
                        };
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(FilterError::at(
                                i - 6,
                                "unpaired surrogate in '\\u' escape",
                            ));
                        }
                        i += 6;
                        0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    0xDC00..=0xDFFF => {
                        return Err(FilterError::at(i - 6, "unpaired surrogate in '\\u' escape"))
                    }
                    other => other,
                };
                // Surrogates were handled above, so every code here is a scalar value.
                match char::from_u32(code) {
                    Some(ch) => out.push(ch),
                    None => return Err(FilterError::at(i, "invalid '\\u' escape")),
                }
            }
            c if (c as u32) < 0x20 => {
                // JSON forbids raw control characters in strings; they are usually a
                // mangled client rather than intent.
                return Err(FilterError::at(
                    i,
                    "control character in string (use a '\\' escape)",
                ));
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
}

/// The four hex digits of the `\uXXXX` escape whose backslash is at `at`.
fn hex4(chars: &[char], at: usize) -> Result<u32, FilterError> {
    let digits = chars.get(at + 2..at + 6).unwrap_or(&[]);
    if digits.len() != 4 || !digits.iter().all(|c| c.is_ascii_hexdigit()) {
        return Err(FilterError::at(
            at,
            "'\\u' escape needs exactly four hex digits",
        ));
    }
    Ok(digits
        .iter()
        .fold(0, |acc, c| acc * 16 + c.to_digit(16).unwrap_or(0)))
}

/// JSON's number grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn is_json_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let from = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - from
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

// ---------------------------------------------------------------------------------------------
// Parser

struct Parser {
    tokens: Vec<Token>,
    idx: usize,
    /// Character count of the input: the position reported for "end of filter".
    end: usize,
    depth: usize,
    comparisons: usize,
    limits: Limits,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.idx)
    }

    fn peek_at(&self, ahead: usize) -> Option<&Token> {
        self.tokens.get(self.idx + ahead)
    }

    fn next_pos(&self) -> usize {
        self.peek().map_or(self.end, |t| t.pos)
    }

    fn found(&self) -> String {
        self.peek()
            .map_or_else(|| "the end of the filter".into(), Token::describe)
    }

    /// Takes one nesting level, refusing it *before* the caller recurses; that is what keeps a
    /// hostile `((((…` from ever reaching a deep stack.
    fn enter(&mut self, pos: usize) -> Result<(), FilterError> {
        if self.depth >= self.limits.max_depth {
            return Err(FilterError::at(
                pos,
                format!(
                    "filter is too deeply nested (at most {} levels)",
                    self.limits.max_depth
                ),
            ));
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    fn count_comparison(&mut self, pos: usize) -> Result<(), FilterError> {
        self.comparisons += 1;
        if self.comparisons > self.limits.max_comparisons {
            return Err(FilterError::at(
                pos,
                format!(
                    "too many comparisons (at most {})",
                    self.limits.max_comparisons
                ),
            ));
        }
        Ok(())
    }

    /// Consumes the closer of the group opened at `open_pos`, or says what came instead.
    fn close(&mut self, closer: Kind, open_pos: usize) -> Result<(), FilterError> {
        let (c, o) = if closer == Kind::RParen {
            (')', '(')
        } else {
            (']', '[')
        };
        match self.peek() {
            Some(t) if t.kind == closer => {
                self.idx += 1;
                Ok(())
            }
            None => Err(FilterError::at(
                open_pos,
                format!("missing '{c}' to close the '{o}'"),
            )),
            Some(t) => Err(FilterError::at(
                t.pos,
                format!(
                    "expected 'and', 'or' or '{c}' (closing the '{o}' at position {}), found {}",
                    open_pos + 1,
                    t.describe()
                ),
            )),
        }
    }

    /// `orExp`; loops rather than recursing, so a long chain costs no stack. Chains associate
    /// to the left.
    fn or_expr(&mut self, in_value_path: bool) -> Result<Filter, FilterError> {
        let mut left = self.and_expr(in_value_path)?;
        while self.peek().is_some_and(|t| t.is_keyword("or")) {
            self.idx += 1;
            let right = self.and_expr(in_value_path)?;
            left = Filter::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and_expr(&mut self, in_value_path: bool) -> Result<Filter, FilterError> {
        let mut left = self.unary(in_value_path)?;
        while self.peek().is_some_and(|t| t.is_keyword("and")) {
            self.idx += 1;
            let right = self.unary(in_value_path)?;
            left = Filter::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self, in_value_path: bool) -> Result<Filter, FilterError> {
        let Some(tok) = self.peek() else {
            return Err(FilterError::at(
                self.end,
                "expected an attribute path, '(' or 'not', found the end of the filter",
            ));
        };
        let pos = tok.pos;
        match &tok.kind {
            Kind::LParen => {
                self.enter(pos)?;
                self.idx += 1;
                let inner = self.or_expr(in_value_path)?;
                self.close(Kind::RParen, pos)?;
                self.leave();
                Ok(inner)
            }
            Kind::Word(w) if w.eq_ignore_ascii_case("not") => {
                let paren = self.peek_at(1).filter(|t| t.kind == Kind::LParen);
                let Some(paren_pos) = paren.map(|t| t.pos) else {
                    return Err(FilterError::at(
                        pos,
                        "'not' must be followed by a parenthesised filter, as in 'not (title pr)'",
                    ));
                };
                // `not (` is one level: the parentheses are part of the `not` syntax.
                self.enter(pos)?;
                self.idx += 2;
                let inner = self.or_expr(in_value_path)?;
                self.close(Kind::RParen, paren_pos)?;
                self.leave();
                Ok(Filter::Not(Box::new(inner)))
            }
            Kind::Word(w) if w.eq_ignore_ascii_case("and") || w.eq_ignore_ascii_case("or") => {
                Err(FilterError::at(
                    pos,
                    format!(
                        "expected an attribute path, '(' or 'not', found '{}'",
                        clip(w)
                    ),
                ))
            }
            Kind::Word(_) => self.attr_expr(in_value_path),
            _ => Err(FilterError::at(
                pos,
                format!(
                    "expected an attribute path, '(' or 'not', found {}",
                    tok.describe()
                ),
            )),
        }
    }

    /// An attribute path followed by `pr`, an operator and value, or a `[value filter]`.
    fn attr_expr(&mut self, in_value_path: bool) -> Result<Filter, FilterError> {
        let tok = &self.tokens[self.idx];
        let (pos, word) = (tok.pos, tok.word().unwrap_or_default().to_owned());
        let path = attr_path(&word, pos)?;
        if in_value_path && (path.uri.is_some() || path.sub.is_some()) {
            return Err(FilterError::at(
                pos,
                format!(
                    "inside a value filter '{}' must be a plain sub-attribute name",
                    clip(&word)
                ),
            ));
        }
        self.idx += 1;

        let Some(next) = self.peek() else {
            return Err(FilterError::at(
                self.end,
                format!("missing operator after '{}'", clip(&word)),
            ));
        };
        let next_pos = next.pos;
        match &next.kind {
            Kind::LBracket => {
                if in_value_path {
                    return Err(FilterError::at(
                        next_pos,
                        "a value path cannot appear inside another value path",
                    ));
                }
                if path.sub.is_some() {
                    return Err(FilterError::at(
                        next_pos,
                        format!(
                            "a value path needs a multi-valued attribute, not the sub-attribute '{}'",
                            clip(&word)
                        ),
                    ));
                }
                self.enter(next_pos)?;
                self.idx += 1;
                let inner = self.or_expr(true)?;
                self.close(Kind::RBracket, next_pos)?;
                self.leave();
                if let Some(t) = self
                    .peek()
                    .filter(|t| t.word().is_some_and(|w| w.starts_with('.')))
                {
                    return Err(FilterError::at(
                        t.pos,
                        "a sub-attribute after a value path (\"].sub\") is only allowed in PATCH paths, not in filters",
                    ));
                }
                Ok(Filter::ValuePath {
                    path,
                    filter: Box::new(inner),
                })
            }
            Kind::Word(op) if op.eq_ignore_ascii_case("pr") => {
                self.count_comparison(pos)?;
                self.idx += 1;
                if let Some(t) = self.peek().filter(|t| t.is_value()) {
                    return Err(FilterError::at(t.pos, "'pr' takes no value"));
                }
                Ok(Filter::Present(path))
            }
            Kind::Word(op) => {
                let Some(op) = CompareOp::from_keyword(op) else {
                    return Err(FilterError::at(
                        next_pos,
                        format!(
                            "unknown operator '{}' (expected eq, ne, co, sw, ew, gt, ge, lt, le or pr)",
                            clip(op)
                        ),
                    ));
                };
                self.count_comparison(pos)?;
                self.idx += 1;
                let value = self.value(op)?;
                Ok(Filter::Compare { path, op, value })
            }
            _ => Err(FilterError::at(
                next_pos,
                format!(
                    "expected an operator after '{}', found {}",
                    clip(&word),
                    next.describe()
                ),
            )),
        }
    }

    /// The value after `op`, checked against what `op` accepts.
    fn value(&mut self, op: CompareOp) -> Result<Value, FilterError> {
        let pos = self.next_pos();
        let value = match self.peek().map(|t| &t.kind) {
            Some(Kind::Str(s)) => Value::Str(s.clone()),
            Some(Kind::Num(n)) => Value::Num(n.clone()),
            Some(Kind::Word(w)) if w.eq_ignore_ascii_case("true") => Value::Bool(true),
            Some(Kind::Word(w)) if w.eq_ignore_ascii_case("false") => Value::Bool(false),
            Some(Kind::Word(w)) if w.eq_ignore_ascii_case("null") => Value::Null,
            Some(Kind::Word(w)) => {
                return Err(FilterError::at(
                    pos,
                    format!(
                        "invalid value '{}' after '{}' (strings must be in double quotes)",
                        clip(w),
                        op.keyword()
                    ),
                ))
            }
            _ => {
                return Err(FilterError::at(
                    pos,
                    format!(
                        "missing value after '{}', found {}",
                        op.keyword(),
                        self.found()
                    ),
                ))
            }
        };
        if op.is_ordering() && matches!(value, Value::Bool(_) | Value::Null) {
            return Err(FilterError::at(
                pos,
                format!("'{}' cannot compare with a boolean or null", op.keyword()),
            ));
        }
        if op.is_substring() && !matches!(value, Value::Str(_)) {
            return Err(FilterError::at(
                pos,
                format!("'{}' needs a string value", op.keyword()),
            ));
        }
        self.idx += 1;
        Ok(value)
    }
}

/// Splits and validates `[uri:]attr[.sub]`. The last ':' separates the URN from the attribute,
/// since URNs contain ':' themselves (and '.', as in `2.0`, which is why the split comes first).
fn attr_path(word: &str, pos: usize) -> Result<AttrPath, FilterError> {
    let bad = |why: &str| {
        FilterError::at(
            pos,
            format!("invalid attribute path '{}': {why}", clip(word)),
        )
    };
    let (uri, rest) = match word.rfind(':') {
        Some(i) => (Some(&word[..i]), &word[i + 1..]),
        None => (None, word),
    };
    if let Some(uri) = uri {
        // `urn:<NID>:<NSS>` at least, with no empty segment.
        let segments: Vec<&str> = uri.split(':').collect();
        let is_urn = segments.len() >= 3
            && segments[0].eq_ignore_ascii_case("urn")
            && segments.iter().all(|s| !s.is_empty());
        if !is_urn {
            return Err(bad(
                "a schema prefix must be a URN such as 'urn:ietf:params:scim:schemas:core:2.0:User'",
            ));
        }
        if rest.is_empty() {
            return Err(bad("no attribute name after the schema URN"));
        }
    }
    let (attr, sub) = match rest.split_once('.') {
        Some((attr, sub)) => (attr, Some(sub)),
        None => (rest, None),
    };
    if !is_attr_name(attr) {
        return Err(bad(
            "an attribute name starts with a letter and holds letters, digits, '-', '_' or '$'",
        ));
    }
    if let Some(sub) = sub {
        if sub.contains('.') {
            return Err(bad("at most one sub-attribute level is allowed"));
        }
        if !is_attr_name(sub) {
            return Err(bad(
                "a sub-attribute name starts with a letter and holds letters, digits, '-', '_' or '$'",
            ));
        }
    }
    Ok(AttrPath {
        uri: uri.map(str::to_owned),
        attr: attr.to_owned(),
        sub: sub.map(str::to_owned),
    })
}

/// `ALPHA *(ALPHA / DIGIT / "-" / "_" / "$")`, plus `$ref`, which RFC 7643 defines for
/// reference sub-attributes (`members.$ref`) although it does not start with a letter.
fn is_attr_name(s: &str) -> bool {
    if s.eq_ignore_ascii_case("$ref") {
        return true;
    }
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '$'))
}

// ---------------------------------------------------------------------------------------------
// Evaluation

impl Filter {
    /// Whether `resource` (a SCIM resource as JSON) satisfies the filter.
    ///
    /// Semantics, which the SQL translation must reproduce:
    /// - attribute names match ignoring ASCII case (RFC 7643 §2.1); an attribute with a schema
    ///   URN is looked up under the resource's key of that URN when there is one (extension
    ///   schemas), else at the top level (core schema attributes are top-level);
    /// - string `eq`/`ne`/`co`/`sw`/`ew`/ordering ignore case, except on `id` and `externalId`,
    ///   which are caseExact; two RFC 3339 date-times compare as the instants they name;
    ///   numbers compare numerically; a value of another JSON type than the filter value
    ///   never satisfies `eq` (and so always satisfies `ne`) nor any ordering;
    /// - multi-valued attributes (arrays, including `emails.value` across the elements) match
    ///   when any element matches; an element that is an object, compared without a
    ///   sub-attribute, stands for its `value` sub-attribute (`emails co "x"`);
    /// - an absent attribute, `null` and `[]` are the same state (RFC 7643 §2.5), so they
    ///   satisfy `eq null` and `ne "x"`;
    /// - `pr` holds when the attribute has a non-null, non-empty value;
    /// - `attr[f]` holds when some single element of `attr` satisfies `f` on its own, which is
    ///   the point of value paths: `emails[type eq "work" and value co "@x"]` never pairs the
    ///   type of one email with the value of another.
    pub fn matches(&self, resource: &Json) -> bool {
        match self {
            Filter::And(a, b) => a.matches(resource) && b.matches(resource),
            Filter::Or(a, b) => a.matches(resource) || b.matches(resource),
            Filter::Not(f) => !f.matches(resource),
            Filter::Present(path) => candidates(resource, path).into_iter().any(is_present),
            Filter::Compare { path, op, value } => {
                let exact = is_case_exact(path);
                let found = candidates(resource, path);
                if found.is_empty() {
                    compare(&Json::Null, *op, value, exact)
                } else {
                    found.into_iter().any(|c| compare(c, *op, value, exact))
                }
            }
            Filter::ValuePath { path, filter } => {
                let Some(attr) = lookup(resource, path) else {
                    return false;
                };
                match attr {
                    Json::Array(elements) => elements.iter().any(|e| filter.matches(e)),
                    // A single complex value is a one-element collection.
                    Json::Object(_) => filter.matches(attr),
                    _ => false,
                }
            }
        }
    }
}

/// RFC 7643 marks `id` and `externalId` caseExact; everything else is treated as
/// caseExact=false here.
fn is_case_exact(path: &AttrPath) -> bool {
    path.sub.is_none()
        && (path.attr.eq_ignore_ascii_case("id") || path.attr.eq_ignore_ascii_case("externalId"))
}

fn get_ci<'a>(value: &'a Json, key: &str) -> Option<&'a Json> {
    let map = value.as_object()?;
    map.get(key).or_else(|| {
        map.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

/// The value of `path.attr`, inside the extension object named by `path.uri` when the resource
/// has one.
fn lookup<'a>(resource: &'a Json, path: &AttrPath) -> Option<&'a Json> {
    let base = path
        .uri
        .as_deref()
        .and_then(|uri| get_ci(resource, uri))
        .filter(|ext| ext.is_object())
        .unwrap_or(resource);
    get_ci(base, &path.attr)
}

/// Every value `path` reaches, arrays flattened one level.
fn candidates<'a>(resource: &'a Json, path: &AttrPath) -> Vec<&'a Json> {
    let mut out = Vec::new();
    let Some(attr) = lookup(resource, path) else {
        return out;
    };
    let flat = |out: &mut Vec<&'a Json>, v: &'a Json| match v {
        Json::Array(items) => out.extend(items),
        other => out.push(other),
    };
    match &path.sub {
        None => flat(&mut out, attr),
        Some(sub) => match attr {
            Json::Array(items) => {
                for v in items.iter().filter_map(|item| get_ci(item, sub)) {
                    flat(&mut out, v);
                }
            }
            other => {
                if let Some(v) = get_ci(other, sub) {
                    flat(&mut out, v);
                }
            }
        },
    }
    out
}

fn is_present(v: &Json) -> bool {
    match v {
        Json::Null => false,
        Json::String(s) => !s.is_empty(),
        Json::Array(items) => items.iter().any(is_present),
        Json::Object(map) => map.values().any(is_present),
        Json::Bool(_) | Json::Number(_) => true,
    }
}

fn fold(s: &str, exact: bool) -> Cow<'_, str> {
    if exact {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(s.to_lowercase())
    }
}

fn compare(candidate: &Json, op: CompareOp, value: &Value, exact: bool) -> bool {
    // A complex element compared as a whole stands for its `value` sub-attribute; one without
    // `value` stays an object, which equals nothing (so `name eq null` is false when `name` is
    // present, as it must be).
    let candidate = match candidate {
        Json::Object(_) => get_ci(candidate, "value").unwrap_or(candidate),
        other => other,
    };
    match op {
        CompareOp::Eq => equal(candidate, value, exact),
        CompareOp::Ne => !equal(candidate, value, exact),
        CompareOp::Co | CompareOp::Sw | CompareOp::Ew => {
            let (Json::String(have), Value::Str(want)) = (candidate, value) else {
                return false;
            };
            let (have, want) = (fold(have, exact), fold(want, exact));
            match op {
                CompareOp::Co => have.contains(want.as_ref()),
                CompareOp::Sw => have.starts_with(want.as_ref()),
                _ => have.ends_with(want.as_ref()),
            }
        }
        CompareOp::Gt | CompareOp::Ge | CompareOp::Lt | CompareOp::Le => {
            let Some(ord) = order(candidate, value, exact) else {
                return false;
            };
            match op {
                CompareOp::Gt => ord == Ordering::Greater,
                CompareOp::Ge => ord != Ordering::Less,
                CompareOp::Lt => ord == Ordering::Less,
                _ => ord != Ordering::Greater,
            }
        }
    }
}

fn num(text: &str) -> Option<f64> {
    text.parse::<f64>().ok()
}

/// Both strings as RFC 3339 date-times, when both are: SCIM `dateTime` values compare as the
/// instants they name (`…T01:00:00+01:00` equals `…T00:00:00Z`), as the SQL translation does.
fn instants(have: &str, want: &str) -> Option<(time::OffsetDateTime, time::OffsetDateTime)> {
    let parse = |s: &str| {
        time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()
    };
    Some((parse(have)?, parse(want)?))
}

fn equal(candidate: &Json, value: &Value, exact: bool) -> bool {
    match (candidate, value) {
        (Json::String(have), Value::Str(want)) => match instants(have, want) {
            Some((h, w)) => h == w,
            None => fold(have, exact) == fold(want, exact),
        },
        (Json::Number(have), Value::Num(want)) => {
            have.as_f64().is_some_and(|h| num(want) == Some(h))
        }
        (Json::Bool(have), Value::Bool(want)) => have == want,
        (Json::Null, Value::Null) => true,
        _ => false,
    }
}

/// How `candidate` orders against `value`, when both are strings or both numbers.
fn order(candidate: &Json, value: &Value, exact: bool) -> Option<Ordering> {
    match (candidate, value) {
        (Json::String(have), Value::Str(want)) => Some(match instants(have, want) {
            Some((h, w)) => h.cmp(&w),
            None => fold(have, exact).cmp(&fold(want, exact)),
        }),
        (Json::Number(have), Value::Num(want)) => have.as_f64()?.partial_cmp(&num(want)?),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const USER: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
    const ENTERPRISE: &str = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";

    fn path(text: &str) -> AttrPath {
        attr_path(text, 0).expect("test path is valid")
    }

    #[test]
    fn date_times_compare_as_instants() {
        let r = json!({"meta": {"created": "2022-01-01T00:00:00Z"}});
        for (f, want) in [
            (r#"meta.created eq "2022-01-01T01:00:00+01:00""#, true),
            (r#"meta.created eq "2022-01-01T00:00:00.000Z""#, true),
            (r#"meta.created gt "2021-12-31T23:59:59.999Z""#, true),
            (r#"meta.created lt "2021-12-31T20:00:00-05:00""#, true),
            (r#"meta.created lt "2021-12-31T18:00:00-05:00""#, false),
        ] {
            assert_eq!(parse(f).unwrap().matches(&r), want, "{f}");
        }
    }
    fn cmp(p: &str, op: CompareOp, value: Value) -> Filter {
        Filter::Compare {
            path: path(p),
            op,
            value,
        }
    }
    fn s(v: &str) -> Value {
        Value::Str(v.into())
    }
    fn n(v: &str) -> Value {
        Value::Num(v.into())
    }
    fn pr(p: &str) -> Filter {
        Filter::Present(path(p))
    }
    fn and(a: Filter, b: Filter) -> Filter {
        Filter::And(Box::new(a), Box::new(b))
    }
    fn or(a: Filter, b: Filter) -> Filter {
        Filter::Or(Box::new(a), Box::new(b))
    }
    fn not(a: Filter) -> Filter {
        Filter::Not(Box::new(a))
    }
    fn vp(p: &str, f: Filter) -> Filter {
        Filter::ValuePath {
            path: path(p),
            filter: Box::new(f),
        }
    }

    use CompareOp::*;

    #[test]
    fn parses_valid_filters() {
        let uri_user_name = format!(r#"{USER}:userName sw "J""#);
        let schemas_eq = format!(r#"schemas eq "{ENTERPRISE}""#);
        let uri_emails = format!(r#"{USER}:emails[type eq "work"]"#);
        let uri_manager = format!(r#"{ENTERPRISE}:manager.value eq "26118915""#);
        let cases: Vec<(&str, Filter)> = vec![
            // RFC 7644 §3.4.2.2 examples.
            (
                r#"userName eq "bjensen""#,
                cmp("userName", Eq, s("bjensen")),
            ),
            (
                r#"name.familyName co "O'Malley""#,
                cmp("name.familyName", Co, s("O'Malley")),
            ),
            (r#"userName sw "J""#, cmp("userName", Sw, s("J"))),
            (
                &uri_user_name,
                Filter::Compare {
                    path: AttrPath {
                        uri: Some(USER.into()),
                        attr: "userName".into(),
                        sub: None,
                    },
                    op: Sw,
                    value: s("J"),
                },
            ),
            ("title pr", pr("title")),
            (
                r#"meta.lastModified gt "2011-05-13T04:42:34Z""#,
                cmp("meta.lastModified", Gt, s("2011-05-13T04:42:34Z")),
            ),
            (
                r#"meta.lastModified ge "2011-05-13T04:42:34Z""#,
                cmp("meta.lastModified", Ge, s("2011-05-13T04:42:34Z")),
            ),
            (
                r#"meta.lastModified lt "2011-05-13T04:42:34Z""#,
                cmp("meta.lastModified", Lt, s("2011-05-13T04:42:34Z")),
            ),
            (
                r#"meta.lastModified le "2011-05-13T04:42:34Z""#,
                cmp("meta.lastModified", Le, s("2011-05-13T04:42:34Z")),
            ),
            (
                r#"title pr and userType eq "Employee""#,
                and(pr("title"), cmp("userType", Eq, s("Employee"))),
            ),
            (
                r#"title pr or userType eq "Intern""#,
                or(pr("title"), cmp("userType", Eq, s("Intern"))),
            ),
            (&schemas_eq, cmp("schemas", Eq, s(ENTERPRISE))),
            (
                r#"userType eq "Employee" and (emails co "example.com" or emails.value co "example.org")"#,
                and(
                    cmp("userType", Eq, s("Employee")),
                    or(
                        cmp("emails", Co, s("example.com")),
                        cmp("emails.value", Co, s("example.org")),
                    ),
                ),
            ),
            (
                r#"userType ne "Employee" and not (emails co "example.com" or emails.value co "example.org")"#,
                and(
                    cmp("userType", Ne, s("Employee")),
                    not(or(
                        cmp("emails", Co, s("example.com")),
                        cmp("emails.value", Co, s("example.org")),
                    )),
                ),
            ),
            (
                r#"userType eq "Employee" and (emails.type eq "work")"#,
                and(
                    cmp("userType", Eq, s("Employee")),
                    cmp("emails.type", Eq, s("work")),
                ),
            ),
            (
                r#"userType eq "Employee" and emails[type eq "work" and value co "@example.com"]"#,
                and(
                    cmp("userType", Eq, s("Employee")),
                    vp(
                        "emails",
                        and(
                            cmp("type", Eq, s("work")),
                            cmp("value", Co, s("@example.com")),
                        ),
                    ),
                ),
            ),
            (
                r#"emails[type eq "work" and value co "@example.com"] or ims[type eq "xmpp" and value co "@foo.com"]"#,
                or(
                    vp(
                        "emails",
                        and(
                            cmp("type", Eq, s("work")),
                            cmp("value", Co, s("@example.com")),
                        ),
                    ),
                    vp(
                        "ims",
                        and(cmp("type", Eq, s("xmpp")), cmp("value", Co, s("@foo.com"))),
                    ),
                ),
            ),
            // Precedence and grouping.
            (
                "a eq 1 or b eq 2 and c eq 3",
                or(
                    cmp("a", Eq, n("1")),
                    and(cmp("b", Eq, n("2")), cmp("c", Eq, n("3"))),
                ),
            ),
            (
                "a eq 1 and b eq 2 or c eq 3",
                or(
                    and(cmp("a", Eq, n("1")), cmp("b", Eq, n("2"))),
                    cmp("c", Eq, n("3")),
                ),
            ),
            ("not (a pr) and b pr", and(not(pr("a")), pr("b"))),
            ("b pr or not (a pr)", or(pr("b"), not(pr("a")))),
            (
                "(a eq 1 or b eq 2) and c eq 3",
                and(
                    or(cmp("a", Eq, n("1")), cmp("b", Eq, n("2"))),
                    cmp("c", Eq, n("3")),
                ),
            ),
            ("a pr or b pr or c pr", or(or(pr("a"), pr("b")), pr("c"))),
            (
                "a pr and b pr and c pr",
                and(and(pr("a"), pr("b")), pr("c")),
            ),
            ("not (a pr or b pr)", not(or(pr("a"), pr("b")))),
            ("not (not (a pr))", not(not(pr("a")))),
            ("((a pr))", pr("a")),
            (
                r#"x eq "a" or (y eq "b" and not (z pr))"#,
                or(
                    cmp("x", Eq, s("a")),
                    and(cmp("y", Eq, s("b")), not(pr("z"))),
                ),
            ),
            // Case-insensitive keywords; attribute names keep their case.
            ("USERNAME EQ \"x\"", cmp("USERNAME", Eq, s("x"))),
            ("title PR", pr("title")),
            ("a pr And b Pr OR c pR", or(and(pr("a"), pr("b")), pr("c"))),
            ("NOT (a pr)", not(pr("a"))),
            ("Not(a pr)", not(pr("a"))),
            ("a Ne 1", cmp("a", Ne, n("1"))),
            ("a cO \"x\"", cmp("a", Co, s("x"))),
            ("a EW \"x\"", cmp("a", Ew, s("x"))),
            // Literals.
            ("active eq true", cmp("active", Eq, Value::Bool(true))),
            ("active eq FALSE", cmp("active", Eq, Value::Bool(false))),
            ("manager eq Null", cmp("manager", Eq, Value::Null)),
            ("manager ne null", cmp("manager", Ne, Value::Null)),
            // Numbers, kept as written.
            ("loginCount eq 0", cmp("loginCount", Eq, n("0"))),
            ("loginCount gt -1.5e3", cmp("loginCount", Gt, n("-1.5e3"))),
            ("loginCount le 1E+2", cmp("loginCount", Le, n("1E+2"))),
            ("loginCount lt 0.25", cmp("loginCount", Lt, n("0.25"))),
            // JSON strings and escapes.
            (r#"a eq """#, cmp("a", Eq, s(""))),
            (
                r#"a eq "he said \"hi\"""#,
                cmp("a", Eq, s("he said \"hi\"")),
            ),
            (r#"a eq "back\\slash""#, cmp("a", Eq, s("back\\slash"))),
            (
                r#"a eq "line\nbreak\t\/""#,
                cmp("a", Eq, s("line\nbreak\t/")),
            ),
            (r#"a eq "caf\u00e9""#, cmp("a", Eq, s("café"))),
            (r#"a eq "\ud83d\ude00""#, cmp("a", Eq, s("😀"))),
            (r#"a eq "héllo wörld""#, cmp("a", Eq, s("héllo wörld"))),
            (
                r#"a eq "(not) [pr] and or""#,
                cmp("a", Eq, s("(not) [pr] and or")),
            ),
            // Value filters.
            (
                r#"emails[not (type eq "work")]"#,
                vp("emails", not(cmp("type", Eq, s("work")))),
            ),
            (
                r#"emails[(type eq "work" or type eq "home") and primary eq true]"#,
                vp(
                    "emails",
                    and(
                        or(cmp("type", Eq, s("work")), cmp("type", Eq, s("home"))),
                        cmp("primary", Eq, Value::Bool(true)),
                    ),
                ),
            ),
            ("emails[value pr]", vp("emails", pr("value"))),
            (
                &uri_emails,
                Filter::ValuePath {
                    path: AttrPath {
                        uri: Some(USER.into()),
                        attr: "emails".into(),
                        sub: None,
                    },
                    filter: Box::new(cmp("type", Eq, s("work"))),
                },
            ),
            // URN prefixes: the last ':' separates the attribute, '.' the sub-attribute.
            (
                &uri_manager,
                Filter::Compare {
                    path: AttrPath {
                        uri: Some(ENTERPRISE.into()),
                        attr: "manager".into(),
                        sub: Some("value".into()),
                    },
                    op: Eq,
                    value: s("26118915"),
                },
            ),
            // Names and whitespace.
            ("a-b_c$d9 pr", pr("a-b_c$d9")),
            ("members.$ref pr", pr("members.$ref")),
            ("  ( a pr )  ", pr("a")),
            ("a\tpr\nand\r\nb pr", and(pr("a"), pr("b"))),
            ("userName eq\"x\"", cmp("userName", Eq, s("x"))),
        ];
        assert!(cases.len() >= 40, "{} cases", cases.len());
        for (input, want) in cases {
            assert_eq!(parse(input), Ok(want), "input: {input}");
        }
    }

    #[test]
    fn splits_attribute_paths() {
        let cases = [
            ("userName", None, "userName", None),
            ("name.givenName", None, "name", Some("givenName")),
            ("emails.value", None, "emails", Some("value")),
            (
                "urn:ietf:params:scim:schemas:core:2.0:User:userName",
                Some(USER),
                "userName",
                None,
            ),
            (
                "urn:ietf:params:scim:schemas:core:2.0:User:name.givenName",
                Some(USER),
                "name",
                Some("givenName"),
            ),
        ];
        for (text, uri, attr, sub) in cases {
            let want = AttrPath {
                uri: uri.map(Into::into),
                attr: attr.into(),
                sub: sub.map(Into::into),
            };
            assert_eq!(attr_path(text, 0), Ok(want.clone()), "{text}");
            assert_eq!(want.to_string(), text);
        }
    }

    #[test]
    fn refuses_invalid_filters() {
        let uri_no_attr = format!("{USER}: pr");
        let uri_in_value_path = format!("emails[{USER}:value pr]");
        let too_long = format!("a eq \"{}\"", "x".repeat(MAX_LEN));
        let many = vec!["a pr"; MAX_COMPARISONS + 1].join(" or ");
        let deep = format!(
            "{}a pr{}",
            "(".repeat(MAX_DEPTH + 1),
            ")".repeat(MAX_DEPTH + 1)
        );
        let cases: Vec<(&str, &str)> = vec![
            ("", "empty filter"),
            ("   \t ", "empty filter"),
            (r#"userName xx "a""#, "unknown operator 'xx' (expected eq, ne, co, sw, ew, gt, ge, lt, le or pr) at position 10"),
            ("userName eq", "missing value after 'eq', found the end of the filter at position 12"),
            ("userName eq )", "missing value after 'eq', found ')' at position 13"),
            ("userName eq foo", "invalid value 'foo' after 'eq' (strings must be in double quotes)"),
            ("userName eq 'x'", "strings must be in double quotes) at position 13"),
            ("userName", "missing operator after 'userName' at position 9"),
            ("userName \"x\"", "expected an operator after 'userName', found a string at position 10"),
            (r#"userName eq "abc"#, "unterminated string starting at position 13"),
            (r#"userName eq "abc\"#, "unterminated string starting at position 13"),
            ("(userName pr", "missing ')' to close the '(' at position 1"),
            ("not (a pr", "missing ')' to close the '(' at position 5"),
            ("((a pr)", "missing ')' to close the '(' at position 1"),
            ("(a pr b pr)", "expected 'and', 'or' or ')' (closing the '(' at position 1), found 'b' at position 7"),
            ("userName pr)", "unbalanced ')' with no matching '(' at position 12"),
            (r#"emails[type eq "work""#, "missing ']' to close the '[' at position 7"),
            (r#"emails[type eq "work")"#, "expected 'and', 'or' or ']'"),
            ("userName pr]", "unbalanced ']' with no matching '[' at position 12"),
            (r#"userName eq "a" title pr"#, "expected 'and', 'or' or the end of the filter, found 'title' at position 17"),
            (r#"not userName eq "a""#, "'not' must be followed by a parenthesised filter, as in 'not (title pr)' at position 1"),
            ("not", "'not' must be followed by a parenthesised filter"),
            (r#"emails[addresses[type eq "work"]]"#, "a value path cannot appear inside another value path at position 17"),
            (r#"emails[type eq "work"].value eq "x""#, "only allowed in PATCH paths, not in filters at position 23"),
            (r#"title pr "x""#, "'pr' takes no value at position 10"),
            ("title pr 3", "'pr' takes no value"),
            ("title pr true", "'pr' takes no value"),
            ("a gt true", "'gt' cannot compare with a boolean or null at position 6"),
            ("a GE false", "'ge' cannot compare with a boolean or null"),
            ("a lt null", "'lt' cannot compare with a boolean or null"),
            ("a le NULL", "'le' cannot compare with a boolean or null"),
            ("a co 1", "'co' needs a string value at position 6"),
            ("a sw true", "'sw' needs a string value"),
            ("a ew null", "'ew' needs a string value"),
            ("a eq 01", "invalid number '01' at position 6"),
            ("a eq 1.", "invalid number '1.'"),
            ("a eq -", "invalid number '-'"),
            ("a eq 1e", "invalid number '1e'"),
            ("a eq 12abc", "invalid number '12abc'"),
            (r#"a eq "\x""#, "invalid escape '\\x' in string at position 7"),
            (r#"a eq "\u12""#, "'\\u' escape needs exactly four hex digits at position 7"),
            (r#"a eq "\ud800""#, "unpaired surrogate in '\\u' escape at position 7"),
            (r#"a eq "\ud800\u0041""#, "unpaired surrogate"),
            (r#"a eq "\udc00""#, "unpaired surrogate"),
            ("a eq \"x\u{1}\"", "control character in string"),
            ("a pr and", "expected an attribute path, '(' or 'not', found the end of the filter at position 9"),
            ("a pr or", "found the end of the filter"),
            ("and a pr", "expected an attribute path, '(' or 'not', found 'and' at position 1"),
            ("a pr and or b pr", "found 'or' at position 10"),
            ("()", "expected an attribute path, '(' or 'not', found ')' at position 2"),
            ("a eq 1 and \"x\"", "found a string at position 12"),
            ("na!me pr", "unexpected character '!' at position 3"),
            ("name.given.family pr", "at most one sub-attribute level is allowed"),
            ("name. pr", "a sub-attribute name starts with a letter"),
            ("_name pr", "an attribute name starts with a letter"),
            ("foo:bar pr", "a schema prefix must be a URN"),
            ("urn::x:bar pr", "a schema prefix must be a URN"),
            (&uri_no_attr, "no attribute name after the schema URN"),
            (r#"name.givenName[value eq "x"]"#, "a value path needs a multi-valued attribute"),
            ("emails[value.x eq 1]", "inside a value filter 'value.x' must be a plain sub-attribute name"),
            (&uri_in_value_path, "must be a plain sub-attribute name"),
            (&too_long, "filter is too long (at most 4096 characters)"),
            (&many, "too many comparisons (at most 100) at position 801"),
            (&deep, "filter is too deeply nested (at most 32 levels) at position 33"),
        ];
        assert!(cases.len() >= 20);
        for (input, want) in cases {
            match parse(input) {
                Ok(f) => panic!("{input:?} parsed as {f:?}, expected an error containing {want:?}"),
                Err(e) => assert!(
                    e.detail.contains(want),
                    "{input:?}: got {:?}, expected it to contain {want:?}",
                    e.detail
                ),
            }
        }
    }

    #[test]
    fn limits_are_inclusive() {
        let max_len = format!("a eq \"{}\"", "x".repeat(MAX_LEN - 7));
        assert_eq!(max_len.chars().count(), MAX_LEN);
        assert!(parse(&max_len).is_ok());

        let many = vec!["a pr"; MAX_COMPARISONS].join(" or ");
        assert!(parse(&many).is_ok());

        let deep = format!("{}a pr{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert_eq!(parse(&deep), Ok(pr("a")));

        // Every kind of nesting counts towards the same budget.
        let mixed = format!(
            "{}emails[{}value pr{}]{}",
            "not (".repeat(MAX_DEPTH / 2),
            "(".repeat(MAX_DEPTH / 2 - 1),
            ")".repeat(MAX_DEPTH / 2 - 1),
            ")".repeat(MAX_DEPTH / 2),
        );
        assert!(parse(&mixed).is_ok());
        let too_mixed = format!(
            "{}emails[{}value pr{}]{}",
            "not (".repeat(MAX_DEPTH / 2),
            "(".repeat(MAX_DEPTH / 2),
            ")".repeat(MAX_DEPTH / 2),
            ")".repeat(MAX_DEPTH / 2),
        );
        let err = parse(&too_mixed).unwrap_err();
        assert!(err.detail.contains("too deeply nested"), "{err:?}");
    }

    #[test]
    fn refuses_5000_deep_nesting_without_deep_recursion() {
        const DEPTH: usize = 5000;
        let parens = format!("{}a pr{}", "(".repeat(DEPTH), ")".repeat(DEPTH));
        let nots = format!("{}a pr{}", "not (".repeat(DEPTH), ")".repeat(DEPTH));
        let unclosed = "(".repeat(DEPTH);
        let brackets = format!("{}a pr{}", "a[".repeat(DEPTH), "]".repeat(DEPTH));

        // Through the public entry point the length limit alone refuses them.
        for input in [&parens, &nots, &brackets] {
            let err = parse(input).unwrap_err();
            assert!(err.detail.contains("too long"), "{err:?}");
        }

        // With the length limit lifted, the depth guard must refuse them by itself, on a stack
        // far too small for 5000 levels of recursion.
        let unbounded = Limits {
            max_len: usize::MAX,
            ..Limits::DEFAULT
        };
        let handle = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                [&parens, &nots, &unclosed]
                    .iter()
                    .map(|input| parse_with(input, unbounded).map_err(|e| e.detail))
                    .chain([parse_with(&brackets, unbounded).map_err(|e| e.detail)])
                    .collect::<Vec<_>>()
            })
            .expect("spawn");
        let results = handle.join().expect("parser must not overflow the stack");
        for (i, result) in results.iter().enumerate().take(3) {
            let detail = result.as_ref().unwrap_err();
            assert!(detail.contains("too deeply nested"), "{i}: {detail}");
        }
        // `a[a[…` trips the nested-value-path rule before the depth one.
        let detail = results[3].as_ref().unwrap_err();
        assert!(detail.contains("inside another value path"), "{detail}");
    }

    #[test]
    fn error_display_and_clipping() {
        let err = parse("userName xx \"a\"").unwrap_err();
        assert_eq!(err.to_string(), format!("invalid filter: {}", err.detail));
        let long_op = format!("a {} 1", "z".repeat(500));
        let err = parse(&long_op).unwrap_err();
        assert!(err.detail.len() < 200, "{}", err.detail);
        assert!(err.detail.contains('…'));
    }

    fn bjensen() -> Json {
        json!({
            "schemas": [USER, ENTERPRISE],
            "id": "2819c223-7f76-453a-919d-413861904646",
            "externalId": "bjensen",
            "userName": "bjensen",
            "name": { "familyName": "Jensen", "givenName": "Barbara" },
            "title": "Tour Guide",
            "nickName": "",
            "displayName": null,
            "active": true,
            "userType": "Employee",
            "loginCount": 42,
            "emails": [
                { "value": "bjensen@example.com", "type": "work", "primary": true },
                { "value": "babs@jensen.org", "type": "home" }
            ],
            "phoneNumbers": [],
            "meta": {
                "resourceType": "User",
                "created": "2010-01-23T04:56:22Z",
                "lastModified": "2011-05-13T04:42:34Z"
            },
            ENTERPRISE: {
                "employeeNumber": "701984",
                "manager": { "value": "26118915" }
            }
        })
    }

    #[test]
    fn matches_resources() {
        let cases: Vec<(String, bool)> = [
            // Strings: case-insensitive names and values, except the caseExact `id`.
            (r#"userName eq "bjensen""#, true),
            (r#"USERNAME eq "BJensen""#, true),
            (r#"userName ne "bjensen""#, false),
            (r#"id eq "2819c223-7f76-453a-919d-413861904646""#, true),
            (r#"id eq "2819C223-7F76-453A-919D-413861904646""#, false),
            (r#"id sw "2819C""#, false),
            // `externalId` is caseExact too; its sub-attribute-free spelling in any case.
            (r#"externalId eq "bjensen""#, true),
            (r#"EXTERNALID eq "BJensen""#, false),
            (r#"externalId sw "BJ""#, false),
            (r#"externalId ne "BJENSEN""#, true),
            (r#"name.familyName co "ENS""#, true),
            (r#"name.givenName sw "bar""#, true),
            (r#"name.givenName ew "ARA""#, true),
            (r#"name.givenName ew "bar""#, false),
            (r#"userName gt "a""#, true),
            (r#"userName lt "a""#, false),
            // Presence.
            ("title pr", true),
            ("nickName pr", false),
            ("displayName pr", false),
            ("nosuch pr", false),
            ("phoneNumbers pr", false),
            ("emails pr", true),
            ("name pr", true),
            ("emails.primary pr", true),
            // Booleans, numbers, null.
            ("active eq true", true),
            ("active eq false", false),
            ("active ne false", true),
            ("loginCount gt 40", true),
            ("loginCount ge 42", true),
            ("loginCount lt 42", false),
            ("loginCount le 4.2e1", true),
            ("loginCount eq 42.0", true),
            (r#"loginCount eq "42""#, false),
            ("userName gt 5", false),
            ("displayName eq null", true),
            ("nosuch eq null", true),
            ("phoneNumbers eq null", true),
            ("title eq null", false),
            ("title ne null", true),
            ("name eq null", false),
            ("name ne null", true),
            (r#"name eq "Barbara""#, false),
            (r#"nosuch ne "x""#, true),
            (r#"nosuch co "x""#, false),
            // Dates compare as strings.
            (r#"meta.lastModified gt "2011-05-01T00:00:00Z""#, true),
            (r#"meta.lastModified lt "2011-05-01T00:00:00Z""#, false),
            (r#"meta.created ge "2010-01-23T04:56:22Z""#, true),
            // Multi-valued: any element.
            (r#"emails.value co "jensen.org""#, true),
            (r#"emails.type eq "other""#, false),
            (r#"emails co "EXAMPLE.com""#, true),
            (
                &format!(r#"schemas eq "{}""#, ENTERPRISE.to_lowercase()),
                true,
            ),
            // Value paths evaluate each element on its own.
            (
                r#"emails[type eq "work" and value co "@example.com"]"#,
                true,
            ),
            (
                r#"emails[type eq "home" and value co "@example.com"]"#,
                false,
            ),
            (
                r#"emails.type eq "home" and emails.value co "@example.com""#,
                true,
            ),
            (r#"emails[type eq "home" and not (primary eq true)]"#, true),
            (r#"emails[primary eq true]"#, true),
            (r#"emails[type eq "other" or value ew ".ORG"]"#, true),
            (r#"name[givenName eq "barbara"]"#, true),
            (r#"phoneNumbers[type eq "work"]"#, false),
            (r#"userName[value pr]"#, false),
            // Schema URN prefixes: core at the top level, extensions under their URN.
            (&format!(r#"{USER}:userName eq "bjensen""#), true),
            (&format!(r#"{USER}:emails[type eq "work"]"#), true),
            (&format!(r#"{ENTERPRISE}:employeeNumber eq "701984""#), true),
            (
                &format!(r#"{ENTERPRISE}:manager.value eq "26118915""#),
                true,
            ),
            (&format!(r#"{ENTERPRISE}:manager pr"#), true),
            // Logic.
            (r#"userType eq "Employee" and not (title pr)"#, false),
            (r#"nosuch pr or userName eq "bjensen""#, true),
            (
                r#"not (nosuch pr) and (title co "guide" or active eq false)"#,
                true,
            ),
        ]
        .into_iter()
        .map(|(f, want)| (f.to_string(), want))
        .collect();
        assert!(cases.len() >= 15);
        let user = bjensen();
        for (input, want) in cases {
            let filter = parse(&input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(filter.matches(&user), want, "{input}");
        }
    }

    #[test]
    fn parses_patch_paths() {
        let plain = |p: &str| AttrPath {
            uri: None,
            attr: p.into(),
            sub: None,
        };
        let cases: Vec<(String, PatchPath)> = vec![
            (
                "displayName".into(),
                PatchPath {
                    path: plain("displayName"),
                    filter: None,
                },
            ),
            (
                "name.givenName".into(),
                PatchPath {
                    path: path("name.givenName"),
                    filter: None,
                },
            ),
            (
                format!("{USER}:emails"),
                PatchPath {
                    path: AttrPath {
                        uri: Some(USER.into()),
                        attr: "emails".into(),
                        sub: None,
                    },
                    filter: None,
                },
            ),
            (
                r#"emails[type eq "work"]"#.into(),
                PatchPath {
                    path: plain("emails"),
                    filter: Some(cmp("type", Eq, s("work"))),
                },
            ),
            (
                r#"emails[type eq "a]b" and not (primary eq true)].value"#.into(),
                PatchPath {
                    path: path("emails.value"),
                    filter: Some(and(
                        cmp("type", Eq, s("a]b")),
                        not(cmp("primary", Eq, Value::Bool(true))),
                    )),
                },
            ),
            (
                format!(r#"{USER}:emails[ value pr ].Primary"#),
                PatchPath {
                    path: AttrPath {
                        uri: Some(USER.into()),
                        attr: "emails".into(),
                        sub: Some("Primary".into()),
                    },
                    filter: Some(pr("value")),
                },
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parse_patch_path(&input), Ok(want), "{input}");
        }
    }

    #[test]
    fn refuses_bad_patch_paths() {
        let cases: Vec<(String, &str)> = vec![
            ("".into(), "invalid attribute path ''"),
            ("display Name".into(), "invalid attribute path"),
            ("name.givenName.x".into(), "at most one sub-attribute level"),
            ("[type eq \"work\"]".into(), "invalid attribute path ''"),
            ("emails []".into(), "invalid attribute path 'emails '"),
            ("emails[]".into(), "found ']' at position 8"),
            ("emails[type eq]".into(), "missing value after 'eq'"),
            (
                "emails[type eq \"work\"".into(),
                "missing ']' to close the '[' at position 7",
            ),
            (
                "emails[type eq \"work\"]]".into(),
                "found ']' at position 23",
            ),
            (
                "emails[type eq \"work\"] .value".into(),
                "found '.value' at position 24",
            ),
            (
                "emails[type eq \"work\"].value.x".into(),
                "invalid sub-attribute name 'value.x'",
            ),
            (
                "emails[type eq \"work\"].".into(),
                "invalid sub-attribute name ''",
            ),
            (
                "emails[type eq \"work\"]value".into(),
                "found 'value' at position 23",
            ),
            ("emails[type eq \"work\"][value pr]".into(), "found '['"),
            (
                "emails.value[type pr]".into(),
                "not the sub-attribute 'emails.value'",
            ),
            (
                "emails[x.y pr]".into(),
                "must be a plain sub-attribute name",
            ),
            ("emails[a[b pr]]".into(), "inside another value path"),
            (
                format!("emails[{}]", "x".repeat(MAX_LEN)),
                "path is too long",
            ),
        ];
        for (input, want) in cases {
            match parse_patch_path(&input) {
                Ok(p) => panic!("{input:?} parsed as {p:?}, expected an error containing {want:?}"),
                Err(e) => assert!(
                    e.detail.contains(want),
                    "{input:?}: got {:?}, expected it to contain {want:?}",
                    e.detail
                ),
            }
        }
    }

    #[test]
    fn matches_non_object_resources_as_nothing() {
        let filter = parse("title pr or title eq \"x\"").expect("valid");
        assert!(!filter.matches(&json!(null)));
        assert!(!filter.matches(&json!([1, 2])));
        let filter = parse("title eq null").expect("valid");
        assert!(filter.matches(&json!("scalar")));
    }
}

//! `view.filter.sql`: RocketMQ's SQL92 subset over a record's headers.
//!
//! Written by hand: the language is a dozen productions (comparisons, `BETWEEN`,
//! `IN`, `IS [NOT] NULL`, `AND`, `OR`, `NOT`, string, number and boolean
//! constants), and what matters is RocketMQ's meaning of them over string-valued
//! properties, which no SQL crate gives: a general SQL parser would accept far more
//! than a filter may say, and still leave the evaluation to write.
//!
//! Meaning (as RocketMQ's): a header is compared as a number when the constant is a
//! number, as text when it is a string; a missing header, or one that does not read
//! as a number where a number is asked, makes the comparison unknown; `AND`, `OR` and
//! `NOT` follow SQL's three-valued logic, and a record matches only when the whole
//! expression is true. Keywords are case-insensitive; header names are not (write
//! one that is not a plain identifier in double quotes: `"spool.tag" = 'a'`).

use std::fmt;

/// A parsed filter expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Compare(String, Op, Constant),
    Between {
        header: String,
        low: f64,
        high: f64,
        negated: bool,
    },
    In {
        header: String,
        values: Vec<String>,
        negated: bool,
    },
    IsNull {
        header: String,
        negated: bool,
    },
    Constant(bool),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A constant a header is compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Constant {
    Number(f64),
    Text(String),
    Bool(bool),
}

/// Why an expression was refused: what was found where, for the client's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError(pub String);

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The longest expression accepted, and the deepest nesting: a filter is a line of
/// text, and the evaluator recurses.
const MAX_LEN: usize = 4096;
const MAX_DEPTH: usize = 64;

/// Parses `text` into an expression.
pub fn parse(text: &str) -> Result<Expr, SyntaxError> {
    if text.len() > MAX_LEN {
        return Err(SyntaxError(format!(
            "the expression is {} bytes long; at most {MAX_LEN}",
            text.len()
        )));
    }
    let tokens = tokenize(text)?;
    let mut parser = Parser {
        tokens: &tokens,
        at: 0,
        depth: 0,
    };
    let expr = parser.or()?;
    match parser.peek() {
        None => Ok(expr),
        Some(token) => Err(SyntaxError(format!(
            "unexpected {token} after the expression"
        ))),
    }
}

/// Three-valued truth: `None` is SQL's unknown.
type Truth = Option<bool>;

impl Expr {
    /// Whether a record with headers `header` (by name, the last value of a repeated
    /// header; `None` for a missing or null one) matches.
    pub fn matches<'a>(&self, header: &impl Fn(&str) -> Option<&'a [u8]>) -> bool {
        self.truth(header) == Some(true)
    }

    fn truth<'a>(&self, header: &impl Fn(&str) -> Option<&'a [u8]>) -> Truth {
        match self {
            Expr::And(left, right) => match (left.truth(header), right.truth(header)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Expr::Or(left, right) => match (left.truth(header), right.truth(header)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            Expr::Not(inner) => inner.truth(header).map(|truth| !truth),
            Expr::Constant(value) => Some(*value),
            Expr::IsNull {
                header: name,
                negated,
            } => Some(header(name).is_none() != *negated),
            Expr::Compare(name, op, constant) => {
                let value = header(name)?;
                match constant {
                    Constant::Number(number) => Some(op.holds(number_of(value)?, *number)),
                    Constant::Text(text) => match op {
                        Op::Eq => Some(value == text.as_bytes()),
                        Op::Ne => Some(value != text.as_bytes()),
                        // Refused at parsing: text is compared for equality only.
                        _ => None,
                    },
                    Constant::Bool(flag) => {
                        let value = bool_of(value)?;
                        match op {
                            Op::Eq => Some(value == *flag),
                            Op::Ne => Some(value != *flag),
                            _ => None,
                        }
                    }
                }
            }
            Expr::Between {
                header: name,
                low,
                high,
                negated,
            } => {
                let value = number_of(header(name)?)?;
                Some((*low <= value && value <= *high) != *negated)
            }
            Expr::In {
                header: name,
                values,
                negated,
            } => {
                let value = header(name)?;
                Some(values.iter().any(|v| v.as_bytes() == value) != *negated)
            }
        }
    }
}

impl Op {
    fn holds(self, left: f64, right: f64) -> bool {
        match self {
            Op::Eq => left == right,
            Op::Ne => left != right,
            Op::Lt => left < right,
            Op::Le => left <= right,
            Op::Gt => left > right,
            Op::Ge => left >= right,
        }
    }
}

fn number_of(value: &[u8]) -> Option<f64> {
    std::str::from_utf8(value).ok()?.trim().parse().ok()
}

fn bool_of(value: &[u8]) -> Option<bool> {
    let text = std::str::from_utf8(value).ok()?.trim();
    if text.eq_ignore_ascii_case("true") {
        Some(true)
    } else if text.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Quoted(String),
    Text(String),
    Number(f64),
    Symbol(&'static str),
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Word(word) => write!(f, "`{word}`"),
            Token::Quoted(name) => write!(f, "\"{name}\""),
            Token::Text(text) => write!(f, "'{text}'"),
            Token::Number(number) => write!(f, "{number}"),
            Token::Symbol(symbol) => write!(f, "`{symbol}`"),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>, SyntaxError> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut word = String::new();
            while let Some(&(_, c)) = chars.peek() {
                if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                    word.push(c);
                    chars.next();
                } else {
                    break;
                }
            }
            tokens.push(Token::Word(word));
        } else if c.is_ascii_digit() || (c == '-' && next_is_digit(text, start)) {
            let mut number = String::from(c);
            chars.next();
            while let Some(&(_, c)) = chars.peek() {
                if c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E') {
                    number.push(c);
                    chars.next();
                } else {
                    break;
                }
            }
            let value = number
                .parse()
                .map_err(|_| SyntaxError(format!("{number} is not a number")))?;
            tokens.push(Token::Number(value));
        } else if c == '\'' || c == '"' {
            chars.next();
            let mut quoted = String::new();
            loop {
                match chars.next() {
                    // A doubled quote stands for one.
                    Some((_, q)) if q == c => {
                        if chars.peek().is_some_and(|&(_, next)| next == c) {
                            quoted.push(c);
                            chars.next();
                        } else {
                            break;
                        }
                    }
                    Some((_, other)) => quoted.push(other),
                    None => {
                        return Err(SyntaxError(format!(
                            "a quote opened at byte {start} is not closed"
                        )));
                    }
                }
            }
            tokens.push(if c == '\'' {
                Token::Text(quoted)
            } else {
                Token::Quoted(quoted)
            });
        } else {
            let rest = text.get(start..).unwrap_or_default();
            let symbol = ["<>", "!=", "<=", ">=", "=", "<", ">", "(", ")", ","]
                .into_iter()
                .find(|symbol| rest.starts_with(symbol))
                .ok_or_else(|| SyntaxError(format!("unexpected `{c}` at byte {start}")))?;
            for _ in 0..symbol.len() {
                chars.next();
            }
            tokens.push(Token::Symbol(if symbol == "!=" { "<>" } else { symbol }));
        }
    }
    Ok(tokens)
}

fn next_is_digit(text: &str, at: usize) -> bool {
    text.get(at + 1..)
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_ascii_digit())
}

struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn keyword(&mut self, keyword: &str) -> bool {
        let found =
            matches!(self.peek(), Some(Token::Word(word)) if word.eq_ignore_ascii_case(keyword));
        if found {
            self.at += 1;
        }
        found
    }

    fn symbol(&mut self, symbol: &str) -> bool {
        let found = matches!(self.peek(), Some(Token::Symbol(s)) if *s == symbol);
        if found {
            self.at += 1;
        }
        found
    }

    fn expect_symbol(&mut self, symbol: &str) -> Result<(), SyntaxError> {
        if self.symbol(symbol) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("`{symbol}`")))
        }
    }

    fn unexpected(&self, wanted: &str) -> SyntaxError {
        match self.peek() {
            Some(token) => SyntaxError(format!("expected {wanted}, found {token}")),
            None => SyntaxError(format!("expected {wanted} at the end")),
        }
    }

    fn or(&mut self) -> Result<Expr, SyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(SyntaxError(format!("nested deeper than {MAX_DEPTH}")));
        }
        let mut expr = self.and()?;
        while self.keyword("OR") {
            expr = Expr::Or(Box::new(expr), Box::new(self.and()?));
        }
        self.depth -= 1;
        Ok(expr)
    }

    fn and(&mut self) -> Result<Expr, SyntaxError> {
        let mut expr = self.not()?;
        while self.keyword("AND") {
            expr = Expr::And(Box::new(expr), Box::new(self.not()?));
        }
        Ok(expr)
    }

    fn not(&mut self) -> Result<Expr, SyntaxError> {
        if self.keyword("NOT") {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(SyntaxError(format!("nested deeper than {MAX_DEPTH}")));
            }
            let inner = self.not()?;
            self.depth -= 1;
            return Ok(Expr::Not(Box::new(inner)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, SyntaxError> {
        if self.symbol("(") {
            let expr = self.or()?;
            self.expect_symbol(")")?;
            return Ok(expr);
        }
        if self.keyword("TRUE") {
            return Ok(Expr::Constant(true));
        }
        if self.keyword("FALSE") {
            return Ok(Expr::Constant(false));
        }
        let header = match self.next() {
            Some(Token::Word(word)) if !is_keyword(&word) => word,
            Some(Token::Quoted(name)) => name,
            _ => {
                self.at = self.at.saturating_sub(1);
                return Err(self.unexpected("a header name"));
            }
        };
        if self.keyword("IS") {
            let negated = self.keyword("NOT");
            if !self.keyword("NULL") {
                return Err(self.unexpected("NULL"));
            }
            return Ok(Expr::IsNull { header, negated });
        }
        let negated = self.keyword("NOT");
        if self.keyword("BETWEEN") {
            let low = self.number()?;
            if !self.keyword("AND") {
                return Err(self.unexpected("AND"));
            }
            let high = self.number()?;
            return Ok(Expr::Between {
                header,
                low,
                high,
                negated,
            });
        }
        if self.keyword("IN") {
            self.expect_symbol("(")?;
            let mut values = vec![self.text()?];
            while self.symbol(",") {
                values.push(self.text()?);
            }
            self.expect_symbol(")")?;
            return Ok(Expr::In {
                header,
                values,
                negated,
            });
        }
        if negated {
            return Err(self.unexpected("BETWEEN or IN after NOT"));
        }
        let op = match self.next() {
            Some(Token::Symbol("=")) => Op::Eq,
            Some(Token::Symbol("<>")) => Op::Ne,
            Some(Token::Symbol("<")) => Op::Lt,
            Some(Token::Symbol("<=")) => Op::Le,
            Some(Token::Symbol(">")) => Op::Gt,
            Some(Token::Symbol(">=")) => Op::Ge,
            _ => {
                self.at = self.at.saturating_sub(1);
                return Err(
                    self.unexpected(&format!("a comparison, BETWEEN, IN or IS after {header}"))
                );
            }
        };
        let constant = match self.next() {
            Some(Token::Number(number)) => Constant::Number(number),
            Some(Token::Text(text)) if matches!(op, Op::Eq | Op::Ne) => Constant::Text(text),
            Some(Token::Text(_)) => {
                return Err(SyntaxError(format!(
                    "{header}: text is compared with = or <> only"
                )));
            }
            Some(Token::Word(word))
                if matches!(op, Op::Eq | Op::Ne)
                    && (word.eq_ignore_ascii_case("TRUE")
                        || word.eq_ignore_ascii_case("FALSE")) =>
            {
                Constant::Bool(word.eq_ignore_ascii_case("TRUE"))
            }
            _ => {
                self.at = self.at.saturating_sub(1);
                return Err(self.unexpected(&format!("a constant to compare {header} with")));
            }
        };
        Ok(Expr::Compare(header, op, constant))
    }

    fn number(&mut self) -> Result<f64, SyntaxError> {
        match self.next() {
            Some(Token::Number(number)) => Ok(number),
            _ => {
                self.at = self.at.saturating_sub(1);
                Err(self.unexpected("a number"))
            }
        }
    }

    fn text(&mut self) -> Result<String, SyntaxError> {
        match self.next() {
            Some(Token::Text(text)) => Ok(text),
            _ => {
                self.at = self.at.saturating_sub(1);
                Err(self.unexpected("a quoted string"))
            }
        }
    }
}

fn is_keyword(word: &str) -> bool {
    [
        "AND", "OR", "NOT", "BETWEEN", "IN", "IS", "NULL", "TRUE", "FALSE",
    ]
    .iter()
    .any(|keyword| word.eq_ignore_ascii_case(keyword))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(expr: &str, headers: &[(&str, &str)]) -> bool {
        let expr = parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        expr.matches(&|name: &str| {
            headers
                .iter()
                .rev()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.as_bytes())
        })
    }

    #[test]
    fn comparisons_over_numbers_and_text() {
        let order = [("region", "eu"), ("amount", "150"), ("vip", "true")];
        assert!(matches("region = 'eu' AND amount > 100", &order));
        assert!(!matches("region = 'eu' AND amount > 200", &order));
        assert!(matches("region <> 'us' and amount >= 150", &order));
        assert!(matches("amount BETWEEN 100 AND 150", &order));
        assert!(!matches("amount NOT BETWEEN 100 AND 150", &order));
        assert!(matches("region IN ('eu', 'uk')", &order));
        assert!(matches("region NOT IN ('us')", &order));
        assert!(matches("vip = TRUE", &order));
        assert!(matches("amount < 150.5 OR region = 'x'", &order));
        assert!(matches(
            "(region = 'x' OR region = 'eu') AND NOT amount < 0",
            &order
        ));
        assert!(matches("amount = -0 OR amount > -5", &order));
        assert!(matches("\"region\" = 'eu'", &order));
    }

    #[test]
    fn a_missing_or_unreadable_header_is_unknown_not_false() {
        let order = [("amount", "lots")];
        assert!(!matches("amount > 1", &order), "not a number");
        assert!(!matches("NOT amount > 1", &order), "NOT unknown is unknown");
        assert!(!matches("region = 'eu'", &order));
        assert!(!matches("region <> 'eu'", &order), "missing: unknown");
        assert!(matches("region IS NULL", &order));
        assert!(matches("amount IS NOT NULL", &order));
        assert!(matches("region = 'eu' OR TRUE", &order), "unknown OR true");
        assert!(!matches("region = 'eu' AND TRUE", &order));
        assert!(
            matches("NOT (region = 'eu' AND FALSE)", &order),
            "unknown AND false"
        );
    }

    #[test]
    fn bad_expressions_say_what_is_wrong() {
        for (text, says) in [
            ("region = ", "expected a constant"),
            ("region > 'eu'", "compared with = or <> only"),
            ("region = 'eu", "not closed"),
            ("amount BETWEEN 1 2", "expected AND"),
            ("(a = 1", "expected `)`"),
            ("a = 1 b", "unexpected `b`"),
            ("a ! 1", "unexpected `!`"),
            ("AND = 1", "expected a header name"),
        ] {
            let error = parse(text).expect_err(text);
            assert!(error.0.contains(says), "{text}: {error}");
        }
        let deep = format!("{}a = 1{}", "(".repeat(100), ")".repeat(100));
        assert!(parse(&deep).unwrap_err().0.contains("nested"));
        assert!(parse(&"a = 1 OR ".repeat(1000)).is_err());
    }
}

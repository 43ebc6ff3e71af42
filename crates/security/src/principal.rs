//! The principal of a TLS client certificate (mTLS), as Kafka makes it: the subject's
//! distinguished name in RFC 2253 form (`CN=alice,OU=eng,O=acme`), turned by
//! `ssl.principal.mapping.rules` into a user name (`User:alice`).
//!
//! The rules are Kafka's: a comma-separated list of `RULE:pattern/replacement/` (with
//! `L` or `U` after the last slash to lower- or upper-case the result) and `DEFAULT`
//! (the name unchanged). The first rule whose pattern matches the whole name applies;
//! a name no rule matches is refused, and so is the connection.

use regex::Regex;
use x509_cert::Certificate;
use x509_cert::der::Decode;

/// One rule.
#[derive(Debug, Clone)]
enum Rule {
    Default,
    Replace {
        pattern: Regex,
        replacement: String,
        case: Case,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

/// `ssl.principal.mapping.rules`, parsed.
#[derive(Debug, Clone)]
pub struct PrincipalRules {
    rules: Vec<Rule>,
}

impl Default for PrincipalRules {
    fn default() -> Self {
        PrincipalRules {
            rules: vec![Rule::Default],
        }
    }
}

impl PrincipalRules {
    /// Parses the setting; the message says which rule is malformed.
    pub fn parse(text: &str) -> Result<PrincipalRules, String> {
        let mut rules = Vec::new();
        let mut rest = text.trim();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("DEFAULT") {
                rules.push(Rule::Default);
                rest = after;
            } else if let Some(after) = rest.strip_prefix("RULE:") {
                let (rule, after) = parse_rule(after)?;
                rules.push(rule);
                rest = after;
            } else {
                return Err(format!(
                    "ssl.principal.mapping.rules: {rest:?}: expected DEFAULT or RULE:pattern/replacement/[LU]"
                ));
            }
            rest = rest.trim_start();
            rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
        }
        if rules.is_empty() {
            rules.push(Rule::Default);
        }
        Ok(PrincipalRules { rules })
    }

    /// The user name for a distinguished name; `None` when no rule matches it.
    pub fn apply(&self, name: &str) -> Option<String> {
        self.rules.iter().find_map(|rule| match rule {
            Rule::Default => Some(name.to_owned()),
            Rule::Replace {
                pattern,
                replacement,
                case,
            } => {
                if !pattern.is_match(name) {
                    return None;
                }
                let mapped = pattern.replace_all(name, replacement.as_str()).into_owned();
                Some(match case {
                    Case::Keep => mapped,
                    Case::Lower => mapped.to_lowercase(),
                    Case::Upper => mapped.to_uppercase(),
                })
            }
        })
    }
}

/// `pattern/replacement/[LU]` (the slashes unescaped, as Kafka reads them), and what
/// follows it.
fn parse_rule(text: &str) -> Result<(Rule, &str), String> {
    let bad =
        || format!("ssl.principal.mapping.rules: RULE:{text}: expected pattern/replacement/[LU]");
    let (pattern, rest) = text.split_once('/').ok_or_else(bad)?;
    let (replacement, rest) = rest.split_once('/').ok_or_else(bad)?;
    let (case, rest) = match rest.chars().next() {
        Some('L') => (Case::Lower, &rest[1..]),
        Some('U') => (Case::Upper, &rest[1..]),
        _ => (Case::Keep, rest),
    };
    // The whole name must match (Java's `Matcher.matches`).
    let pattern = Regex::new(&format!("^(?:{pattern})$"))
        .map_err(|error| format!("ssl.principal.mapping.rules: {pattern:?}: {error}"))?;
    // Java's `$1` is the regex crate's `${1}`: a digit run after `$` names a group.
    let replacement = java_replacement(replacement);
    Ok((
        Rule::Replace {
            pattern,
            replacement,
            case,
        },
        rest,
    ))
}

/// A Java replacement string in the regex crate's syntax: `$1` becomes `${1}`.
fn java_replacement(replacement: &str) -> String {
    let mut out = String::with_capacity(replacement.len() + 4);
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push_str("${");
            while let Some(digit) = chars.next_if(char::is_ascii_digit) {
                out.push(digit);
            }
            out.push('}');
        } else {
            out.push(c);
        }
    }
    out
}

/// The subject of a DER certificate in RFC 2253 form, most specific part first, as
/// Java's `X500Principal.getName()` gives it; `None` for a certificate that does not
/// parse.
pub fn subject_name(der: &[u8]) -> Option<String> {
    let certificate = Certificate::from_der(der).ok()?;
    Some(certificate.tbs_certificate.subject.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_rules_map_names() {
        let rules = PrincipalRules::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=([^,]+),.*$/$1/, DEFAULT",
        )
        .unwrap();
        assert_eq!(
            rules
                .apply("CN=Kafka-Client,OU=ServiceUsers,O=Acme")
                .as_deref(),
            Some("kafka-client")
        );
        assert_eq!(rules.apply("CN=Bob,O=Acme").as_deref(), Some("Bob"));
        assert_eq!(rules.apply("O=Acme").as_deref(), Some("O=Acme"), "DEFAULT");
        let strict = PrincipalRules::parse("RULE:^CN=(.*)$/$1/U").unwrap();
        assert_eq!(strict.apply("CN=alice").as_deref(), Some("ALICE"));
        assert_eq!(strict.apply("O=Acme"), None, "no rule applies");
        assert!(PrincipalRules::parse("RULE:oops").is_err());
        assert!(PrincipalRules::parse("SOMETHING").is_err());
        assert_eq!(
            PrincipalRules::parse("").unwrap().apply("CN=x").as_deref(),
            Some("CN=x")
        );
    }
}

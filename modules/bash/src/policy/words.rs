//! One shell word, read statically: its literal value when the shell would
//! see a fixed string, or a note that it is computed at run time. Command
//! substitutions inside it are handed back for checking.

use brush_parser::word::{
    self, Parameter, ParameterExpr, ParameterTransformOp, WordPiece, WordPieceWithSource,
};
use brush_parser::ParserOptions;

use super::unreadable::Unreadable;

/// A word of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// The word's value after quote removal.
    Lit(String),
    /// The value depends on expansions (variables, substitutions, globs).
    Dyn(String),
}

impl Arg {
    /// The literal value, if there is one.
    pub fn lit(&self) -> Option<&str> {
        match self {
            Arg::Lit(s) => Some(s),
            Arg::Dyn(_) => None,
        }
    }

    /// The text to show in messages.
    pub fn display(&self) -> &str {
        match self {
            Arg::Lit(s) | Arg::Dyn(s) => s,
        }
    }
}

/// What reading a word found.
#[derive(Debug, Default)]
pub struct WordScan {
    /// Command texts from `$(…)` and backquotes, to parse in turn.
    pub substitutions: Vec<String>,
    /// Arithmetic bash evaluates here: `$((…))`, `${s:off:len}`, `${a[i]}`.
    pub arith: Vec<String>,
    /// Variables given a value here (`${x:=…}`).
    pub assigned: Vec<String>,
    /// Why the word cannot be checked (`${!ref}`, `${x@P}`, `$[…]`).
    pub refused: Option<String>,
}

/// Reads `raw` (a word as the parser gave it, quotes included).
pub fn read(raw: &str, scan: &mut WordScan) -> Result<Arg, Unreadable> {
    if raw
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+%@^".contains(&b))
    {
        return Ok(Arg::Lit(raw.to_string()));
    }
    let pieces = word::parse(raw, &ParserOptions::default())
        .map_err(|e| format!("cannot read the word `{raw}`: {e}"))?;
    let mut lit = String::new();
    let mut dynamic = false;
    pieces_into(raw, &pieces, false, &mut lit, &mut dynamic, scan)?;
    Ok(if dynamic {
        Arg::Dyn(raw.to_string())
    } else {
        Arg::Lit(lit)
    })
}

/// Scans free text (a here-document body, an arithmetic expression) for
/// command substitutions, as if it were inside double quotes.
pub fn scan_text(text: &str, scan: &mut WordScan) -> Result<(), Unreadable> {
    if !text.contains("$(") && !text.contains('`') {
        return Ok(());
    }
    let quoted = format!("\"{}\"", text.replace('"', "\\\""));
    read(&quoted, scan).map(|_| ())
}

fn pieces_into(
    raw: &str,
    pieces: &[WordPieceWithSource],
    quoted: bool,
    lit: &mut String,
    dynamic: &mut bool,
    scan: &mut WordScan,
) -> Result<(), Unreadable> {
    for p in pieces {
        match &p.piece {
            WordPiece::Text(s) => {
                if s.contains("$[") || (s.starts_with('[') && lit.ends_with('$')) {
                    scan.refused = Some(
                        "`$[…]` is arithmetic the command policy does not read; write `$((…))`".to_string(),
                    );
                }
                // Unquoted glob or brace characters make the word a pattern.
                if !quoted && is_pattern(s) {
                    *dynamic = true;
                }
                lit.push_str(s);
            }
            WordPiece::SingleQuotedText(s) => lit.push_str(s),
            WordPiece::AnsiCQuotedText(s) => {
                if s.contains('\\') {
                    *dynamic = true;
                }
                lit.push_str(s);
            }
            WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                pieces_into(raw, inner, true, lit, dynamic, scan)?;
            }
            WordPiece::TildePrefix(s) => {
                lit.push('~');
                lit.push_str(s);
            }
            WordPiece::EscapeSequence(s) => lit.push_str(s.strip_prefix('\\').unwrap_or(s)),
            WordPiece::CommandSubstitution(cmd) | WordPiece::BackquotedCommandSubstitution(cmd) => {
                *dynamic = true;
                scan.substitutions.push(cmd.clone());
            }
            WordPiece::ParameterExpansion(expr) => {
                *dynamic = true;
                parameter(expr, scan);
                // `${x:-$(cmd)}`: the operand may hold substitutions.
                let source = raw
                    .get(p.start_index..p.end_index)
                    .ok_or_else(|| format!("cannot read the parameter expansion in `{raw}`"))?;
                if source.contains("$(") || source.contains('`') {
                    let inner = source
                        .strip_prefix("${")
                        .and_then(|s| s.strip_suffix('}'))
                        .unwrap_or(source);
                    scan_text(inner, scan)?;
                }
            }
            WordPiece::ArithmeticExpression(expr) => {
                *dynamic = true;
                scan.arith.push(expr.value.clone());
                scan_text(&expr.value, scan)?;
            }
        }
    }
    Ok(())
}

/// Whether unquoted text is a glob, brace or extglob pattern the shell
/// expands (`*.rs`, `[ab]`, `{a,b}`, `@(x)`); a lone `[` or `{}` is not.
fn is_pattern(s: &str) -> bool {
    let after = |open: char, close: char| s.find(open).is_some_and(|at| s[at + 1..].contains(close));
    let brace = s.find('{').is_some_and(|at| {
        let rest = &s[at + 1..];
        rest.find('}')
            .is_some_and(|end| rest[..end].contains(',') || rest[..end].contains(".."))
    });
    s.contains(['*', '?'])
        || after('[', ']')
        || brace
        || s.contains("@(")
        || s.contains("!(")
        || s.contains("+(")
}

/// What a `${…}` expansion evaluates or sets.
fn parameter(expr: &ParameterExpr, scan: &mut WordScan) {
    use ParameterExpr as P;
    let (param, indirect) = match expr {
        P::Parameter { parameter, indirect }
        | P::UseDefaultValues {
            parameter, indirect, ..
        }
        | P::AssignDefaultValues {
            parameter, indirect, ..
        }
        | P::IndicateErrorIfNullOrUnset {
            parameter, indirect, ..
        }
        | P::UseAlternativeValue {
            parameter, indirect, ..
        }
        | P::ParameterLength { parameter, indirect }
        | P::RemoveSmallestSuffixPattern {
            parameter, indirect, ..
        }
        | P::RemoveLargestSuffixPattern {
            parameter, indirect, ..
        }
        | P::RemoveSmallestPrefixPattern {
            parameter, indirect, ..
        }
        | P::RemoveLargestPrefixPattern {
            parameter, indirect, ..
        }
        | P::Substring {
            parameter, indirect, ..
        }
        | P::Transform {
            parameter, indirect, ..
        }
        | P::UppercaseFirstChar {
            parameter, indirect, ..
        }
        | P::UppercasePattern {
            parameter, indirect, ..
        }
        | P::LowercaseFirstChar {
            parameter, indirect, ..
        }
        | P::LowercasePattern {
            parameter, indirect, ..
        }
        | P::ReplaceSubstring {
            parameter, indirect, ..
        } => (parameter, *indirect),
        P::VariableNames { .. } | P::MemberKeys { .. } => return,
    };
    if indirect {
        scan.refused = Some(
            "`${!name}` uses the value of a variable as a variable name, and a subscript in it (`a[$(…)]`) \
             would run a command the command policy cannot check; name the variable directly"
                .to_string(),
        );
    }
    if let P::Transform {
        op: ParameterTransformOp::PromptExpand,
        ..
    } = expr
    {
        scan.refused = Some(
            "`${var@P}` expands a value as a prompt, which runs the commands in it; the command policy \
             cannot check them"
                .to_string(),
        );
    }
    if let P::Substring { offset, length, .. } = expr {
        scan.arith.push(offset.value.clone());
        scan.arith.extend(length.iter().map(|l| l.value.clone()));
    }
    if let Parameter::NamedWithIndex { name, index } = param {
        scan.arith.push(index.clone());
        if let P::AssignDefaultValues { .. } = expr {
            scan.assigned.push(name.clone());
        }
    }
    if let (P::AssignDefaultValues { .. }, Parameter::Named(name)) = (expr, param) {
        scan.assigned.push(name.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(raw: &str) -> Arg {
        read(raw, &mut WordScan::default()).expect("reads")
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        assert_eq!(lit("'sudo'"), Arg::Lit("sudo".into()));
        assert_eq!(lit("s\\udo"), Arg::Lit("sudo".into()));
        assert_eq!(lit("\"su\"do"), Arg::Lit("sudo".into()));
        assert_eq!(lit("/usr/bin/sudo"), Arg::Lit("/usr/bin/sudo".into()));
    }

    #[test]
    fn expansions_are_dynamic_and_substitutions_found() {
        let mut scan = WordScan::default();
        assert!(matches!(read("$(sudo ls)", &mut scan), Ok(Arg::Dyn(_))));
        assert!(matches!(read("\"x `id` y\"", &mut scan), Ok(Arg::Dyn(_))));
        assert!(matches!(read("${x:-$(rm -rf a)}", &mut scan), Ok(Arg::Dyn(_))));
        assert!(matches!(read("$((1 + $(reboot)))", &mut scan), Ok(Arg::Dyn(_))));
        assert_eq!(scan.substitutions, ["sudo ls", "id", "rm -rf a", "reboot"]);
        assert!(matches!(read("$'\\x73udo'", &mut scan), Ok(Arg::Dyn(_))));
        assert!(matches!(read("/usr/bin/su?o", &mut scan), Ok(Arg::Dyn(_))));
        assert!(matches!(read("$CMD", &mut scan), Ok(Arg::Dyn(_))));
    }
}

//! The operands builtins use as variable names or arithmetic: `read NAME`,
//! `printf -v NAME`, `declare [-i] NAME[=value]`, `test -v NAME`, `let
//! EXPR`, … A subscript in such a name is evaluated as arithmetic, so
//! `read 'a[$(rm y)]'` runs `rm y`; these are handed to [`Values`].

use super::inner::{assignment_name, base};
use super::values::{code_var, Refusal, Values};
use super::words::Arg;

/// Notes what the command `words` does with variable names.
pub fn operands(words: &[Arg], values: &mut Values) -> Result<(), Refusal> {
    let Some(name) = words.first().and_then(Arg::lit) else {
        return Ok(());
    };
    let args = &words[1..];
    // `env PS4=… cmd`, `sudo BASH_ENV=… cmd`, `env x='a[$(…)]' bash -c …`:
    // a `NAME=value` argument may set NAME for what the command runs.
    for a in args {
        let word = a.display();
        if let Some((var, _)) = word.split_once('=') {
            code_var(var)?;
        }
        if let Some(var) = assignment_name(word) {
            let value = word.split_once('=').map_or("", |(_, v)| v);
            let value = if a.lit().is_some() { value } else { "$dynamic" };
            values.assign(var, None, value)?;
        }
    }
    match base(name) {
        "read" => options_then_names(name, args, "adinNptu", &["-a"], values),
        "mapfile" | "readarray" => options_then_names(name, args, "dnOsuCc", &[], values),
        "getopts" => args.get(1).map_or(Ok(()), |w| values.name_operand(name, w)),
        "printf" => match args.first().and_then(Arg::lit) {
            Some(w) if w.starts_with("-v") => match w.len() {
                2 => args.get(1).map_or(Ok(()), |n| values.name_operand(name, n)),
                _ => values.name_operand(name, &Arg::Lit(w[2..].to_string())),
            },
            _ => Ok(()),
        },
        "wait" => value_of(args, "-p").map_or(Ok(()), |n| values.name_operand(name, n)),
        "test" | "[" => value_of(args, "-v").map_or(Ok(()), |n| values.name_only(name, n).map(drop)),
        "let" => {
            for a in args {
                values.arith(a.display().trim_matches(['"', '\'']));
            }
            Ok(())
        }
        "declare" | "typeset" | "local" | "export" | "readonly" => declare(name, args, values),
        _ => Ok(()),
    }
}

/// The word after `option` among `args`.
fn value_of<'a>(args: &'a [Arg], option: &str) -> Option<&'a Arg> {
    let at = args.iter().position(|a| a.lit() == Some(option))?;
    args.get(at + 1)
}

/// `read -r -p PROMPT a b`: options (some with a value), then names.
fn options_then_names(
    builtin: &str,
    args: &[Arg],
    with_value: &str,
    names: &[&str],
    values: &mut Values,
) -> Result<(), Refusal> {
    let mut i = 0;
    while i < args.len() {
        let Some(w) = args[i].lit() else { break };
        if w == "--" {
            i += 1;
            break;
        }
        if !w.starts_with('-') || w.len() < 2 {
            break;
        }
        let cluster = &w[1..];
        if let Some(at) = cluster.find(|c| with_value.contains(c)) {
            let opt = &cluster[at..=at];
            let tail = &cluster[at + 1..];
            let value = if tail.is_empty() {
                i += 1;
                args.get(i).cloned()
            } else {
                Some(Arg::Lit(tail.to_string()))
            };
            if names.contains(&format!("-{opt}").as_str()) {
                if let Some(v) = value {
                    values.name_operand(builtin, &v)?;
                }
            }
        }
        i += 1;
    }
    for a in &args[i.min(args.len())..] {
        values.name_operand(builtin, a)?;
    }
    Ok(())
}

/// `declare [-aAfFgiIlnrtux] [-p] [name[=value] …]`.
fn declare(builtin: &str, args: &[Arg], values: &mut Values) -> Result<(), Refusal> {
    let mut integer = false;
    let mut nameref = false;
    let mut options = true;
    for a in args {
        match a.lit() {
            Some("--") if options => options = false,
            Some(w) if options && (w.starts_with('-') || w.starts_with('+')) && w.len() > 1 => {
                if w.starts_with('-') && w.contains('i') {
                    integer = true;
                }
                if w.starts_with('-') && w.contains('n') {
                    nameref = true;
                }
                // `-f` names functions, not variables.
                if w.contains('f') || w.contains('F') {
                    return Ok(());
                }
            }
            Some(w) => {
                options = false;
                let (target, value) = match w.split_once('=') {
                    Some((t, v)) => (t.strip_suffix('+').unwrap_or(t), Some(v)),
                    None => (w, None),
                };
                let (var, index) = match target.split_once('[') {
                    Some((n, rest)) => (n, rest.rsplit_once(']').map(|(s, _)| s)),
                    None => (target, None),
                };
                match value {
                    Some(v) => values.assign(var, index, v)?,
                    None => drop(values.name_only(builtin, &Arg::Lit(target.to_string()))?),
                }
                if integer {
                    values.integer(var);
                }
                if nameref {
                    values.nameref(var);
                }
            }
            None => {
                // An assignment whose value is computed (`local x="$1"`) is
                // read by the walk; a computed name is not.
                let raw = a.display();
                match assignment_name(raw) {
                    Some(var) => {
                        code_var(var)?;
                        if integer {
                            values.integer(var);
                        }
                        if nameref {
                            values.nameref(var);
                        }
                    }
                    None => values.name_operand(builtin, a)?,
                }
            }
        }
    }
    Ok(())
}

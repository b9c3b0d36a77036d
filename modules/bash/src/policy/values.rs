//! Values bash evaluates as code, and the variables that could carry it.
//!
//! Arithmetic (`$((x))`, `((x))`, `let`, `[[ x -eq 1 ]]`, `${s:x}`,
//! `${a[x]}`, `declare -i`) evaluates a variable's value as an expression,
//! and a subscript inside it (`a[$(rm y)]`) runs a command. The command
//! string can give a variable any value (`x=$(cat f)`, `read x`), so the
//! policy lets arithmetic read only variables it can see are numbers: ones
//! set in this command only to integer literals or by arithmetic itself,
//! and bash's own numeric variables. Names used as variable names by builtins
//! (`read 'a[$(rm y)]'`, `printf -v`, `declare`, `test -v`) have their
//! subscripts read the same way. Variables whose value bash runs as code
//! (`PS4`, `BASH_ENV`, …) may not be set at all.

use std::collections::{BTreeMap, BTreeSet};

use super::arith;
use super::words::Arg;

/// Variables whose value some shell or program runs as code.
pub const CODE_VARS: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "SHELL",
    "BASH_LOADABLES_PATH",
];

/// Bash's variables that hold a number unless this command sets them
/// (`OPTIND` and `PIPESTATUS` keep whatever text they are given).
const NUMERIC: &[&str] = &[
    "RANDOM",
    "SRANDOM",
    "SECONDS",
    "EPOCHSECONDS",
    "LINENO",
    "PPID",
    "BASHPID",
    "UID",
    "EUID",
    "OPTIND",
    "PIPESTATUS",
];

/// Bash's variables whose every new value is evaluated as arithmetic, as
/// if declared `-i` (`RANDOM='a[$(rm y)]'` runs `rm y`).
const EVALUATED_ON_ASSIGNMENT: &[&str] = &["RANDOM", "SRANDOM", "OPTIND", "HISTCMD"];

/// What the walk found about variables, across the whole command.
#[derive(Debug, Default)]
pub struct Values {
    /// Per variable: whether every value given to it is a plain integer.
    numeric: BTreeMap<String, bool>,
    /// Variables given values the policy does not read (`read x`, `for x in`).
    opaque: BTreeSet<String>,
    /// Arithmetic expressions, as written.
    arith: Vec<String>,
    /// Variables with the integer attribute (`declare -i x`).
    integer: BTreeSet<String>,
    /// Every value assigned, as written, by variable (for `declare -i`).
    raw: Vec<(String, String)>,
    /// Variables declared as namerefs (`declare -n r`): their value names
    /// the variable they write.
    namerefs: BTreeSet<String>,
}

/// Why a command was refused.
pub type Refusal = String;

fn is_int(v: &str) -> bool {
    let v = v.strip_prefix(['-', '+']).unwrap_or(v);
    !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())
}

/// Refuses setting a variable whose value runs as code, and the
/// environment entries bash imports as functions (`BASH_FUNC_ls%%=() { …; }`
/// given to `env` defines `ls` in the bash it starts).
pub fn code_var(name: &str) -> Result<(), Refusal> {
    if CODE_VARS.contains(&name) || name.starts_with("BASH_FUNC_") {
        return Err(format!(
            "setting `{name}` makes the shell or a program run its value as code, which the command policy \
             cannot check; leave `{name}` as it is"
        ));
    }
    Ok(())
}

impl Values {
    /// `name=value` (or `name[index]=value`), `value` as written.
    pub fn assign(&mut self, name: &str, index: Option<&str>, value: &str) -> Result<(), Refusal> {
        code_var(name)?;
        if let Some(index) = index {
            self.arith.push(index.to_string());
        }
        let unquoted = value.trim_matches(['"', '\'']);
        // `declare -n r=PS4` (or `r=PS4` once `r` is a nameref) makes `r` write PS4.
        code_var(unquoted)?;
        *self.numeric.entry(name.to_string()).or_insert(true) &= unquoted.is_empty() || is_int(unquoted);
        // `declare -n ref=x`: writing `ref` writes `x`.
        if unquoted
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'[')
        {
            let target = unquoted.split('[').next().unwrap_or("");
            if !target.is_empty() && !is_int(target) {
                self.opaque.insert(target.to_string());
            }
        }
        self.raw.push((name.to_string(), value.to_string()));
        Ok(())
    }

    /// A variable set to a value the policy does not read.
    pub fn opaque(&mut self, name: &str) {
        self.opaque.insert(name.to_string());
    }

    /// An arithmetic expression, as written.
    pub fn arith(&mut self, expr: &str) {
        self.arith.push(expr.to_string());
    }

    /// A word a builtin uses as a variable name and sets to a value the
    /// policy does not read (`read NAME`, `printf -v NAME`).
    pub fn name_operand(&mut self, builtin: &str, word: &Arg) -> Result<(), Refusal> {
        let name = self.name_only(builtin, word)?;
        self.opaque(&name);
        Ok(())
    }

    /// A word a builtin uses as a variable name without setting it
    /// (`declare NAME`, `test -v NAME`): its subscript is still evaluated.
    pub fn name_only(&mut self, builtin: &str, word: &Arg) -> Result<String, Refusal> {
        let Some(w) = word.lit() else {
            return Err(format!(
                "`{builtin}` is given a variable name computed at run time (`{}`); a subscript in it \
                 (`a[$(…)]`) would run a command the command policy cannot check; write the name literally",
                word.display()
            ));
        };
        let (name, rest) = w.split_once('[').unwrap_or((w, ""));
        let name = name.split(['=', '+']).next().unwrap_or(name);
        code_var(name)?;
        if let Some(sub) = rest.rsplit_once(']').map(|(s, _)| s) {
            self.arith.push(sub.to_string());
        }
        Ok(name.to_string())
    }

    /// `declare -n NAME`: NAME's value is the name of the variable it writes.
    pub fn nameref(&mut self, name: &str) {
        self.namerefs.insert(name.to_string());
    }

    /// `declare -i NAME`: every value given to NAME is evaluated.
    pub fn integer(&mut self, name: &str) {
        self.integer.insert(name.to_string());
    }

    /// Whether `name` can only hold a number here: set in this command
    /// only to integers, or one of bash's numeric variables left alone.
    fn is_numeric(&self, name: &str) -> bool {
        if self.opaque.contains(name) {
            return false;
        }
        match self.numeric.get(name) {
            Some(numeric) => *numeric,
            None => NUMERIC.contains(&name),
        }
    }

    /// Checks every arithmetic expression once the whole command is read.
    pub fn check(mut self) -> Result<(), Refusal> {
        self.integer
            .extend(EVALUATED_ON_ASSIGNMENT.iter().map(|n| n.to_string()));
        // An integer variable evaluates every value it is given, including
        // one the policy does not read (`declare -i v; read v`).
        if let Some(name) = self.integer.iter().find(|n| self.opaque.contains(*n)) {
            return Err(format!(
                "`{name}` evaluates every value it is given as arithmetic, and this command gives it one \
                 the command policy cannot read; a value such as `a[$(…)]` would run a command. Give \
                 `{name}` a literal number, or use a variable without the integer attribute"
            ));
        }
        for (name, value) in &self.raw {
            let target = value.trim_matches(['"', '\'']);
            let literal = target.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if self.namerefs.contains(name) && !literal {
                return Err(format!(
                    "the nameref `{name}` is given `{value}`, a variable name the command policy cannot read; \
                     a nameref to `PS4` or to `a[$(…)]` would run a command. Name the variable literally"
                ));
            }
        }
        for (name, value) in &self.raw {
            if self.integer.contains(name) {
                self.arith.push(value.clone());
            }
        }
        let scans: Vec<(String, arith::Refs)> =
            self.arith.iter().map(|e| (e.clone(), arith::refs(e))).collect();
        for (_, refs) in &scans {
            for w in &refs.writes {
                self.numeric.entry(w.clone()).or_insert(true);
            }
        }
        for (expr, refs) in &scans {
            if let Some(hidden) = &refs.hidden {
                return Err(format!(
                    "{hidden}, and a subscript in that output (`a[$(…)]`) would run a command the command \
                     policy cannot check; store the output in a variable and compare it with \
                     `[ \"$n\" -gt 0 ]` or compute with `expr`"
                ));
            }
            if let Some(name) = refs.reads.iter().find(|n| !self.is_numeric(n)) {
                return Err(format!(
                    "the arithmetic `{}` evaluates `{name}`, whose value the command policy cannot see is a \
                     number; a value such as `a[$(…)]` would run a command. Give `{name}` a literal number in \
                     this command, or compare with `[ \"${name}\" -gt 0 ]` / compute with `expr`, which do not \
                     evaluate it",
                    super::unreadable::short(expr.trim())
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_pass_and_unknown_values_do_not() {
        let mut v = Values::default();
        v.assign("n", None, "3").unwrap();
        v.arith("n * 2 + RANDOM");
        v.arith("i = 0");
        v.arith("i < 3");
        assert!(v.check().is_ok());

        let mut v = Values::default();
        v.assign("x", None, "'a[$(rm y)]'").unwrap();
        v.arith("x");
        assert!(v.check().is_err());

        let mut v = Values::default();
        v.arith("HOME + 1");
        assert!(v.check().is_err(), "a variable never set here is not known");

        let mut v = Values::default();
        v.assign("n", None, "3").unwrap();
        v.opaque("n");
        v.arith("n");
        assert!(v.check().is_err(), "read n");

        let mut v = Values::default();
        v.integer("y");
        v.assign("y", None, "x").unwrap();
        assert!(v.check().is_err(), "declare -i y=x evaluates x");

        assert!(Values::default().assign("PS4", None, "x").is_err());
    }
}

//! Finds every command a shell string would run: walks the parse tree of
//! lists, pipelines, subshells, compound commands and function bodies, and
//! follows command substitutions, process substitutions, here-documents and
//! the strings handed to `bash -c`, `eval` and other [wrappers](super::wrappers).

use brush_parser::ast;
use brush_parser::{Parser, ParserOptions, SourceInfo};

pub use super::unreadable::{short, Unreadable};

use super::names;
use super::values::Values;
use super::words::{self, Arg, WordScan};
use super::wrappers::{self, Inner};

/// Nesting deeper than this (`bash -c "bash -c '…'"` …) is refused.
const MAX_DEPTH: usize = 12;

/// One command the shell would run, with the chain that leads to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// Its words: the command name first.
    pub words: Vec<Arg>,
    /// How it was reached (`bash -c` → `sudo` → …), for messages.
    pub via: Vec<String>,
}

impl Invocation {
    /// The command name as written.
    pub fn name(&self) -> &Arg {
        &self.words[0]
    }

    /// The command text, for messages.
    pub fn text(&self) -> String {
        self.words.iter().map(Arg::display).collect::<Vec<_>>().join(" ")
    }
}

/// Every command `text` would run, and what it does with variables (to
/// check once the commands themselves pass).
pub fn read(text: &str) -> Result<(Vec<Invocation>, Values), Unreadable> {
    let mut walker = Walker {
        out: Vec::new(),
        via: Vec::new(),
        values: Values::default(),
    };
    walker.program(text, 0)?;
    Ok((walker.out, walker.values))
}

/// Every command `text` would run, once its arithmetic is found safe.
pub fn invocations(text: &str) -> Result<Vec<Invocation>, Unreadable> {
    let (out, values) = read(text)?;
    values.check().map_err(Unreadable)?;
    Ok(out)
}

struct Walker {
    out: Vec<Invocation>,
    via: Vec<String>,
    /// Variables and arithmetic, checked once the whole command is read.
    values: Values,
}

type R = Result<(), Unreadable>;

impl Walker {
    fn program(&mut self, text: &str, depth: usize) -> R {
        if depth > MAX_DEPTH {
            return Err(Unreadable(format!(
                "commands nest more than {MAX_DEPTH} levels deep (shells inside shells)"
            )));
        }
        let mut parser = Parser::new(
            std::io::BufReader::new(text.as_bytes()),
            &ParserOptions::default(),
            &SourceInfo::default(),
        );
        let program = parser.parse_program().map_err(|e| {
            Unreadable(format!(
                "`{}` does not parse as a shell command: {e}",
                short(text)
            ))
        })?;
        for list in &program.complete_commands {
            self.list(list, depth)?;
        }
        Ok(())
    }

    fn list(&mut self, list: &ast::CompoundList, depth: usize) -> R {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first, depth)?;
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, depth)?,
                }
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, p: &ast::Pipeline, depth: usize) -> R {
        for (i, command) in p.seq.iter().enumerate() {
            self.command(command, i == 0 && p.timed.is_some(), depth)?;
        }
        Ok(())
    }

    /// `timed`: the command follows the `time` keyword, which reads a `--`
    /// before it as the end of its own options (`time -p -- rm x` runs `rm`).
    fn command(&mut self, c: &ast::Command, timed: bool, depth: usize) -> R {
        match c {
            ast::Command::Simple(s) => self.simple(s, timed, depth),
            ast::Command::Compound(cc, redirects) => {
                self.compound(cc, depth)?;
                self.redirects(redirects.as_ref(), depth)
            }
            ast::Command::Function(f) => {
                self.compound(&f.body.0, depth)?;
                self.redirects(f.body.1.as_ref(), depth)
            }
            ast::Command::ExtendedTest(e) => self.test(e, depth),
        }
    }

    fn compound(&mut self, c: &ast::CompoundCommand, depth: usize) -> R {
        use ast::CompoundCommand as C;
        match c {
            C::Arithmetic(a) => {
                self.values.arith(&a.expr.value);
                self.text(&a.expr.value, depth)
            }
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater].into_iter().flatten() {
                    self.values.arith(&e.value);
                    self.text(&e.value, depth)?;
                }
                self.list(&f.body.0, depth)
            }
            C::BraceGroup(b) => self.list(&b.0, depth),
            C::Subshell(s) => self.list(&s.0, depth),
            C::ForClause(f) => {
                self.values.opaque(&f.variable_name);
                for w in f.values.iter().flatten() {
                    self.word(&w.value, depth)?;
                }
                self.list(&f.body.0, depth)
            }
            C::CaseClause(c) => {
                self.word(&c.value.value, depth)?;
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(&p.value, depth)?;
                    }
                    if let Some(cmd) = &item.cmd {
                        self.list(cmd, depth)?;
                    }
                }
                Ok(())
            }
            C::IfClause(i) => {
                self.list(&i.condition, depth)?;
                self.list(&i.then, depth)?;
                for e in i.elses.iter().flatten() {
                    if let Some(cond) = &e.condition {
                        self.list(cond, depth)?;
                    }
                    self.list(&e.body, depth)?;
                }
                Ok(())
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.list(&w.0, depth)?;
                self.list(&w.1 .0, depth)
            }
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand, timed: bool, depth: usize) -> R {
        let mut args = Vec::new();
        let items = s
            .prefix
            .iter()
            .flat_map(|p| p.0.iter())
            .map(|i| (i, true))
            .chain(s.suffix.iter().flat_map(|p| p.0.iter()).map(|i| (i, false)));
        let mut pending_suffix = Vec::new();
        for (item, in_prefix) in items {
            use ast::CommandPrefixOrSuffixItem as I;
            match item {
                I::IoRedirect(r) => self.redirect(r, depth)?,
                I::Word(w) if in_prefix => drop(self.word(&w.value, depth)?),
                I::Word(w) => pending_suffix.push(Some(w.value.clone())),
                I::AssignmentWord(a, w) if in_prefix => {
                    self.assignment(a)?;
                    drop(self.word(&w.value, depth)?)
                }
                // `export X=$(cmd)`: an argument like any other.
                I::AssignmentWord(a, w) => {
                    self.assignment(a)?;
                    pending_suffix.push(Some(w.value.clone()))
                }
                // A process substitution is checked, and keeps its place
                // among the arguments (a path known only at run time):
                // dropped, `xargs -a <(…) rm` would read as `xargs -a rm`.
                I::ProcessSubstitution(_, sub) => {
                    self.list(&sub.0, depth)?;
                    pending_suffix.push(None);
                }
            }
        }
        if let Some(name) = &s.word_or_name {
            args.push(self.word(&name.value, depth)?);
        }
        for w in &pending_suffix {
            args.push(match w {
                Some(w) => self.word(w, depth)?,
                None => Arg::Dyn("<(…)".to_string()),
            });
        }
        if timed && args.len() > 1 && args[0].lit() == Some("--") {
            args.remove(0);
        }
        if args.is_empty() {
            return Ok(());
        }
        self.invocation(args, depth)
    }

    /// Notes an assignment word (`x=1`, `a[i]=2`, `a=(1 2)`).
    fn assignment(&mut self, a: &ast::Assignment) -> R {
        let (name, index) = match &a.name {
            ast::AssignmentName::VariableName(n) => (n, None),
            ast::AssignmentName::ArrayElementName(n, i) => (n, Some(i.as_str())),
        };
        let result = match &a.value {
            ast::AssignmentValue::Scalar(w) => self.values.assign(name, index, &w.value),
            ast::AssignmentValue::Array(items) => items.iter().try_for_each(|(i, w)| {
                self.values.assign(
                    name,
                    i.as_ref().map(|i| i.value.trim_matches(['[', ']'])),
                    &w.value,
                )
            }),
        };
        result.map_err(Unreadable)
    }

    /// Records a command and follows what it runs in turn.
    fn invocation(&mut self, words: Vec<Arg>, depth: usize) -> R {
        names::operands(&words, &mut self.values).map_err(Unreadable)?;
        let invocation = Invocation {
            words,
            via: self.via.clone(),
        };
        let inner = wrappers::inner(&invocation.words);
        let label = invocation.name().display().to_string();
        self.out.push(invocation);
        for found in inner {
            self.via.push(label.clone());
            let result = match found {
                Inner::Command(words) => self.invocation(words, depth + 1),
                Inner::Script(text) => self.program(&text, depth + 1),
                Inner::Unknowable(why) => Err(Unreadable(why)),
            };
            self.via.pop();
            result?;
        }
        Ok(())
    }

    fn redirects(&mut self, list: Option<&ast::RedirectList>, depth: usize) -> R {
        for r in list.iter().flat_map(|l| l.0.iter()) {
            self.redirect(r, depth)?;
        }
        Ok(())
    }

    fn redirect(&mut self, r: &ast::IoRedirect, depth: usize) -> R {
        match r {
            ast::IoRedirect::File(_, _, target) => match target {
                ast::IoFileRedirectTarget::Filename(w) | ast::IoFileRedirectTarget::Duplicate(w) => {
                    self.word(&w.value, depth).map(|_| ())
                }
                ast::IoFileRedirectTarget::Fd(_) => Ok(()),
                ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => self.list(&sub.0, depth),
            },
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    self.text(&doc.doc.value, depth)
                } else {
                    Ok(())
                }
            }
            ast::IoRedirect::HereString(_, w) | ast::IoRedirect::OutputAndError(w, _) => {
                self.word(&w.value, depth).map(|_| ())
            }
        }
    }

    fn test(&mut self, e: &ast::ExtendedTestExpr, depth: usize) -> R {
        use ast::ExtendedTestExpr as E;
        match e {
            E::And(a, b) | E::Or(a, b) => {
                self.test(a, depth)?;
                self.test(b, depth)
            }
            E::Not(a) | E::Parenthesized(a) => self.test(a, depth),
            E::UnaryTest(op, w) => {
                let operand = self.word(&w.value, depth)?;
                // `[[ -v NAME ]]` and `[[ -R NAME ]]` read NAME as a variable
                // name, whose subscript is evaluated (`a[$(…)]` runs).
                if matches!(
                    op,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                ) {
                    self.values.name_only("[[", &operand).map_err(Unreadable)?;
                }
                Ok(())
            }
            E::BinaryTest(op, a, b) => {
                use ast::BinaryPredicate as B;
                if matches!(
                    op,
                    B::ArithmeticEqualTo
                        | B::ArithmeticNotEqualTo
                        | B::ArithmeticLessThan
                        | B::ArithmeticLessThanOrEqualTo
                        | B::ArithmeticGreaterThan
                        | B::ArithmeticGreaterThanOrEqualTo
                ) {
                    self.values.arith(&a.value);
                    self.values.arith(&b.value);
                }
                self.word(&a.value, depth)?;
                self.word(&b.value, depth).map(|_| ())
            }
        }
    }

    /// Reads a word and checks the commands substituted into it.
    fn word(&mut self, raw: &str, depth: usize) -> Result<Arg, Unreadable> {
        let mut scan = WordScan::default();
        let arg = words::read(raw, &mut scan)?;
        self.substitutions(scan, depth)?;
        Ok(arg)
    }

    /// Checks free text (arithmetic, here-documents) for substitutions.
    fn text(&mut self, text: &str, depth: usize) -> R {
        let mut scan = WordScan::default();
        words::scan_text(text, &mut scan)?;
        self.substitutions(scan, depth)
    }

    fn substitutions(&mut self, scan: WordScan, depth: usize) -> R {
        if let Some(why) = scan.refused {
            return Err(Unreadable(why));
        }
        for e in &scan.arith {
            self.values.arith(e);
        }
        for n in &scan.assigned {
            self.values.opaque(n);
        }
        for sub in scan.substitutions {
            self.via.push("$(…)".to_string());
            let result = self.program(&sub, depth + 1);
            self.via.pop();
            result?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        invocations(text)
            .expect("parses")
            .iter()
            .map(|i| i.name().display().to_string())
            .collect()
    }

    #[test]
    fn lists_pipelines_and_subshells() {
        assert_eq!(
            names("a && b || c; d\ne | f & g"),
            ["a", "b", "c", "d", "e", "f", "g"]
        );
        assert_eq!(names("(a; b) | { c; }"), ["a", "b", "c"]);
        assert_eq!(
            names("if a; then b; elif c; then d; else e; fi"),
            ["a", "b", "c", "d", "e"]
        );
        assert_eq!(
            names("for x in 1 2; do a; done; while b; do c; done"),
            ["a", "b", "c"]
        );
        assert_eq!(names("case x in y) a;; esac"), ["a"]);
        assert_eq!(names("f() { a; }; f"), ["a", "f"]);
    }

    #[test]
    fn substitutions_everywhere() {
        assert_eq!(names("echo $(a) `b` \"$(c)\""), ["a", "b", "c", "echo"]);
        assert_eq!(names("x=$(a) y"), ["a", "y"]);
        assert_eq!(names("x=$(a)"), ["a"]);
        assert_eq!(names("cat < <(a) > >(b)"), ["a", "b", "cat"]);
        assert_eq!(names("cat <<EOF\n$(a) it's\nEOF\n"), ["a", "cat"]);
        assert_eq!(names("cat <<'EOF'\n$(a)\nEOF\n"), ["cat"]);
        assert_eq!(names("[[ $(a) == x ]]"), ["a"]);
        assert_eq!(names("n=2; echo $(( n + 1 ))"), ["echo"]);
        assert!(
            invocations("echo $(( $(a) + 1 ))").is_err(),
            "arithmetic on a command's output"
        );
        assert_eq!(names("export X=$(a)"), ["a", "export"]);
    }

    #[test]
    fn unparsable_is_an_error() {
        assert!(invocations("echo 'unterminated").is_err());
        assert!(invocations("if then fi (").is_err());
    }
}
